//! [`Tensor`]: a cheap handle over `ndarray` storage, or a batched wrapper inside
//! `vmap`.

use std::fmt;
use std::sync::Arc;

use ndarray::{ArcArray, ArrayD, IxDyn};

use crate::vmap::LevelId;
use crate::{DType, Error, Result};

/// Dense storage of a tensor: one shared `ndarray` array per element type.
///
/// Cloning is cheap (the buffer is reference counted). Kernels match on this to
/// reach the data; see [`Tensor::data`].
#[derive(Clone, Debug)]
pub enum Data {
    /// `bool` elements.
    Bool(ArcArray<bool, IxDyn>),
    /// `i64` elements.
    I64(ArcArray<i64, IxDyn>),
    /// `f32` elements.
    F32(ArcArray<f32, IxDyn>),
    /// `f64` elements.
    F64(ArcArray<f64, IxDyn>),
}

/// Applies the same expression to whichever array a [`Data`] holds.
///
/// `each_dtype!(data, a => expr)` evaluates `expr` with `a` bound to the array,
/// whatever its element type; the expression must produce the same type in every arm.
#[macro_export]
macro_rules! each_dtype {
    ($data:expr, $a:ident => $body:expr) => {
        match $data {
            $crate::Data::Bool($a) => $body,
            $crate::Data::I64($a) => $body,
            $crate::Data::F32($a) => $body,
            $crate::Data::F64($a) => $body,
        }
    };
}

impl Data {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Data::Bool(_) => DType::Bool,
            Data::I64(_) => DType::I64,
            Data::F32(_) => DType::F32,
            Data::F64(_) => DType::F64,
        }
    }

    /// The shape of the array.
    pub fn shape(&self) -> &[usize] {
        each_dtype!(self, a => a.shape())
    }
}

/// An element type that can live in a [`Tensor`].
pub trait Element: Copy + Default + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The matching [`DType`].
    const DTYPE: DType;
    /// Wraps an array of this element type.
    fn wrap(a: ArcArray<Self, IxDyn>) -> Data;
    /// The array, if `data` holds this element type.
    fn unwrap(data: &Data) -> Option<&ArcArray<Self, IxDyn>>;
}

macro_rules! element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn wrap(a: ArcArray<Self, IxDyn>) -> Data {
                Data::$variant(a)
            }
            fn unwrap(data: &Data) -> Option<&ArcArray<Self, IxDyn>> {
                match data {
                    Data::$variant(a) => Some(a),
                    _ => None,
                }
            }
        }
    };
}
element!(bool, Bool);
element!(i64, I64);
element!(f32, F32);
element!(f64, F64);

/// A tensor: dense `ndarray` storage, or (inside `vmap`) a batched wrapper.
///
/// Cloning is cheap. Outside `vmap` a tensor is always dense. Inside a vmapped
/// function the tensors you receive are batched: [`Tensor::shape`] reports the
/// *logical* shape (the batch dim removed) and [`Tensor::data`] returns an error,
/// because the per-example data is not a contiguous array you could read.
///
/// ```
/// use batchrules::Tensor;
/// use ndarray::array;
///
/// let t = Tensor::from(array![[1.0f32, 2.0], [3.0, 4.0]].into_dyn());
/// assert_eq!(t.shape(), &[2, 2]);
/// assert_eq!(t.dtype(), batchrules::DType::F32);
/// let back = t.to_array::<f32>().unwrap();
/// assert_eq!(back[[1, 0]], 3.0);
/// ```
#[derive(Clone)]
pub struct Tensor {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// Shared so that cloning a tensor is one reference-count increment.
    Dense(Arc<Data>),
    Batched(Arc<Batched>),
}

/// A tensor with a batch dim at one vmap level.
pub(crate) struct Batched {
    /// The physical tensor (may itself be batched at a lower level).
    pub(crate) inner: Tensor,
    /// Where the batch dim is in `inner`'s (logical-at-the-lower-level) shape.
    pub(crate) bdim: usize,
    /// The vmap level this batch dim belongs to.
    pub(crate) level: LevelId,
    /// `inner`'s shape without `bdim`.
    pub(crate) logical_shape: crate::value::Shape,
}

