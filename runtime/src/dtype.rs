//! Element types.

use std::fmt;

/// The element type of a tensor. Promotion follows PyTorch:
/// `Bool < I64 < F32 < F64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `bool`
    Bool,
    /// `i64`
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl DType {
    /// The type both operands of a binary op are converted to.
    pub fn promote(self, other: DType) -> DType {
        self.max(other)
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::Bool => "bool",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        })
    }
}
