// An op returning `Tensor[]` is not differentiable yet.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "chunks(Tensor self, int count) -> Tensor[]"
kind = "primitive"
"#
    );
}

use batchrules::{vjp, Result, Tensor};

#[vjp(op = "chunks", table = ops)]
fn chunks_vjp(x: &Tensor, count: i64, result: &[Tensor], grad: &[Tensor]) -> Result<Option<Tensor>> {
    let _ = (x, count, result, grad);
    todo!()
}

fn main() {}
