use batchrules::{Tensor, TensorTree};

#[derive(TensorTree)]
struct Layer {
    w: Tensor,
    // A size, not a tensor: needs `#[tree(skip)]`.
    width: usize,
}

fn main() {}