impl Tensor {
    /// Wraps dense storage.
    pub fn from_data(data: Data) -> Self {
        Tensor {
            repr: Repr::Dense(Arc::new(data)),
        }
    }

    /// Builds a tensor from a shape and row-major values.
    ///
    /// Errors if `values.len()` is not the product of `shape`.
    pub fn from_shape_vec<T: Element>(shape: &[usize], values: Vec<T>) -> Result<Self> {
        let n = values.len();
        ArrayD::from_shape_vec(IxDyn(shape), values)
            .map(Tensor::from)
            .map_err(|_| {
                Error::Tensor(format!(
                    "Tensor::from_shape_vec: shape {shape:?} holds {} elements, got {n} values",
                    shape.iter().product::<usize>()
                ))
            })
    }

    /// A 0-d tensor holding `value`.
    pub fn scalar<T: Element>(value: T) -> Self {
        Tensor::from(ArrayD::from_elem(IxDyn(&[]), value))
    }

    /// The shape. Inside `vmap` this is the logical shape: the batch dims of
    /// every level are removed.
    pub fn shape(&self) -> &[usize] {
        match &self.repr {
            Repr::Dense(d) => d.shape(),
            Repr::Batched(b) => &b.logical_shape,
        }
    }

    /// The number of (logical) dims.
    pub fn ndim(&self) -> usize {
        self.shape().len()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match &self.repr {
            Repr::Dense(d) => d.dtype(),
            Repr::Batched(b) => b.inner.dtype(),
        }
    }

    /// The dense storage.
    ///
    /// Errors for a batched tensor (inside `vmap`): its per-example data is not an
    /// array of its logical shape, so handing it out would give wrong answers.
    pub fn data(&self) -> Result<&Data> {
        match &self.repr {
            Repr::Dense(d) => Ok(d),
            Repr::Batched(b) => Err(Error::Tensor(format!(
                "cannot read the data of a tensor batched at vmap level {} (logical shape {:?}): \
                 inside vmap, compute with ops and return the result from the vmapped function",
                b.level.depth, b.logical_shape
            ))),
        }
    }

    /// Copies the data out as an `ndarray` array of element type `T`.
    ///
    /// Errors if the tensor is batched (see [`Tensor::data`]) or holds another
    /// element type.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        let data = self.data()?;
        T::unwrap(data).map(|a| a.to_owned()).ok_or_else(|| {
            Error::Tensor(format!(
                "Tensor::to_array: the tensor holds {} elements, not {}; ask for to_array::<{}>()",
                data.dtype(),
                T::DTYPE,
                data.dtype()
            ))
        })
    }

    /// The vmap level of the outermost batch dim, or `None` for a dense tensor.
    pub fn vmap_level(&self) -> Option<usize> {
        match &self.repr {
            Repr::Dense(_) => None,
            Repr::Batched(b) => Some(b.level.depth),
        }
    }

    pub(crate) fn batched(&self) -> Option<&Batched> {
        match &self.repr {
            Repr::Dense(_) => None,
            Repr::Batched(b) => Some(b),
        }
    }

    /// Wraps `inner` as batched at `level` with its batch dim at `bdim`.
    /// The caller guarantees `bdim < inner.ndim()`.
    pub(crate) fn wrap_batched(inner: Tensor, bdim: usize, level: LevelId) -> Tensor {
        let mut logical_shape = crate::value::Shape::from_slice(inner.shape());
        logical_shape.remove(bdim);
        Tensor {
            repr: Repr::Batched(Arc::new(Batched {
                inner,
                bdim,
                level,
                logical_shape,
            })),
        }
    }
}

impl<T: Element> From<ArrayD<T>> for Tensor {
    fn from(a: ArrayD<T>) -> Self {
        Tensor::from_data(T::wrap(a.into_shared()))
    }
}

