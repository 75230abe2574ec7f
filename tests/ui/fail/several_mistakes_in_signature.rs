// Every mismatch of one function is reported, not just the first.
use batchrules::{kernel, Tensor};

#[kernel(op = "sum")]
fn sum_kernel(x: Tensor, dim: Option<i32>, keepdim: bool) -> Tensor {
    let _ = (dim, keepdim);
    x
}

fn main() {}
