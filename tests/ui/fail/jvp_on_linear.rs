// `sum` is linear (`linear = true` in its table): its jvp is `sum` applied to
// the tangent, derived from the table, so a written one would never run.
use batchrules::{jvp, ops, Result, Tensor};

#[jvp(op = "sum")]
fn sum_jvp(
    _x: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    _result: &Tensor,
    self_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    self_tangent.map(|t| ops::sum(t, dim, keepdim)).transpose()
}

fn main() {}
