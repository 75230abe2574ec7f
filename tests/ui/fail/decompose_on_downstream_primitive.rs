// `cumsum` is a primitive op of the downstream crate's table.
use batchrules::{decompose, Result, Tensor};

#[decompose(op = "cumsum", table = downstream_ops::ops)]
fn cumsum_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

fn main() {}
