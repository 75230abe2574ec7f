//! The built-in op library, one file per op family, each named after its op
//! table (`ops/<family>.toml`). Every op is registered with the same attributes
//! a downstream crate uses. `gemm.rs` is no op family: it is the dense
//! matrix-product engine under `linalg.rs`'s products. `conv_transpose.rs`
//! holds the transposed convolutions of `ops/conv.toml`, apart from
//! `conv.rs`'s sliding-block primitives and convolutions.
//!
//! In the `library` layer (`runtime/src/library/`). It may use the `core`,
//! `table`, `dispatch` and `transforms` layers. `tests/suite/layers.rs`
//! enforces it.

mod activations;
mod attention;
pub(crate) mod binary;
mod composites;
pub(crate) mod conv;
mod conv_transpose;
mod derivative;
mod dims;
mod einsum;
mod embedding;
mod factories;
pub(crate) mod gemm;
mod indexing;
mod join;
pub(crate) mod jvp;
mod linalg;
mod losses;
mod manipulation;
mod normalization;
pub(crate) mod pooling;
mod random;
mod reduce;
mod shape;
mod sorting;
pub(crate) mod unary;
mod vjp;
mod window;

/// A 0-d tensor holding `value` in the dtype of `x`, so it does not promote
/// `x` (PyTorch computes with the arguments converted to the tensor's
/// dtype): a constant for a decomposition to combine with `x`.
fn like(x: &crate::Tensor, value: f64) -> crate::Tensor {
    crate::core::cast::scalar_like(&crate::TensorMeta::of(x), value)
}
