//! [`Tensor`]: a cheap handle over dense `ndarray` storage, or over a value
//! that lives at one transform level (batched inside `vmap`, ...).
//!
//! This module names no transform's types: a transform's tensors implement
//! [`LevelTensor`], and the structural views below delegate to it.

use std::any::Any;
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use ndarray::{ArcArray, ArrayD, IxDyn};

use crate::core::alloc::check_alloc_in;
use crate::{each_dtype, DType, Error, Result};

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
    /// The array, taken out of `data`, if it holds this element type.
    fn unwrap_owned(data: Data) -> Option<ArcArray<Self, IxDyn>>;
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
            fn unwrap_owned(data: Data) -> Option<ArcArray<Self, IxDyn>> {
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

/// Identifies one live transform level: its depth on the thread's level stack
/// (1 for the outermost) and a token unique to the transform call that pushed
/// it, so a tensor that escaped its level is never mistaken for one of a later
/// level at the same depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelId {
    depth: usize,
    token: u64,
}

impl LevelId {
    /// A level id; only the level stack mints them.
    pub(crate) const fn new(depth: usize, token: u64) -> Self {
        LevelId { depth, token }
    }

    /// The depth on the level stack (1 for the outermost level).
    pub fn depth(self) -> usize {
        self.depth
    }
}

/// The representation of a tensor at one transform level: the tensor a
/// transform wraps around a lower-level one (a batched tensor for vmap, ...).
///
/// A transform implements this for its own tensor type and wraps values with
/// [`Tensor::from_level`]; the dispatcher sends every op call whose highest
/// level is that transform's to the transform's interpreter, which unwraps
/// with [`Tensor::level_value`].
///
/// The structural views ([`Tensor::permuted`], [`Tensor::unsqueezed`],
/// [`Tensor::select`], [`Tensor::broadcast_new_dim`]) are part of the trait so
/// that rule helpers can rearrange tensors of any level without going through
/// the dispatcher.
pub trait LevelTensor: Any + Send + Sync + fmt::Debug {
    /// The level this value belongs to.
    fn level(&self) -> LevelId;
    /// The name of the transform, for messages (`"vmap"`).
    fn transform(&self) -> &'static str;
    /// What a tensor of this transform is called in messages (`"batched"`).
    fn kind(&self) -> &'static str;
    /// The logical shape: what code running at this level sees.
    fn shape(&self) -> &[usize];
    /// The element type.
    fn dtype(&self) -> DType;
    /// `self` as [`Any`], to downcast to the transform's own type.
    fn as_any(&self) -> &dyn Any;
    /// See [`Tensor::permuted`]; `perm` is already validated.
    fn permuted(&self, perm: &[usize]) -> Result<Tensor>;
    /// See [`Tensor::unsqueezed`]; `dim` is already validated.
    fn unsqueezed(&self, dim: usize) -> Result<Tensor>;
    /// See [`Tensor::select`]; `dim` and `index` are already validated.
    fn select(&self, dim: usize, index: usize) -> Result<Tensor>;
    /// See [`Tensor::broadcast_new_dim`]; `dim` is already validated.
    fn broadcast_new_dim(&self, dim: usize, size: usize) -> Result<Tensor>;
    /// What the error of [`Tensor::data`] on a tensor of this level tells the
    /// user to do instead; `None` (the default) says to compute with ops and
    /// return the result from the transformed function.
    fn data_advice(&self) -> Option<&'static str> {
        None
    }
}

/// `x`'s blocks of `block` values, each repeated `times` times in a row (all
/// of `x` `times` times for a `block` of `x.len()`; nothing for an empty
/// block).
fn repeat_blocks<T: Copy + crate::core::buffers::Cached>(
    x: &[T],
    block: usize,
    times: usize,
) -> Vec<T> {
    let mut out = crate::core::buffers::take(x.len().saturating_mul(times));
    if block > 0 {
        for chunk in x.chunks_exact(block) {
            for _ in 0..times {
                out.extend_from_slice(chunk);
            }
        }
    }
    out
}

