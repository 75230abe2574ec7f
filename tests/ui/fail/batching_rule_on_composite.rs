// `softmax` is a composite op of the built-in table: it is decomposed before
// vmap sees it, so a batching rule for it would never run.
use batchrules::{batching_rule, Result, Tensor};

#[batching_rule(op = "softmax")]
fn softmax_rule(x: &Tensor, bdim: Option<usize>, dim: i64) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim, dim);
    todo!()
}

fn main() {}
