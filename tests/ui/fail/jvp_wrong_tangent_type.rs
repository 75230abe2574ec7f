// A tangent may be zero, passed as `None`: it is an `Option<&Tensor>`, not a
// `&Tensor` like the op's argument.
use batchrules::{jvp, Result, Tensor};

#[jvp(op = "mul")]
fn mul_jvp(
    x: &Tensor,
    other: &Tensor,
    result: &Tensor,
    self_tangent: &Tensor,
    other_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let _ = (x, other, result, self_tangent, other_tangent);
    todo!()
}

fn main() {}