/// A tensor: dense `ndarray` storage, or (inside a transform such as `vmap`) a
/// value at that transform's level.
///
/// Cloning is cheap. Outside every transform a tensor is always dense. Inside a
/// vmapped function the tensors you receive are batched: [`Tensor::shape`]
/// reports the *logical* shape (the batch dim removed) and [`Tensor::data`]
/// returns an error, because the per-example data is not a contiguous array you
/// could read.
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
    Dense(Arc<Dense>),
    /// A value at a transform level (batched, tracked or dual).
    Level(Arc<dyn LevelTensor>),
}

/// Dense storage, which on drop gives a buffer it owns alone to this
/// thread's buffer cache (see [`crate::core::buffers`]).
struct Dense(ManuallyDrop<Data>);

impl std::ops::Deref for Dense {
    type Target = Data;
    fn deref(&self) -> &Data {
        &self.0
    }
}

impl Drop for Dense {
    fn drop(&mut self) {
        // SAFETY: `self.0` is taken once, here, and not used again: the value
        // is being dropped.
        let data = unsafe { ManuallyDrop::take(&mut self.0) };
        each_dtype!(data, a => {
            // Only a buffer no other array shares (not a view's of another
            // tensor, not a clone of a `Data` held elsewhere).
            if let Ok(owned) = a.try_into_owned_nocopy() {
                crate::core::buffers::give(owned.into_raw_vec_and_offset().0);
            }
        })
    }
}

impl Tensor {
    /// Wraps dense storage.
    pub fn from_data(data: Data) -> Self {
        Tensor {
            repr: Repr::Dense(Arc::new(Dense(ManuallyDrop::new(data)))),
        }
    }

