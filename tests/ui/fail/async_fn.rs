use batchrules::{kernel, Result, Tensor};

#[kernel(op = "neg")]
async fn neg_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn main() {}
