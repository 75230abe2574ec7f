// `mul` has two tensor arguments, so its vjp returns two gradients.
use batchrules::{vjp, Result, Tensor};

#[vjp(op = "mul")]
fn mul_vjp(x: &Tensor, other: &Tensor, result: &Tensor, grad: &Tensor) -> Result<Tensor> {
    let _ = (x, other, result, grad);
    todo!()
}

fn main() {}
