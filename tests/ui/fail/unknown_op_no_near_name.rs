// No declared op is close to `frobnicate`.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = "frobnicate")]
fn frobnicate_kernel(x: &Tensor) -> Result<Tensor> {
    let _ = x;
    todo!()
}

fn main() {}
