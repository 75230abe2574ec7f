//! The erased calling convention between typed op functions, the dispatcher and
//! registered functions.
//!
//! A typed op function such as `ops::triu(&x, 0)` packs its arguments into a
//! slice of [`Arg`]s; the dispatcher passes that slice (or its meta / unbatched
//! twin) to the shims the attribute macros generate, which unpack it again with
//! [`FromArg`] into the registered function's own parameter types. The compile-time
//! checks guarantee the shapes agree; the conversions still return errors rather
//! than panic if they ever do not.

use crate::{DType, Error, Reduction, Result, Tensor};

/// Shape and dtype of a tensor: what a `#[meta]` function sees.
///
/// Inside vmap, this is the *logical* shape (batch dims removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMeta {
    shape: Shape,
    dtype: DType,
}

/// A shape stored inline up to 6 dims (no allocation on the dispatch path).
pub(crate) type Shape = smallvec::SmallVec<[usize; 6]>;

/// The outputs of one op call, stored inline when there is one (the common case).
pub type Outs<T> = smallvec::SmallVec<[T; 1]>;

impl TensorMeta {
    /// A meta with the given shape and dtype.
    pub fn new(shape: impl AsRef<[usize]>, dtype: DType) -> Self {
        TensorMeta {
            shape: Shape::from_slice(shape.as_ref()),
            dtype,
        }
    }

    /// The meta of `t` (its logical shape inside vmap).
    pub fn of(t: &Tensor) -> Self {
        TensorMeta::new(t.shape(), t.dtype())
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The number of dims.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The same shape with another dtype.
    pub fn with_dtype(&self, dtype: DType) -> Self {
        TensorMeta {
            shape: self.shape.clone(),
            dtype,
        }
    }
}

/// One argument of an op call. `T` is [`Tensor`] for kernels, rules and
/// decompositions, and [`TensorMeta`] for metas.
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub enum Arg<T> {
    Tensor(T),
    OptTensor(Option<T>),
    TensorList(Vec<T>),
    Int(i64),
    OptInt(Option<i64>),
    IntList(Vec<i64>),
    OptIntList(Option<Vec<i64>>),
    Float(f64),
    OptFloat(Option<f64>),
    Bool(bool),
    OptBool(Option<bool>),
    ScalarType(DType),
    OptScalarType(Option<DType>),
    Reduction(Reduction),
    Str(String),
}

impl<T> Arg<T> {
    /// Applies `f` to every tensor in the argument, keeping the rest.
    pub fn try_map<U>(&self, mut f: impl FnMut(&T) -> Result<U>) -> Result<Arg<U>> {
        Ok(match self {
            Arg::Tensor(t) => Arg::Tensor(f(t)?),
            Arg::OptTensor(t) => Arg::OptTensor(t.as_ref().map(f).transpose()?),
            Arg::TensorList(ts) => Arg::TensorList(ts.iter().map(f).collect::<Result<_>>()?),
            Arg::Int(v) => Arg::Int(*v),
            Arg::OptInt(v) => Arg::OptInt(*v),
            Arg::IntList(v) => Arg::IntList(v.clone()),
            Arg::OptIntList(v) => Arg::OptIntList(v.clone()),
            Arg::Float(v) => Arg::Float(*v),
            Arg::OptFloat(v) => Arg::OptFloat(*v),
            Arg::Bool(v) => Arg::Bool(*v),
            Arg::OptBool(v) => Arg::OptBool(*v),
            Arg::ScalarType(v) => Arg::ScalarType(*v),
            Arg::OptScalarType(v) => Arg::OptScalarType(*v),
            Arg::Reduction(v) => Arg::Reduction(*v),
            Arg::Str(v) => Arg::Str(v.clone()),
        })
    }

    /// Every tensor in the argument.
    pub fn tensors(&self) -> &[T] {
        match self {
            Arg::Tensor(t) => std::slice::from_ref(t),
            Arg::OptTensor(Some(t)) => std::slice::from_ref(t),
            Arg::TensorList(ts) => ts,
            _ => &[],
        }
    }
}

/// The batch dims of one argument, as a batching rule receives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BDim {
    /// A non-tensor argument.
    NotTensor,
    /// A tensor (or optional tensor) argument.
    One(Option<usize>),
    /// A tensor list: one entry per element.
    List(Vec<Option<usize>>),
}

fn mismatch(what: &str, index: usize) -> Error {
    Error::NotImplemented {
        op: String::new(),
        message: format!(
            "argument {index} does not convert to `{what}`: the registration disagrees with the op \
             schema (this should have been a compile error; please report it)"
        ),
    }
}

/// A tensor-like value: [`Tensor`] or [`TensorMeta`].
pub trait TensorLike: Clone {}
impl TensorLike for Tensor {}
impl TensorLike for TensorMeta {}