impl<T: Element> From<ArcArray<T, IxDyn>> for Tensor {
    fn from(a: ArcArray<T, IxDyn>) -> Self {
        Tensor::from_data(T::wrap(a))
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Dense(d) => each_dtype!(&**d, a => write!(f, "Tensor({a:?})")),
            Repr::Batched(b) => write!(
                f,
                "BatchedTensor(level {}, bdim {}, logical shape {:?}, inner {:?})",
                b.level.depth, b.bdim, b.logical_shape, b.inner
            ),
        }
    }
}

/// Structural views used by batching rules. They work on the logical shape at
/// every level: a tensor batched at a lower vmap level is rearranged by
/// rearranging its inner tensor, so no data is copied.
impl Tensor {
    /// The dims reordered: dim `i` of the result is dim `perm[i]` of `self`.
    pub fn permuted(&self, perm: &[usize]) -> Result<Tensor> {
        let n = self.ndim();
        let mut seen = vec![false; n];
        if perm.len() != n
            || perm
                .iter()
                .any(|&p| p >= n || std::mem::replace(&mut seen[p], true))
        {
            return Err(Error::Tensor(format!(
                "Tensor::permuted: {perm:?} is not a permutation of the {n} dims of shape {:?} (each of 0..{n} exactly once)",
                self.shape()
            )));
        }
        match &self.repr {
            Repr::Dense(d) => Ok(Tensor::from_data(
                each_dtype!(&**d, a => Element::wrap(a.clone().permuted_axes(IxDyn(perm)))),
            )),
            Repr::Batched(b) => {
                let phys = |d: usize| if d < b.bdim { d } else { d + 1 };
                let mut inner_perm = Vec::with_capacity(n + 1);
                inner_perm.push(b.bdim);
                inner_perm.extend(perm.iter().map(|&d| phys(d)));
                Ok(Tensor::wrap_batched(
                    b.inner.permuted(&inner_perm)?,
                    0,
                    b.level,
                ))
            }
        }
    }

    /// A size-1 dim inserted at `dim` (`0..=ndim`).
    pub fn unsqueezed(&self, dim: usize) -> Result<Tensor> {
        let n = self.ndim();
        if dim > n {
            return Err(Error::Tensor(format!(
                "Tensor::unsqueezed: dim {dim} is out of range for shape {:?} (valid: 0..={n})",
                self.shape()
            )));
        }
        match &self.repr {
            Repr::Dense(d) => Ok(Tensor::from_data(
                each_dtype!(&**d, a => Element::wrap(a.clone().insert_axis(ndarray::Axis(dim)))),
            )),
            Repr::Batched(b) => {
                let (q, bdim) = if dim <= b.bdim {
                    (dim, b.bdim + 1)
                } else {
                    (dim + 1, b.bdim)
                };
                Ok(Tensor::wrap_batched(b.inner.unsqueezed(q)?, bdim, b.level))
            }
        }
    }

    /// Moves dim `from` to position `to`, keeping the order of the others.
    pub fn moved_dim(&self, from: usize, to: usize) -> Result<Tensor> {
        let n = self.ndim();
        if from >= n || to >= n {
            return Err(Error::Tensor(format!(
                "Tensor::moved_dim: cannot move dim {from} to {to} in shape {:?} (both must be below {n})",
                self.shape()
            )));
        }
        if from == to {
            return Ok(self.clone());
        }
        let mut perm: Vec<usize> = (0..n).filter(|&d| d != from).collect();
        perm.insert(to, from);
        self.permuted(&perm)
    }
}

