// An op returning `Tensor[]` passes its vjp all its outputs and all their
// cotangents as slices: a cotangent written `&Tensor` does not fit.
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
fn chunks_vjp(x: &Tensor, count: i64, result: &[Tensor], grad: &Tensor) -> Result<Option<Tensor>> {
    let _ = (x, count, result, grad);
    todo!()
}

fn main() {}
