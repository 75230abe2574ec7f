// A kernel returns `Result<Tensor>`.
use batchrules::{kernel, Tensor};

#[kernel(op = "neg")]
fn neg_kernel(x: &Tensor) -> Tensor {
    x.clone()
}

fn main() {}
