use batchrules::{Tensor, TensorTree};

// Every misuse of `rename` is reported in one build, at the attribute.
#[derive(TensorTree)]
#[tree(rename = "model")]
struct Linear {
    // Saved as `b`, the name of the next field.
    #[tree(rename = "b")]
    w: Tensor,
    b: Tensor,
    #[tree(skip, rename = "width")]
    width: usize,
    #[tree(rename = weight)]
    x: Tensor,
    #[tree(rename = "")]
    y: Tensor,
    #[tree(rename)]
    z: Tensor,
    #[tree(rename = "u", rename = "v")]
    u: Tensor,
}

// Two renames to one name.
#[derive(TensorTree)]
struct Pair(#[tree(rename = "w")] Tensor, #[tree(rename = "w")] Tensor);

fn main() {}
