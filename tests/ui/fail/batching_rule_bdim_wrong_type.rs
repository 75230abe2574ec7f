// A batch dim is `Option<usize>` (`None` when the tensor is not batched).
use batchrules::{batching_rule, Result, Tensor};

#[batching_rule(op = "triu")]
fn triu_rule(x: &Tensor, bdim: usize, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim, diagonal);
    todo!()
}

fn main() {}