    /// Wraps a value at a transform level (for implementers of transforms).
    pub fn from_level(value: Arc<dyn LevelTensor>) -> Self {
        Tensor {
            repr: Repr::Level(value),
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
                let holds = shape
                    .iter()
                    .try_fold(1usize, |acc, &d| acc.checked_mul(d))
                    .map_or_else(|| "more than usize::MAX".to_string(), |n| n.to_string());
                Error::Tensor(format!(
                    "Tensor::from_shape_vec: shape {shape:?} holds {holds} elements, got {n} values"
                ))
            })
    }

    /// A tensor with no elements: `shape` must have a dim of size 0.
    pub(crate) fn empty(shape: &[usize], dtype: DType) -> Result<Self> {
        each_dtype!(type dtype, T => Tensor::from_shape_vec::<T>(shape, Vec::new()))
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
            Repr::Level(v) => v.shape(),
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
            Repr::Level(v) => v.dtype(),
        }
    }

    /// The dense storage.
    ///
    /// Errors for a tensor at a transform level (a batched tensor inside
    /// `vmap`): its per-example data is not an array of its logical shape, so
    /// handing it out would give wrong answers.
    pub fn data(&self) -> Result<&Data> {
        match &self.repr {
            Repr::Dense(d) => Ok(d),
            Repr::Level(v) => Err(Error::Tensor(format!(
                "cannot read the data of a tensor {} at {} level {} (logical shape {:?}): {}",
                v.kind(),
                v.transform(),
                v.level().depth,
                v.shape(),
                v.data_advice().map_or_else(
                    || format!(
                        "inside {}, compute with ops and return the result from the transformed function",
                        v.transform()
                    ),
                    str::to_string
                ),
            ))),
        }
    }

    /// Copies the data out as an `ndarray` array of element type `T`.
    ///
    /// Errors if the tensor is batched (see [`Tensor::data`]) or holds another
    /// element type.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        self.dense_as::<T>("Tensor::to_array").map(|a| a.to_owned())
    }

    /// The dense array of element type `T`; the errors name `what`, the
    /// method the user called.
    pub(crate) fn dense_as<T: Element>(&self, what: &str) -> Result<&ArcArray<T, IxDyn>> {
        let data = self
            .data()
            .map_err(|e| Error::Tensor(format!("{what}: {e}")))?;
        T::unwrap(data).ok_or_else(|| {
            let short = what.rsplit("::").next().unwrap_or(what);
            Error::Tensor(format!(
                "{what}: the tensor holds {} elements, not {}; ask for {short}::<{}>()",
                data.dtype(),
                T::DTYPE,
                data.dtype()
            ))
        })
    }

    /// The depth of the tensor's outermost transform level, or `None` for a
    /// dense tensor.
    pub fn level_depth(&self) -> Option<usize> {
        self.level().map(LevelId::depth)
    }

    /// The tensor's outermost transform level, or `None` for a dense tensor.
    pub fn level(&self) -> Option<LevelId> {
        match &self.repr {
            Repr::Dense(_) => None,
            Repr::Level(v) => Some(v.level()),
        }
    }

    /// The value at the tensor's outermost transform level, or `None` for a
    /// dense tensor (for implementers of transforms).
    pub fn level_value(&self) -> Option<&dyn LevelTensor> {
        match &self.repr {
            Repr::Dense(_) => None,
            Repr::Level(v) => Some(&**v),
        }
    }

    /// Whether the tensor is dense with its values in row-major order and no
    /// gaps (the layout the kernels give their outputs).
    pub(crate) fn is_standard_layout(&self) -> bool {
        match &self.repr {
            Repr::Dense(dense) => each_dtype!(&*dense.0, a => a.is_standard_layout()),
            Repr::Level(_) => false,
        }
    }

    /// The dense data of a tensor whose buffer nobody else holds, to write a
    /// result into: `None` when another handle of the tensor, another array
    /// sharing its buffer (a view made from it, a clone of its [`Data`]) or a
    /// transform level holds it. Through the returned `Data` the array's
    /// buffer is reached without a copy (`as_slice_mut` and the like find it
    /// unique).
    pub(crate) fn unique_data_mut(&mut self) -> Option<&mut Data> {
        let Repr::Dense(dense) = &mut self.repr else {
            return None;
        };
        let data: &mut Data = &mut Arc::get_mut(dense)?.0;
        let unique = each_dtype!(&*data, a => a.is_unique());
        unique.then_some(data)
    }

    /// The value of type `L` at the tensor's outermost transform level, taken
    /// out when this handle is the only one: `Err(self)` when the tensor is
    /// dense, another handle holds its value, or the value is not an `L`.
    pub(crate) fn into_unique_level<L: LevelTensor>(self) -> std::result::Result<L, Tensor> {
        let Repr::Level(value) = self.repr else {
            return Err(self);
        };
        if Arc::strong_count(&value) != 1
            || Arc::weak_count(&value) != 0
            || !value.as_any().is::<L>()
        {
            return Err(Tensor::from_level(value));
        }
        let any: Arc<dyn Any + Send + Sync> = value;
        let Ok(value) = any.downcast::<L>() else {
            unreachable!("the value was checked to be an `L` above");
        };
        // The only handle (checked above): the unwrap takes the value out.
        Arc::try_unwrap(value).map_err(|v| Tensor::from_level(v))
    }

    /// An identity of the value this handle points to: equal for clones of
    /// one tensor, different for tensors alive at the same time that were
    /// made separately.
    pub(crate) fn identity(&self) -> usize {
        match &self.repr {
            Repr::Dense(d) => Arc::as_ptr(d) as *const () as usize,
            Repr::Level(v) => Arc::as_ptr(v) as *const () as usize,
        }
    }

    /// The value at the outermost level as the transform's own type `T`, if it
    /// is one.
    pub fn downcast_level<T: LevelTensor>(&self) -> Option<&T> {
        self.level_value()?.as_any().downcast_ref::<T>()
    }
}