/// Unpacks one [`Arg`] into a registered function's parameter type.
#[doc(hidden)]
pub trait FromArg<'a, T>: Sized {
    fn from_arg(arg: &'a Arg<T>, index: usize) -> Result<Self>;
}

macro_rules! from_arg {
    ($ty:ty, $name:literal, $pat:pat => $val:expr) => {
        impl<'a, T> FromArg<'a, T> for $ty {
            fn from_arg(arg: &'a Arg<T>, index: usize) -> Result<Self> {
                match arg {
                    $pat => Ok($val),
                    _ => Err(mismatch($name, index)),
                }
            }
        }
    };
}
from_arg!(i64, "i64", Arg::Int(v) => *v);
from_arg!(Option<i64>, "Option<i64>", Arg::OptInt(v) => *v);
from_arg!(&'a [i64], "&[i64]", Arg::IntList(v) => v.as_slice());
from_arg!(Option<&'a [i64]>, "Option<&[i64]>", Arg::OptIntList(v) => v.as_deref());
from_arg!(f64, "f64", Arg::Float(v) => *v);
from_arg!(Option<f64>, "Option<f64>", Arg::OptFloat(v) => *v);
from_arg!(bool, "bool", Arg::Bool(v) => *v);
from_arg!(Option<bool>, "Option<bool>", Arg::OptBool(v) => *v);
from_arg!(DType, "DType", Arg::ScalarType(v) => *v);
from_arg!(Option<DType>, "Option<DType>", Arg::OptScalarType(v) => *v);
from_arg!(Reduction, "Reduction", Arg::Reduction(v) => *v);
from_arg!(&'a str, "&str", Arg::Str(v) => v.as_str());

impl<'a, T: TensorLike> FromArg<'a, T> for &'a T {
    fn from_arg(arg: &'a Arg<T>, index: usize) -> Result<Self> {
        match arg {
            Arg::Tensor(t) => Ok(t),
            _ => Err(mismatch("a tensor", index)),
        }
    }
}
impl<'a, T: TensorLike> FromArg<'a, T> for Option<&'a T> {
    fn from_arg(arg: &'a Arg<T>, index: usize) -> Result<Self> {
        match arg {
            Arg::OptTensor(t) => Ok(t.as_ref()),
            _ => Err(mismatch("an optional tensor", index)),
        }
    }
}
impl<'a, T: TensorLike> FromArg<'a, T> for &'a [T] {
    fn from_arg(arg: &'a Arg<T>, index: usize) -> Result<Self> {
        match arg {
            Arg::TensorList(t) => Ok(t),
            _ => Err(mismatch("a tensor list", index)),
        }
    }
}

/// Unpacks the batch dim(s) of one argument for a batching rule.
#[doc(hidden)]
pub trait FromBDim<'a>: Sized {
    fn from_bdim(b: &'a BDim, index: usize) -> Result<Self>;
}
impl<'a> FromBDim<'a> for Option<usize> {
    fn from_bdim(b: &'a BDim, index: usize) -> Result<Self> {
        match b {
            BDim::One(d) => Ok(*d),
            _ => Err(mismatch("Option<usize>", index)),
        }
    }
}
impl<'a> FromBDim<'a> for &'a [Option<usize>] {
    fn from_bdim(b: &'a BDim, index: usize) -> Result<Self> {
        match b {
            BDim::List(d) => Ok(d),
            _ => Err(mismatch("&[Option<usize>]", index)),
        }
    }
}

/// Packs a typed op function's parameter into an [`Arg`].
#[doc(hidden)]
pub trait IntoArg {
    fn into_arg(self) -> Arg<Tensor>;
}
macro_rules! into_arg {
    ($ty:ty, $v:ident => $val:expr) => {
        impl IntoArg for $ty {
            fn into_arg(self) -> Arg<Tensor> {
                let $v = self;
                $val
            }
        }
    };
}
into_arg!(&Tensor, v => Arg::Tensor(v.clone()));
into_arg!(Option<&Tensor>, v => Arg::OptTensor(v.cloned()));
into_arg!(&[Tensor], v => Arg::TensorList(v.to_vec()));
into_arg!(i64, v => Arg::Int(v));
into_arg!(Option<i64>, v => Arg::OptInt(v));
into_arg!(&[i64], v => Arg::IntList(v.to_vec()));
into_arg!(Option<&[i64]>, v => Arg::OptIntList(v.map(<[i64]>::to_vec)));
into_arg!(f64, v => Arg::Float(v));
into_arg!(Option<f64>, v => Arg::OptFloat(v));
into_arg!(bool, v => Arg::Bool(v));
into_arg!(Option<bool>, v => Arg::OptBool(v));
into_arg!(DType, v => Arg::ScalarType(v));
into_arg!(Option<DType>, v => Arg::OptScalarType(v));
into_arg!(Reduction, v => Arg::Reduction(v));
into_arg!(&str, v => Arg::Str(v.to_string()));

