//! Conversions from tensors to `ndarray` arrays of a fixed dimension and to
//! plain values, a numpy-like `Display`, and `allclose`.

use std::fmt;

use ndarray::{Array, Array1, Array2, Dimension, IxDyn};

use crate::core::broadcast::broadcast_or_err;
use crate::core::cast::cast;
use crate::{Data, Element, Error, Result, Tensor};

impl Tensor {
    /// Copies the data out as an `ndarray` array of element type `T` and
    /// dimension `D` (`Ix1`, `Ix2`, ...).
    ///
    /// ```
    /// use batchrules::Tensor;
    /// use ndarray::{array, Ix2};
    ///
    /// let t = Tensor::from(array![[1.0f32, 2.0], [3.0, 4.0]]);
    /// let a = t.to_array_dim::<f32, Ix2>()?;
    /// assert_eq!(a, array![[1.0f32, 2.0], [3.0, 4.0]]);
    /// // The wrong rank is an error naming the call:
    /// let err = t.to_array_dim::<f32, ndarray::Ix1>().unwrap_err();
    /// assert!(err.to_string().starts_with("Tensor::to_array_dim"));
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    ///
    /// Errors for a batched tensor, another element type, or another rank.
    pub fn to_array_dim<T: Element, D: Dimension>(&self) -> Result<Array<T, D>> {
        self.fixed("Tensor::to_array_dim")
    }

    /// [`to_array_dim`](Self::to_array_dim) for a 1-d tensor.
    pub fn to_array1<T: Element>(&self) -> Result<Array1<T>> {
        self.fixed("Tensor::to_array1")
    }

    /// [`to_array_dim`](Self::to_array_dim) for a 2-d tensor.
    pub fn to_array2<T: Element>(&self) -> Result<Array2<T>> {
        self.fixed("Tensor::to_array2")
    }

    /// The elements in row-major order.
    ///
    /// ```
    /// use batchrules::Tensor;
    ///
    /// let t = Tensor::from(ndarray::array![[1i64, 2], [3, 4]]);
    /// assert_eq!(t.to_vec::<i64>()?, [1, 2, 3, 4]);
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        Ok(self
            .dense_as::<T>("Tensor::to_vec")?
            .iter()
            .copied()
            .collect())
    }

    /// The value of a tensor with one element (a loss, a norm), of any shape
    /// (`[]`, `[1]`, `[1, 1]`).
    ///
    /// ```
    /// use batchrules::{ops, Tensor};
    ///
    /// let x = Tensor::from(ndarray::array![1.0f64, 2.0, 3.0]);
    /// assert_eq!(ops::sum(&x, None, false)?.to_scalar::<f64>()?, 6.0);
    /// assert!(x.to_scalar::<f64>().is_err());
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    pub fn to_scalar<T: Element>(&self) -> Result<T> {
        const WHAT: &str = "Tensor::to_scalar";
        let a = self.dense_as::<T>(WHAT)?;
        match a.len() {
            1 => Ok(a.iter().copied().next().unwrap_or_default()),
            n => Err(Error::Tensor(format!(
                "{WHAT}: the tensor has shape {:?} ({n} elements); it needs exactly one",
                self.shape()
            ))),
        }
    }

    fn fixed<T: Element, D: Dimension>(&self, what: &str) -> Result<Array<T, D>> {
        let a = self.dense_as::<T>(what)?;
        a.to_owned().into_dimensionality::<D>().map_err(|_| {
            Error::Tensor(format!(
                "{what}: the tensor has {} dims (shape {:?}), the array type {}",
                self.ndim(),
                self.shape(),
                match D::NDIM {
                    Some(n) => format!("{n}"),
                    None => "any number".to_string(),
                }
            ))
        })
    }

    /// Whether every element of `self` is within `atol + rtol * |other|` of
    /// the matching element of `other`, as `torch.allclose` (whose defaults
    /// are `rtol = 1e-5`, `atol = 1e-8`): the shapes broadcast, NaN is close
    /// to nothing, an infinity only to the same infinity. Two integer or bool
    /// tensors compare exactly (`i64::MAX` is not close to `i64::MAX - 1`
    /// with zero tolerances); any other pair compares through f64.
    ///
    /// ```
    /// use batchrules::Tensor;
    ///
    /// let a = Tensor::from(ndarray::array![1.0f32, 2.0]);
    /// let b = Tensor::from(ndarray::array![1.0f64, 2.000001]);
    /// assert!(a.allclose(&b, 1e-5, 1e-8)?);
    /// assert!(!a.allclose(&b, 0.0, 0.0)?);
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    ///
    /// Errors for shapes that do not broadcast, a batched tensor, or a
    /// negative or NaN `rtol` or `atol`.
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64) -> Result<bool> {
        const WHAT: &str = "Tensor::allclose";
        let context = |e: Error| Error::Tensor(format!("{WHAT}: {e}"));
        for (name, value) in [("rtol", rtol), ("atol", atol)] {
            if value.is_nan() || value < 0.0 {
                return Err(Error::Tensor(format!(
                    "{WHAT}: `{name}` is {value}, but a tolerance must be non-negative (torch.allclose \
                     refuses it too)"
                )));
            }
        }
        let shape = broadcast_or_err(self.shape(), other.shape()).map_err(context)?;
        // Two integer or bool tensors compare exactly, in i64 (as
        // torch.isclose compares int64): through f64, i64::MAX and
        // i64::MAX - 1 would be equal.
        if !self.dtype().is_float() && !other.dtype().is_float() {
            return all_pairs::<i64>(self, other, &shape, |x, y| int_close(x, y, rtol, atol))
                .map_err(context);
        }
        all_pairs::<f64>(self, other, &shape, |x, y| {
            if x.is_infinite() || y.is_infinite() {
                x == y
            } else {
                (x - y).abs() <= atol + rtol * y.abs()
            }
        })
        .map_err(context)
    }
}

