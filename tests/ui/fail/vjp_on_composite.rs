// `softmax` is a composite op of the built-in table: grad differentiates it
// through its decomposition, so a vjp for it would never run.
use batchrules::{vjp, Result, Tensor};

#[vjp(op = "softmax")]
fn softmax_vjp(x: &Tensor, dim: i64, result: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
    let _ = (x, dim, result, grad);
    todo!()
}

fn main() {}
