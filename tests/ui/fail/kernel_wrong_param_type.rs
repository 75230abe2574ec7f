// A schema `int` is passed as `i64`, not `i32`.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = "triu")]
fn triu_kernel(x: &Tensor, diagonal: i32) -> Result<Tensor> {
    let _ = (x, diagonal);
    todo!()
}

fn main() {}