/// Whether `close` holds for every pair of elements of `a` and `b`, both
/// cast to `T` and broadcast to `shape`.
fn all_pairs<T: Element + Copy>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    close: impl Fn(T, T) -> bool,
) -> Result<bool> {
    let (ca, cb) = (cast(a, T::DTYPE)?, cast(b, T::DTYPE)?);
    let (Some(x), Some(y)) = (T::unwrap(&ca), T::unwrap(&cb)) else {
        return Err(Error::Tensor(format!("not {} after the cast", T::DTYPE)));
    };
    let (Some(x), Some(y)) = (x.broadcast(IxDyn(shape)), y.broadcast(IxDyn(shape))) else {
        return Err(Error::Tensor(format!(
            "shapes {:?} and {:?} do not broadcast",
            a.shape(),
            b.shape()
        )));
    };
    Ok(x.iter().zip(y.iter()).all(|(&p, &q)| close(p, q)))
}

/// `|x - y| <= atol + rtol * |y|` for two integers, with the difference
/// exact (in `u64`: it cannot overflow) and only the tolerance, which is a
/// float anyway, computed in f64.
fn int_close(x: i64, y: i64, rtol: f64, atol: f64) -> bool {
    let diff = x.abs_diff(y);
    if diff == 0 {
        return true;
    }
    let tolerance = atol + rtol * (y as f64).abs();
    // An integer difference is within a tolerance iff it is within the
    // tolerance's floor; a tolerance of 2^64 or more (or +inf) admits any.
    tolerance >= 18_446_744_073_709_551_616.0 || diff <= tolerance.floor() as u64
}

impl<T: Element, D: Dimension> TryFrom<&Tensor> for Array<T, D> {
    type Error = Error;

    /// [`Tensor::to_array_dim`].
    fn try_from(t: &Tensor) -> Result<Self> {
        t.fixed("Array::try_from(&Tensor)")
    }
}

impl fmt::Display for Tensor {
    /// numpy-like: `tensor([[1., 2.5], [3., 4.]], dtype=f32)`, with ndarray's
    /// layout (rows on lines of their own, long dims elided with `...`). A
    /// whole float shows a trailing `.`, as numpy shows it; a magnitude of
    /// 1e16 or more, or under 1e-4 but not zero, is in scientific notation
    /// (`1e-300`). Precision and width flags apply to the elements: `{:.3}`.
    /// An empty tensor of two or more dims shows its shape:
    /// `tensor([], shape=[0, 3], dtype=f32)`. A tensor at a transform level
    /// shows its logical shape and its level.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(data) = self.data() else {
            return write!(f, "{self:?}");
        };
        // An empty tensor of more than one dim has no rows to show its shape
        // by (ndarray writes [0, 3] as `[[]]`): say the shape, as torch does.
        if data.shape().contains(&0) && data.shape().len() != 1 {
            return write!(
                f,
                "tensor([], shape={:?}, dtype={})",
                data.shape(),
                self.dtype()
            );
        }
        let body = match data {
            Data::F32(a) => elements(&a.map(|&v| Float(v)), f),
            Data::F64(a) => elements(&a.map(|&v| Float(v)), f),
            Data::I64(a) => elements(a, f),
            Data::Bool(a) => elements(a, f),
        };
        // Continuation lines line up under the first element.
        let body = body.replace('\n', "\n       ");
        write!(f, "tensor({body}, dtype={})", self.dtype())
    }
}

/// The array as ndarray's `Display` lays it out, with `f`'s precision.
fn elements<A, S, D>(a: &ndarray::ArrayBase<S, D>, f: &fmt::Formatter<'_>) -> String
where
    A: fmt::Display,
    S: ndarray::Data<Elem = A>,
    D: Dimension,
{
    match f.precision() {
        Some(p) => format!("{a:.p$}"),
        None => format!("{a}"),
    }
}

/// A float element as numpy shows it: `2.` for a whole number.
struct Float<T>(T);

macro_rules! float_display {
    ($t:ty) => {
        impl fmt::Display for Float<$t> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let v = self.0;
                let magnitude = v.abs();
                // Very large and very small magnitudes in scientific
                // notation (as numpy switches to it), not as hundreds of
                // digits: 1e-300, not 0.000...0001.
                let scientific =
                    v.is_finite() && (magnitude >= 1e16 || (magnitude != 0.0 && magnitude < 1e-4));
                if scientific {
                    fmt::LowerExp::fmt(&v, f)
                } else if f.precision().is_none() && v.is_finite() && v.fract() == 0.0 {
                    write!(f, "{v}.")
                } else {
                    fmt::Display::fmt(&v, f)
                }
            }
        }
    };
}
float_display!(f32);
float_display!(f64);
