// An alias standing for another type: `TangentOut` looks like the expected
// `Option<Tensor>` by name, but it is an `Option` of a different `Tensor`, so
// the compiler (not the spelling) rejects the jvp's return type.
use batchrules::{jvp, Result, Tensor};

mod fake {
    pub struct Tensor;
}

type TangentOut = Option<fake::Tensor>;

#[jvp(op = "exp")]
fn exp_jvp(x: &Tensor, result: &Tensor, self_tangent: Option<&Tensor>) -> Result<TangentOut> {
    let _ = (x, result, self_tangent);
    todo!()
}

fn main() {}
