// `sum(Tensor self, int? dim=None, bool keepdim=False)`: `int?` is `Option<i64>`.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = "sum")]
fn sum_kernel(x: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    let _ = (x, dim, keepdim);
    todo!()
}

fn main() {}
