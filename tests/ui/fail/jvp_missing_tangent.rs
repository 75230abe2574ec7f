// A jvp takes one tangent per tensor argument: `mul` has two, and this jvp
// stops after the first.
use batchrules::{jvp, Result, Tensor};

#[jvp(op = "mul")]
fn mul_jvp(
    x: &Tensor,
    other: &Tensor,
    result: &Tensor,
    self_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let _ = (x, other, result, self_tangent);
    todo!()
}

fn main() {}
