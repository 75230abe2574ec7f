// An associated function inside an `impl` block (no `self`): the registration
// cannot name it, so it must move to module level.
use batchrules::{kernel, Result, Tensor};

struct Kernels;

impl Kernels {
    #[kernel(op = "neg")]
    fn neg_kernel(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

fn main() {
    let _ = Kernels::neg_kernel;
}
