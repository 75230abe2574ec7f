//! The core layer: tensors, element types, the erased argument convention,
//! errors, and the dense helpers kernels and metas share (dim wrapping,
//! broadcasting, casting, size checks), and structures of tensors (trees).
//! It knows no transform and no op.

pub(crate) mod alloc;
pub(crate) mod broadcast;
pub(crate) mod buffers;
pub(crate) mod cast;
#[cfg(feature = "ndarray-0-16")]
mod compat;
pub(crate) mod convert;
pub(crate) mod dims;
pub(crate) mod dtype;
pub(crate) mod error;
pub(crate) mod meta_rules;
pub(crate) mod random;
pub(crate) mod reduction;
pub(crate) mod simd;
#[cfg(feature = "rayon")]
pub(crate) mod spin;
pub(crate) mod tensor;
pub(crate) mod tree;
pub(crate) mod value;
