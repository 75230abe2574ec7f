use batchrules::{Tensor, TensorTree};

// Every mistake is reported in one build.
#[derive(TensorTree)]
#[tree(skip, crate = "batchrules", depth = 2)]
struct Layer {
    #[tree(crate = batchrules)]
    w: Tensor,
    #[tree(skip = true)]
    width: usize,
    #[tree(flatten)]
    b: Tensor,
}

fn main() {}
