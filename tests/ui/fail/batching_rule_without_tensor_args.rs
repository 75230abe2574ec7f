// `zeros(int[] size, ScalarType dtype=f32)` takes no tensor: nothing it is
// called with carries a batch dim, so vmap never batches it.
use batchrules::{batching_rule, DType, Result, Tensor};

#[batching_rule(op = "zeros")]
fn zeros_rule(size: &[i64], dtype: DType) -> Result<(Tensor, Option<usize>)> {
    let _ = (size, dtype);
    todo!()
}

fn main() {}
