// A type named `Tensor` that is not `batchrules::Tensor`: the spelling fits
// the schema, the type does not.
use batchrules::{kernel, Result};

mod fake {
    pub struct Tensor;
}

#[kernel(op = "neg")]
fn neg_kernel(x: &fake::Tensor) -> Result<batchrules::Tensor> {
    let _ = x;
    todo!()
}

fn main() {}
