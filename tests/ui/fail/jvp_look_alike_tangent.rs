// An alias standing for another type: `Tangent` looks like the expected
// `Option<&Tensor>` by name, but it is an `Option` of a different `Tensor`, so
// the compiler (not the spelling) rejects the jvp's tangent parameter.
use batchrules::{jvp, Result, Tensor};

mod fake {
    pub struct Tensor;
}

type Tangent<'a> = Option<&'a fake::Tensor>;

#[jvp(op = "exp")]
fn exp_jvp(x: &Tensor, result: &Tensor, self_tangent: Tangent<'_>) -> Result<Option<Tensor>> {
    let _ = (x, result, self_tangent);
    todo!()
}

fn main() {}
