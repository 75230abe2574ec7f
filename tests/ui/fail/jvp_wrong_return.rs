// A jvp returns the tangent of each output, `None` when it is zero: an
// `Option<Tensor>`, not the bare `Tensor` a kernel returns.
use batchrules::{jvp, Result, Tensor};

#[jvp(op = "exp")]
fn exp_jvp(x: &Tensor, result: &Tensor, self_tangent: Option<&Tensor>) -> Result<Tensor> {
    let _ = (x, result, self_tangent);
    todo!()
}

fn main() {}
