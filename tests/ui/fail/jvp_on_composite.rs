// `softmax` is a composite op: jvp differentiates it through its
// decomposition, so a jvp registered for it would never run.
use batchrules::{jvp, Result, Tensor};

#[jvp(op = "softmax")]
fn softmax_jvp(
    x: &Tensor,
    dim: i64,
    result: &Tensor,
    self_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let _ = (x, dim, result, self_tangent);
    todo!()
}

fn main() {}
