//! Arithmetic operators on tensors: `+ - * /` between tensors (owned or
//! borrowed) and with scalars, and unary `-`. Each returns
//! `Result<Tensor>` (candle's convention), since the operands may not
//! broadcast: `((&x * &w)? + &b)?`.
//!
//! A tensor taken by value lends its buffer to the result when nobody else
//! holds it (through [`owned`]); a borrowed one is left alone.
//! A scalar (`f64` or `i64`, so a literal `2.0` or `2` needs no suffix)
//! takes the tensor's dtype, as a Python number does in PyTorch: an `f64`
//! with an f32 tensor computes in f32. A float scalar with an integer
//! or bool tensor gives f32 (PyTorch's default float type), and an integer
//! scalar with a bool tensor gives i64.
//!
//! ```
//! use batchrules::{Tensor, Result};
//! use ndarray::array;
//!
//! let x = Tensor::from(array![1.0f32, 2.0, 3.0]);
//! let w = Tensor::from(array![0.5f32, 0.5, 0.5]);
//! let y = ((&x * &w)? + 1.0)?;
//! assert_eq!(y.to_array::<f32>()?.as_slice(), Some(&[1.5, 2.0, 2.5][..]));
//! let z = (-(2.0 * &y)?)?;
//! assert_eq!(z.dtype(), batchrules::DType::F32);
//!
//! // Shapes that do not broadcast are an error naming the op:
//! let bad = Tensor::from(array![1.0f32, 2.0]);
//! assert!((&x + &bad).unwrap_err().to_string().starts_with("add"));
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! In the `api` layer (`runtime/src/api/`). It may use the `core`, `table`,
//! `dispatch`, `transforms` and `library` layers; in its own layer, `io`,
//! `testing`, `coverage` and `owned`. `tests/suite/layers.rs` enforces it.

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::{ops, owned, DType, Result, Tensor};

/// `value` as a 0-d tensor to combine with `like`.
fn float_scalar(like: &Tensor, value: f64) -> Tensor {
    match like.dtype() {
        DType::F64 => Tensor::scalar(value),
        _ => Tensor::scalar(value as f32),
    }
}

/// `value` as a 0-d tensor to combine with `like`.
fn int_scalar(like: &Tensor, value: i64) -> Tensor {
    match like.dtype() {
        DType::F64 => Tensor::scalar(value as f64),
        DType::F32 => Tensor::scalar(value as f32),
        _ => Tensor::scalar(value),
    }
}

macro_rules! binary_operator {
    ($Trait:ident, $method:ident) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                ops::$method(self, rhs)
            }
        }
        impl $Trait<Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                ops::$method(self, &rhs)
            }
        }
        impl $Trait<&Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                owned::$method(self, rhs)
            }
        }
        impl $Trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                owned::$method(self, &rhs)
            }
        }
        binary_operator!(@scalar $Trait, $method, f64, float_scalar, |v| v);
        binary_operator!(@scalar $Trait, $method, i64, int_scalar, |v| v);
    };
    (@scalar $Trait:ident, $method:ident, $scalar:ty, $make:ident, $widen:expr) => {
        impl $Trait<$scalar> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: $scalar) -> Result<Tensor> {
                ops::$method(self, &$make(self, $widen(rhs)))
            }
        }
        impl $Trait<$scalar> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: $scalar) -> Result<Tensor> {
                let rhs = $make(&self, $widen(rhs));
                owned::$method(self, &rhs)
            }
        }
        impl $Trait<&Tensor> for $scalar {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                ops::$method(&$make(rhs, $widen(self)), rhs)
            }
        }
        impl $Trait<Tensor> for $scalar {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                ops::$method(&$make(&rhs, $widen(self)), &rhs)
            }
        }
    };
}

binary_operator!(Add, add);
binary_operator!(Sub, sub);
binary_operator!(Mul, mul);
binary_operator!(Div, div);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        ops::neg(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        owned::neg(self)
    }
}
