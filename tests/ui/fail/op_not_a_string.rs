// The op is named by a string literal, not an identifier.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = neg)]
fn neg_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn main() {}
