// `vmap` only applies to `#[decompose]`.
use batchrules::{batching_rule, Result, Tensor};

#[batching_rule(op = "neg", vmap = "fallback")]
fn neg_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim);
    todo!()
}

fn main() {}
