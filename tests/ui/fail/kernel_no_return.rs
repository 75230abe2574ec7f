// A kernel that returns nothing.
use batchrules::{kernel, Tensor};

#[kernel(op = "neg")]
fn neg_kernel(x: &Tensor) {
    let _ = x;
}

fn main() {}
