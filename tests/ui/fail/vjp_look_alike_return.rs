// An alias standing for another type: `Gradient` looks like the expected
// `Option<Tensor>` by name, but it is an `Option` of a different `Tensor`, so
// the compiler (not the spelling) rejects the vjp's return type.
use batchrules::{vjp, Result, Tensor};

mod fake {
    pub struct Tensor;
}

type Gradient = Option<fake::Tensor>;

#[vjp(op = "exp")]
fn exp_vjp(x: &Tensor, result: &Tensor, grad: &Tensor) -> Result<Gradient> {
    let _ = (x, result, grad);
    todo!()
}

fn main() {}
