// A batching rule takes each tensor followed by its batch dim.
use batchrules::{batching_rule, Result, Tensor};

#[batching_rule(op = "triu")]
fn triu_rule(x: &Tensor, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, diagonal);
    todo!()
}

fn main() {}
