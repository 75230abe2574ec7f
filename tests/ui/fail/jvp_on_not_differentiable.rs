// `argmax` returns indices: its table entry says `differentiable = false`, so
// its output has no tangent and jvp never asks for its jvp.
use batchrules::{jvp, Result, Tensor};

#[jvp(op = "argmax")]
fn argmax_jvp(
    x: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    result: &Tensor,
    self_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let _ = (x, dim, keepdim, result, self_tangent);
    todo!()
}

fn main() {}
