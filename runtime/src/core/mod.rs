//! The core layer: tensors, element types, the erased argument convention,
//! errors, and the dense helpers kernels and metas share (dim wrapping,
//! broadcasting, casting, size checks), and structures of tensors (trees).
//! It imports no other layer and names no op. It names the transforms only
//! in [`Error`](crate::Error): the variants for misusing them (`Vmap`, `InVmap`,
//! `Fallback`, `Randomness`) live here so that every layer can report them;
//! the transforms' types live in their own layers (the order is in the
//! crate's root module and enforced by `tests/suite/layers.rs`).
//!
//! In the `core` layer (`runtime/src/core/`). It may use nothing below it.
//! `tests/suite/layers.rs` enforces it.

pub(crate) mod alloc;
pub(crate) mod broadcast;
pub(crate) mod buffers;
pub(crate) mod cast;
#[cfg(feature = "ndarray-0-16")]
mod compat;
pub(crate) mod convert;
pub(crate) mod dtype;
pub(crate) mod error;
pub(crate) mod meta_rules;
pub(crate) mod reduction;
pub(crate) mod rng;
pub(crate) mod simd;
#[cfg(feature = "rayon")]
pub(crate) mod spin;
pub(crate) mod tensor;
pub(crate) mod threads;
pub(crate) mod tree;
#[cfg(feature = "unit-tests")]
pub(crate) mod unit_test;
pub(crate) mod value;
pub(crate) mod vmath;
pub(crate) mod wrap_dim;
