// A batching rule returns each output together with its batch dim.
use batchrules::{batching_rule, Result, Tensor};

#[batching_rule(op = "neg")]
fn neg_rule(x: &Tensor, bdim: Option<usize>) -> Result<Tensor> {
    let _ = (x, bdim);
    todo!()
}

fn main() {}
