// `eye` takes no tensors (a factory its table forgot to mark
// `differentiable = false`): no gradient can flow back to anything.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "eye(int n) -> Tensor"
kind = "primitive"
"#
    );
}

use batchrules::{vjp, Result, Tensor};

#[vjp(op = "eye", table = ops)]
fn eye_vjp(n: i64, result: &Tensor, grad: &Tensor) -> Result<()> {
    let _ = (n, result, grad);
    todo!()
}

fn main() {}
