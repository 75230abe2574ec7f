// `triu(Tensor self, int diagonal=0)`: the kernel takes both arguments, even
// though `diagonal` has a default.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = "triu")]
fn triu_kernel(x: &Tensor) -> Result<Tensor> {
    let _ = x;
    todo!()
}

fn main() {}
