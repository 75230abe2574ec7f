// Arguments are `key = value`.
use batchrules::{kernel, Result, Tensor};

#[kernel("neg")]
fn neg_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn main() {}