impl Tensor {
    /// The slice at `index` along `dim` (the dim is removed). No data is copied.
    pub fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        let shape = self.shape();
        if dim >= shape.len() || index >= shape[dim] {
            return Err(Error::Tensor(format!(
                "Tensor::select: index {index} of dim {dim} is out of range for shape {shape:?}"
            )));
        }
        match &self.repr {
            Repr::Dense(d) => Ok(Tensor::from_data(each_dtype!(&**d, a => Element::wrap(
                a.clone().index_axis_move(ndarray::Axis(dim), index)
            )))),
            Repr::Batched(b) => {
                let (q, bdim) = if dim < b.bdim {
                    (dim, b.bdim - 1)
                } else {
                    (dim + 1, b.bdim)
                };
                Ok(Tensor::wrap_batched(
                    b.inner.select(q, index)?,
                    bdim,
                    b.level,
                ))
            }
        }
    }

    /// A new dim of `size` inserted at `dim`, repeating the tensor along it.
    pub fn broadcast_new_dim(&self, dim: usize, size: usize) -> Result<Tensor> {
        if dim > self.ndim() {
            return Err(Error::Tensor(format!(
                "Tensor::broadcast_new_dim: dim {dim} is out of range for shape {:?} (valid: 0..={})",
                self.shape(),
                self.ndim()
            )));
        }
        match &self.repr {
            Repr::Dense(d) => {
                let mut shape = d.shape().to_vec();
                shape.insert(dim, size);
                Ok(Tensor::from_data(each_dtype!(&**d, a => {
                    let expanded = a.view().insert_axis(ndarray::Axis(dim));
                    match expanded.broadcast(IxDyn(&shape)) {
                        Some(v) => Element::wrap(v.to_owned().into_shared()),
                        None => return Err(Error::Tensor(format!(
                            "cannot broadcast shape {:?} to {shape:?}", a.shape()
                        ))),
                    }
                })))
            }
            Repr::Batched(b) => {
                let (q, bdim) = if dim <= b.bdim {
                    (dim, b.bdim + 1)
                } else {
                    (dim + 1, b.bdim)
                };
                Ok(Tensor::wrap_batched(
                    b.inner.broadcast_new_dim(q, size)?,
                    bdim,
                    b.level,
                ))
            }
        }
    }

    /// Stacks tensors of equal logical shape and dtype along a new dim `dim`.
    ///
    /// Tensors may be batched at lower vmap levels (as the fallback's per-example
    /// results are under nested vmap); `level_size` gives the batch size of such a
    /// level, for the tensors that are not batched at it.
    pub(crate) fn stack(
        ts: &[Tensor],
        dim: usize,
        level_size: &dyn Fn(usize) -> Result<usize>,
    ) -> Result<Tensor> {
        let Some(first) = ts.first() else {
            return Err(Error::Tensor("cannot stack zero tensors".to_string()));
        };
        if let Some(t) = ts
            .iter()
            .find(|t| t.shape() != first.shape() || t.dtype() != first.dtype())
        {
            return Err(Error::Tensor(format!(
                "cannot stack a {} tensor of shape {:?} with a {} tensor of shape {:?}",
                first.dtype(),
                first.shape(),
                t.dtype(),
                t.shape()
            )));
        }
        let top = ts
            .iter()
            .filter_map(|t| t.batched().map(|b| b.level))
            .max_by_key(|l| l.depth);
        match top {
            None => {
                let datas: Vec<&Data> = ts.iter().map(|t| t.data()).collect::<Result<_>>()?;
                stack_dense(&datas, dim)
            }
            Some(level) => {
                let size = level_size(level.depth)?;
                let inners = ts
                    .iter()
                    .map(|t| match t.batched() {
                        Some(b) if b.level == level => b.inner.moved_dim(b.bdim, 0),
                        _ => t.broadcast_new_dim(0, size),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let stacked = Tensor::stack(&inners, dim + 1, level_size)?;
                Ok(Tensor::wrap_batched(stacked, 0, level))
            }
        }
    }
}

fn stack_dense(datas: &[&Data], dim: usize) -> Result<Tensor> {
    fn go<T: Element>(datas: &[&Data], dim: usize) -> Result<Tensor> {
        let views: Vec<_> = datas
            .iter()
            .filter_map(|d| T::unwrap(d).map(|a| a.view()))
            .collect();
        ndarray::stack(ndarray::Axis(dim), &views)
            .map(Tensor::from)
            .map_err(|e| Error::Tensor(format!("stack: {e}")))
    }
    match datas[0].dtype() {
        DType::Bool => go::<bool>(datas, dim),
        DType::I64 => go::<i64>(datas, dim),
        DType::F32 => go::<f32>(datas, dim),
        DType::F64 => go::<f64>(datas, dim),
    }
}