impl Tensor {
    /// The data as an `ndarray` array of element type `T`, without copying it
    /// when this handle is the only one of its buffer (a tensor just computed
    /// and not cloned); otherwise a copy, as [`Tensor::to_array`] makes.
    ///
    /// ```
    /// use batchrules::{ops, Tensor};
    ///
    /// let x = Tensor::from(ndarray::array![[1.0f32, -2.0], [3.0, -4.0]]);
    /// let y = ops::relu(&x)?; // y's buffer is y's alone
    /// let a = y.into_array::<f32>()?;
    /// assert_eq!(a, ndarray::array![[1.0f32, 0.0], [3.0, 0.0]].into_dyn());
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    ///
    /// Errors as [`Tensor::to_array`] does (a batched tensor, another dtype).
    pub fn into_array<T: Element>(self) -> Result<ArrayD<T>> {
        const WHAT: &str = "Tensor::into_array";
        // Dense, and of dtype `T`: the arms below cannot fail.
        self.dense_as::<T>(WHAT)?;
        let checked = || Error::Tensor(format!("{WHAT}: not a dense {} tensor", T::DTYPE));
        match self.repr {
            Repr::Dense(d) => match Arc::try_unwrap(d) {
                Ok(dense) => {
                    // Not dropped as a `Dense` (which would give the buffer
                    // to the cache): the buffer moves into the returned array.
                    let mut dense = ManuallyDrop::new(dense);
                    // SAFETY: `dense.0` is taken once, here; `dense` is never
                    // used again and, being `ManuallyDrop`, never dropped.
                    let data = unsafe { ManuallyDrop::take(&mut dense.0) };
                    // `into_owned` copies only if another array shares the
                    // buffer (a view made from this tensor's data).
                    T::unwrap_owned(data)
                        .map(ArcArray::into_owned)
                        .ok_or_else(checked)
                }
                Err(shared) => T::unwrap(&shared).map(|a| a.to_owned()).ok_or_else(checked),
            },
            Repr::Level(_) => Err(checked()),
        }
    }

    /// A borrowed `ndarray` view of the data, of element type `T`: no copy.
    ///
    /// ```
    /// use batchrules::Tensor;
    ///
    /// let x = Tensor::from(ndarray::array![[1i64, 2], [3, 4]]);
    /// let v = x.view::<i64>()?;
    /// assert_eq!(v[[1, 0]], 3);
    /// assert_eq!(v.sum(), 10);
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    ///
    /// Errors as [`Tensor::to_array`] does (a batched tensor, another dtype).
    pub fn view<T: Element>(&self) -> Result<ndarray::ArrayViewD<'_, T>> {
        self.dense_as::<T>("Tensor::view").map(|a| a.view())
    }
}

impl<T: Element, D: ndarray::Dimension> From<ndarray::Array<T, D>> for Tensor {
    fn from(a: ndarray::Array<T, D>) -> Self {
        Tensor::from_data(T::wrap(a.into_dyn().into_shared()))
    }
}

impl<T: Element, D: ndarray::Dimension> From<ArcArray<T, D>> for Tensor {
    fn from(a: ArcArray<T, D>) -> Self {
        Tensor::from_data(T::wrap(a.into_dyn()))
    }
}

impl<T: Element> From<Vec<T>> for Tensor {
    /// A 1-d tensor of the values.
    fn from(values: Vec<T>) -> Self {
        Tensor::from(ndarray::Array1::from(values))
    }
}

impl fmt::Debug for Tensor {
    /// Short: the shape, the dtype, and the values of a tensor of up to 8
    /// elements (`Tensor[2, 3] f32`, `Tensor[2] f64 [0.5, 1.5]`); a tensor at
    /// a transform level says which.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor{:?} {}", self.shape(), self.dtype())?;
        match &self.repr {
            Repr::Dense(d) => each_dtype!(&***d, a => {
                if a.len() <= 8 {
                    let values: Vec<_> = a.iter().collect();
                    write!(f, " {values:?}")?;
                }
                Ok(())
            }),
            Repr::Level(v) => write!(
                f,
                " ({} at {} level {})",
                v.kind(),
                v.transform(),
                v.level().depth
            ),
        }
    }
}

