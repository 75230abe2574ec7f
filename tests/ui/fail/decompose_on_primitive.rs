// `triu` is primitive: it runs its kernel, never a decomposition.
use batchrules::{decompose, Result, Tensor};

#[decompose(op = "triu")]
fn triu_decomposition(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    let _ = (x, diagonal);
    todo!()
}

fn main() {}