/// Converts between a function's return value and the flat list of outputs the
/// dispatcher works with. `T` is the output item: [`Tensor`], [`TensorMeta`], or
/// `(Tensor, Option<usize>)` for batching rules.
#[doc(hidden)]
pub trait Outputs<T>: Sized {
    fn into_outputs(self) -> Outs<T>;
    fn from_outputs(outs: Outs<T>) -> Result<Self>;
}

fn arity_error(want: usize, got: usize) -> Error {
    Error::NotImplemented {
        op: String::new(),
        message: format!("expected {want} outputs, got {got}"),
    }
}

impl<T: TensorLike> Outputs<T> for T {
    fn into_outputs(self) -> Outs<T> {
        smallvec::smallvec![self]
    }
    fn from_outputs(outs: Outs<T>) -> Result<Self> {
        let n = outs.len();
        let mut it = outs.into_iter();
        match (it.next(), n) {
            (Some(t), 1) => Ok(t),
            _ => Err(arity_error(1, n)),
        }
    }
}

impl<T: TensorLike> Outputs<T> for (T, T) {
    fn into_outputs(self) -> Outs<T> {
        smallvec::smallvec![self.0, self.1]
    }
    fn from_outputs(outs: Outs<T>) -> Result<Self> {
        let n = outs.len();
        let mut it = outs.into_iter();
        match (it.next(), it.next(), n) {
            (Some(a), Some(b), 2) => Ok((a, b)),
            _ => Err(arity_error(2, n)),
        }
    }
}

impl<T: TensorLike> Outputs<T> for (T, T, T) {
    fn into_outputs(self) -> Outs<T> {
        smallvec::smallvec![self.0, self.1, self.2]
    }
    fn from_outputs(outs: Outs<T>) -> Result<Self> {
        let n = outs.len();
        let mut it = outs.into_iter();
        match (it.next(), it.next(), it.next(), n) {
            (Some(a), Some(b), Some(c), 3) => Ok((a, b, c)),
            _ => Err(arity_error(3, n)),
        }
    }
}

impl<T: TensorLike> Outputs<T> for Vec<T> {
    fn into_outputs(self) -> Outs<T> {
        Outs::from_vec(self)
    }
    fn from_outputs(outs: Outs<T>) -> Result<Self> {
        Ok(outs.into_vec())
    }
}

/// One output of a batching rule: the tensor and where its batch dim is.
pub type BatchedOutput = (Tensor, Option<usize>);

impl Outputs<BatchedOutput> for BatchedOutput {
    fn into_outputs(self) -> Outs<BatchedOutput> {
        smallvec::smallvec![self]
    }
    fn from_outputs(outs: Outs<BatchedOutput>) -> Result<Self> {
        let n = outs.len();
        outs.into_iter()
            .next()
            .filter(|_| n == 1)
            .ok_or_else(|| arity_error(1, n))
    }
}

impl Outputs<BatchedOutput> for (BatchedOutput, BatchedOutput) {
    fn into_outputs(self) -> Outs<BatchedOutput> {
        smallvec::smallvec![self.0, self.1]
    }
    fn from_outputs(outs: Outs<BatchedOutput>) -> Result<Self> {
        let n = outs.len();
        let mut it = outs.into_iter();
        match (it.next(), it.next(), n) {
            (Some(a), Some(b), 2) => Ok((a, b)),
            _ => Err(arity_error(2, n)),
        }
    }
}

impl Outputs<BatchedOutput> for (BatchedOutput, BatchedOutput, BatchedOutput) {
    fn into_outputs(self) -> Outs<BatchedOutput> {
        smallvec::smallvec![self.0, self.1, self.2]
    }
    fn from_outputs(outs: Outs<BatchedOutput>) -> Result<Self> {
        let n = outs.len();
        let mut it = outs.into_iter();
        match (it.next(), it.next(), it.next(), n) {
            (Some(a), Some(b), Some(c), 3) => Ok((a, b, c)),
            _ => Err(arity_error(3, n)),
        }
    }
}

/// A rule for an op returning `Tensor[]` returns the tensors and their batch
/// dims as two lists of equal length. Only complete pairs are kept, so lists of
/// different lengths show up as a wrong output count in the rule self-check.
impl Outputs<BatchedOutput> for (Vec<Tensor>, Vec<Option<usize>>) {
    fn into_outputs(self) -> Outs<BatchedOutput> {
        self.0.into_iter().zip(self.1).collect()
    }
    fn from_outputs(outs: Outs<BatchedOutput>) -> Result<Self> {
        Ok(outs.into_iter().unzip())
    }
}
