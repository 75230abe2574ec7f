// `sum_of_squares` is a composite op of the downstream crate's own table.
use batchrules::{batching_rule, Result, Tensor};

#[batching_rule(op = "sum_of_squares", table = downstream_ops::ops)]
fn sum_of_squares_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim, dim);
    todo!()
}

fn main() {}
