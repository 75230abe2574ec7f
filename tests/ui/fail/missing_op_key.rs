use batchrules::{kernel, Result, Tensor};

#[kernel]
fn neg_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn main() {}
