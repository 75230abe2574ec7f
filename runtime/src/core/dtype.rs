//! Element types, and the one macro that dispatches on them.

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

/// Dispatches on an element type; the one macro for this in the crate.
///
/// * `each_dtype!(data, a => expr)` evaluates `expr` with `a` bound to the
///   array a [`Data`](crate::Data) holds, whatever its element type; the
///   expression must have the same type in every arm.
/// * `each_dtype!(type dtype, T => expr)` evaluates `expr` with the type alias
///   `T` set to the Rust element type of the [`DType`] `dtype`
///   (`bool`, `i64`, `f32` or `f64`).
///
/// ```
/// use batchrules::{each_dtype, DType, Tensor};
///
/// let t = Tensor::from(ndarray::array![1.0f32, 2.0].into_dyn());
/// let n = each_dtype!(t.data()?, a => a.len());
/// assert_eq!(n, 2);
/// let zero = each_dtype!(type DType::I64, T => Tensor::scalar(T::default()));
/// assert_eq!(zero.dtype(), DType::I64);
/// # Ok::<(), batchrules::Error>(())
/// ```
#[macro_export]
macro_rules! each_dtype {
    (type $dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Bool => {
                #[allow(dead_code)]
                type $t = bool;
                $body
            }
            $crate::DType::I64 => {
                #[allow(dead_code)]
                type $t = i64;
                $body
            }
            $crate::DType::F32 => {
                #[allow(dead_code)]
                type $t = f32;
                $body
            }
            $crate::DType::F64 => {
                #[allow(dead_code)]
                type $t = f64;
                $body
            }
        }
    };
    ($data:expr, $a:ident => $body:expr) => {
        match $data {
            $crate::rules::Data::Bool($a) => $body,
            $crate::rules::Data::I64($a) => $body,
            $crate::rules::Data::F32($a) => $body,
            $crate::rules::Data::F64($a) => $body,
        }
    };
}
