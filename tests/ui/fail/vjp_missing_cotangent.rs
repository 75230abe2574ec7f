// A vjp takes the op's arguments, then its output, then the output's
// cotangent; this one stops after the arguments.
use batchrules::{vjp, Result, Tensor};

#[vjp(op = "exp")]
fn exp_vjp(x: &Tensor) -> Result<Option<Tensor>> {
    let _ = x;
    todo!()
}

fn main() {}
