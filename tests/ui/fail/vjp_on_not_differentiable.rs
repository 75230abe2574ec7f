// `argmax` returns indices: its table entry says `differentiable = false`, so
// grad never asks for its vjp.
use batchrules::{vjp, Result, Tensor};

#[vjp(op = "argmax")]
fn argmax_vjp(
    x: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    result: &Tensor,
    grad: &Tensor,
) -> Result<Option<Tensor>> {
    let _ = (x, dim, keepdim, result, grad);
    todo!()
}

fn main() {}
