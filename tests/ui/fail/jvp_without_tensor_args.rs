// `eye` takes no tensors (a factory its table forgot to mark
// `differentiable = false`): there is no tangent to push forward.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "eye(int n) -> Tensor"
kind = "primitive"
"#
    );
}

use batchrules::{jvp, Result, Tensor};

#[jvp(op = "eye", table = ops)]
fn eye_jvp(n: i64, result: &Tensor) -> Result<Option<Tensor>> {
    let _ = (n, result);
    todo!()
}

fn main() {}
