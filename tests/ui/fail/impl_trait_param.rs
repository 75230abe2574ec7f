// `impl Trait` in parameter position makes the function generic.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = "neg")]
fn neg_kernel(x: impl AsRef<Tensor>) -> Result<Tensor> {
    Ok(x.as_ref().clone())
}

fn main() {}
