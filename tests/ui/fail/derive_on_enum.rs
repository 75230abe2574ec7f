use batchrules::{Tensor, TensorTree};

#[derive(TensorTree)]
enum Activation {
    Relu,
    Scaled(Tensor),
}

fn main() {}