/// Structural views used by batching rules and transforms. They work on the
/// logical shape at every level: a tensor at a transform level is rearranged by
/// its transform ([`LevelTensor`]), so, for a batched tensor, no data is copied.
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
                each_dtype!(&***d, a => Element::wrap(a.clone().permuted_axes(IxDyn(perm)))),
            )),
            Repr::Level(v) => v.permuted(perm),
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
                each_dtype!(&***d, a => Element::wrap(a.clone().insert_axis(ndarray::Axis(dim)))),
            )),
            Repr::Level(v) => v.unsqueezed(dim),
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

    /// The slice at `index` along `dim` (the dim is removed). No data is copied.
    pub fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        let shape = self.shape();
        if dim >= shape.len() || index >= shape[dim] {
            return Err(Error::Tensor(format!(
                "Tensor::select: index {index} of dim {dim} is out of range for shape {shape:?}"
            )));
        }
        match &self.repr {
            Repr::Dense(d) => Ok(Tensor::from_data(each_dtype!(&***d, a => Element::wrap(
                a.clone().index_axis_move(ndarray::Axis(dim), index)
            )))),
            Repr::Level(v) => v.select(dim, index),
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
                check_alloc_in("Tensor::broadcast_new_dim", &shape, d.dtype())?;
                Ok(Tensor::from_data(each_dtype!(&***d, a => {
                    if let Some(x) = a.as_slice() {
                        // Standard layout: each block of the trailing dims
                        // copied `size` times in a row, into a cached buffer.
                        let block: usize = a.shape()[dim..].iter().product();
                        let values = repeat_blocks(x, block, size);
                        match ndarray::ArcArray::from_shape_vec(IxDyn(&shape), values) {
                            Ok(v) => return Ok(Tensor::from_data(Element::wrap(v))),
                            Err(e) => return Err(Error::Tensor(format!(
                                "Tensor::broadcast_new_dim: {e}"
                            ))),
                        }
                    }
                    let expanded = a.view().insert_axis(ndarray::Axis(dim));
                    match expanded.broadcast(IxDyn(&shape)) {
                        Some(v) => Element::wrap(v.to_owned().into_shared()),
                        None => return Err(Error::Tensor(format!(
                            "cannot broadcast shape {:?} to {shape:?}", a.shape()
                        ))),
                    }
                })))
            }
            Repr::Level(v) => v.broadcast_new_dim(dim, size),
        }
    }

    /// Stacks dense tensors of equal shape and dtype along a new dim `dim`.
    pub(crate) fn stack_dense(ts: &[Tensor], dim: usize) -> Result<Tensor> {
        let datas: Vec<&Data> = ts.iter().map(|t| t.data()).collect::<Result<_>>()?;
        let Some(first) = datas.first() else {
            return Err(Error::Tensor("cannot stack zero tensors".to_string()));
        };
        let mut shape = first.shape().to_vec();
        if dim <= shape.len() {
            shape.insert(dim, datas.len());
        }
        check_alloc_in("stack", &shape, first.dtype())?;
        each_dtype!(type first.dtype(), T => {
            let views: Vec<_> = datas
                .iter()
                .filter_map(|d| T::unwrap(d).map(|a| a.view()))
                .collect();
            if views.len() != datas.len() {
                return Err(Error::Tensor(format!(
                    "cannot stack tensors of different dtypes ({} and others)",
                    first.dtype()
                )));
            }
            ndarray::stack(ndarray::Axis(dim), &views)
                .map(Tensor::from)
                .map_err(|e| Error::Tensor(format!("stack: {e}")))
        })
    }
}
