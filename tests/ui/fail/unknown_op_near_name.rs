// A typo of `softmax`: the message suggests the declared name.
use batchrules::{decompose, Result, Tensor};

#[decompose(op = "sofmax")]
fn softmax_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

fn main() {}
