// A jvp takes the op's arguments, then its output, then the tangents; this
// one stops after the arguments, as a kernel would.
use batchrules::{jvp, Result, Tensor};

#[jvp(op = "exp")]
fn exp_jvp(x: &Tensor) -> Result<Option<Tensor>> {
    let _ = x;
    todo!()
}

fn main() {}
