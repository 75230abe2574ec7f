use batchrules::{Tensor, TensorTree};

struct Config {
    width: usize,
}

#[derive(TensorTree)]
struct Layer {
    w: Tensor,
    #[tree(skip)]
    config: Config,
}

fn main() {}
