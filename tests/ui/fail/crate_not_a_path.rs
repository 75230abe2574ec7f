// `crate` is the runtime crate's path, as Cargo.toml names the dependency.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = "neg", crate = "br")]
fn neg_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn main() {}
