// The cotangent of `mul`'s output is a `&Tensor`, like the output itself.
use batchrules::{vjp, Result, Tensor};

#[vjp(op = "mul")]
fn mul_vjp(
    x: &Tensor,
    other: &Tensor,
    result: &Tensor,
    grad: Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let _ = (x, other, result, grad);
    todo!()
}

fn main() {}
