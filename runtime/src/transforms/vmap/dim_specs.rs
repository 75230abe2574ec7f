//! The in_dims and out_dims of a vmap: [`InDims`] (with [`InDim`] and
//! [`FieldDims`] for one argument's leaves) and [`OutDims`], what
//! [`Vmap::in_dims`](super::Vmap::in_dims) and
//! [`Vmap::out_dims`](super::Vmap::out_dims) take, and the conversions into
//! them from dims written as integers, `Option`s and lists (and `show_dim`,
//! how such a dim is written in a message).

use crate::core::tree::TensorTree;
use crate::{Error, Result, Tensor};

/// Where each input's batch dim is: one entry per top-level argument, `None`
/// for an argument that is not batched. Negative dims count from the end.
///
/// The top-level arguments are what [`Vmap::call`] is given (see
/// [`VmapInputs`]): a tensor or a struct is one argument, a tuple has one per
/// element, a `Vec` or slice one per element. An entry applies to every leaf
/// (tensor) of its argument; [`InDim::fields`] and [`InDim::per_leaf`] give
/// each leaf of one argument a dim of its own.
///
/// Converts from a single dim (applied to every argument), `None` (no argument
/// batched; give a [`Vmap::batch_size`]), a list with one entry per argument
/// (`[Some(0), None]`, `vec![Some(-1), Some(0)]`), or a list of [`InDim`]s.
///
/// [`Vmap::call`]: super::Vmap::call
/// [`Vmap::batch_size`]: super::Vmap::batch_size
/// [`VmapInputs`]: super::VmapInputs
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InDims {
    /// The same entry for every argument.
    All(Option<i64>),
    /// One entry per argument.
    Each(Vec<InDim>),
}

/// The batch dims of one top-level argument: one dim for all its leaves, or
/// one per leaf.
///
/// A list of `Option` dims converts into [`InDims`] without naming this type;
/// it is needed to batch some fields of a struct and not others:
///
/// ```
/// use batchrules::{ops, vmap, InDim, Tensor, TensorTree};
/// use ndarray::array;
///
/// #[derive(TensorTree)]
/// struct Affine {
///     scale: Tensor,
///     shift: Tensor,
/// }
///
/// // Three scales (one per example), one shift shared by all, three inputs.
/// let p = Affine {
///     scale: Tensor::from(array![[1.0f64], [2.0], [3.0]].into_dyn()),
///     shift: Tensor::from(array![10.0f64].into_dyn()),
/// };
/// let x = Tensor::from(array![[1.0f64], [1.0], [1.0]].into_dyn());
/// let dims = InDim::per_leaf(&p, |path, _| (path == ".scale").then_some(0));
/// let y = vmap(|(p, x): (Affine, Tensor)| ops::add(&ops::mul(&p.scale, &x)?, &p.shift))
///     .in_dims([dims, InDim::from(Some(0))])
///     .call((&p, &x))?;
/// assert_eq!(y.to_array::<f64>()?, array![[11.0], [12.0], [13.0]].into_dyn());
/// # Ok::<(), batchrules::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InDim {
    /// The same dim for every leaf of the argument (`None`: not batched).
    Arg(Option<i64>),
    /// One dim per leaf of the argument, in the order of
    /// [`TensorTree::leaves`]; build it with [`InDim::fields`] (by picking
    /// fields) or [`InDim::per_leaf`] (by leaf path).
    Leaves(Vec<Option<i64>>),
}

impl InDim {
    /// One dim per leaf of `value` (the argument as it will be given to
    /// [`Vmap::call`]), chosen by `dim(path, leaf)`, where `path` says where
    /// the leaf sits (`".layers[1].w"`, see [`TensorTree::leaf_path`]).
    ///
    /// [`Vmap::call`]: super::Vmap::call
    pub fn per_leaf<T: TensorTree>(
        value: &T,
        mut dim: impl FnMut(&str, &Tensor) -> Option<i64>,
    ) -> InDim {
        let mut leaves = Vec::new();
        value.leaves(&mut leaves);
        InDim::Leaves(
            leaves
                .iter()
                .enumerate()
                .map(|(i, t)| dim(&value.leaf_path(i), t))
                .collect(),
        )
    }

    /// Per-field dims for `value`, chosen by the fields themselves rather than
    /// by their paths: start with every leaf unbatched, then
    /// [`batch`](FieldDims::batch) the parts of `value` you pick, and
    /// [`build`](FieldDims::build).
    ///
    /// A picked part is matched to `value`'s leaves by where they live, so
    /// the closure must return a part of its argument (not a clone). This
    /// relies on [`TensorTree::map_leaves`] handing out the leaves in place, as
    /// the impls of this crate and the derive do.
    ///
    /// ```
    /// use batchrules::{ops, vmap, InDim, Tensor, TensorTree};
    /// use ndarray::array;
    ///
    /// #[derive(TensorTree)]
    /// struct Layer {
    ///     w: Tensor,
    ///     b: Tensor,
    /// }
    ///
    /// // Two weights (one per example) and one bias shared by both.
    /// let layer = Layer {
    ///     w: Tensor::from(array![[1.0f64, 0.0], [0.0, 2.0]].into_dyn()),
    ///     b: Tensor::from(array![1.0f64, 1.0].into_dyn()),
    /// };
    /// let dims = InDim::fields(&layer).batch(|l| &l.w, 0).build()?;
    /// assert_eq!(dims, InDim::Leaves(vec![Some(0), None]));
    /// let y = vmap(|(l,): (Layer,)| ops::add(&l.w, &l.b))
    ///     .in_dims([dims])
    ///     .call((&layer,))?;
    /// assert_eq!(y.to_array::<f64>()?, array![[2.0, 1.0], [1.0, 3.0]].into_dyn());
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    pub fn fields<T: TensorTree>(value: &T) -> FieldDims<'_, T> {
        let (addresses, error) = match leaf_addresses(value) {
            Ok(a) => (a, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        FieldDims {
            value,
            dims: vec![None; addresses.len()],
            addresses,
            error,
        }
    }
}

/// Per-field in_dims of one argument, built from the argument itself; see
/// [`InDim::fields`].
#[derive(Debug)]
pub struct FieldDims<'a, T> {
    value: &'a T,
    /// Where each leaf of `value` is, in leaf order: what identifies a picked
    /// part's leaves (compared, never read through).
    addresses: Vec<*const Tensor>,
    dims: Vec<Option<i64>>,
    /// The first problem, reported by `build`.
    error: Option<Error>,
}

/// Where each leaf of `value` lives, in leaf order. `map_leaves` hands out
/// references to the leaves themselves, so a part picked from `value` has the
/// same addresses.
fn leaf_addresses<T: TensorTree>(value: &T) -> Result<Vec<*const Tensor>> {
    let mut out = Vec::new();
    value.map_leaves(&mut |t| {
        out.push(std::ptr::from_ref(t));
        Ok(t.clone())
    })?;
    Ok(out)
}

impl<'a, T: TensorTree> FieldDims<'a, T> {
    /// Batches every leaf of the part `pick` returns (a field, an element of
    /// a `Vec` field, a nested struct, ...) at `dim`. A later call overrides an
    /// earlier one for the leaves both pick.
    #[must_use]
    pub fn batch<S: TensorTree + 'a>(self, pick: impl FnOnce(&'a T) -> &'a S, dim: i64) -> Self {
        self.set(pick, Some(dim))
    }

    /// Leaves every leaf of the part `pick` returns unbatched (the default;
    /// useful to carve a part out of a part batched before).
    #[must_use]
    pub fn share<S: TensorTree + 'a>(self, pick: impl FnOnce(&'a T) -> &'a S) -> Self {
        self.set(pick, None)
    }

    fn set<S: TensorTree + 'a>(
        mut self,
        pick: impl FnOnce(&'a T) -> &'a S,
        dim: Option<i64>,
    ) -> Self {
        if self.error.is_some() {
            return self;
        }
        let part = pick(self.value);
        match leaf_addresses(part) {
            Ok(picked) => {
                for address in picked {
                    match self.addresses.iter().position(|&a| a == address) {
                        Some(i) => self.dims[i] = dim,
                        None => {
                            self.error = Some(Error::Vmap(
                                "InDim::fields: the part picked is not inside the value given to InDim::fields (pick a field of the closure's argument, e.g. `|p| &p.layers`, not another value)"
                                    .to_string(),
                            ));
                            break;
                        }
                    }
                }
            }
            Err(e) => self.error = Some(e),
        }
        self
    }

    /// The dims, one per leaf of the value; errors if a part picked was not
    /// inside the value.
    pub fn build(self) -> Result<InDim> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(InDim::Leaves(self.dims)),
        }
    }
}

/// `None`: the argument is not batched; `Some(d)`: all its leaves are batched
/// at `d`.
impl From<Option<i64>> for InDim {
    fn from(d: Option<i64>) -> Self {
        InDim::Arg(d)
    }
}

impl<const N: usize> From<[InDim; N]> for InDims {
    fn from(d: [InDim; N]) -> Self {
        InDims::Each(d.into())
    }
}

impl From<Vec<InDim>> for InDims {
    fn from(d: Vec<InDim>) -> Self {
        InDims::Each(d)
    }
}

/// Where each output's batch dim goes: one dim for every output, or one per
/// top-level output. Negative dims count from the end of the output (batch dim
/// included).
///
/// The top-level outputs are what the function returns (see [`VmapOutputs`]):
/// a tensor or a struct is one output, a tuple has one per element, a `Vec`
/// one per element. An output's dim applies to every leaf (tensor) of it, each
/// leaf counting from its own rank.
///
/// `None` (torch.func's `out_dims=None`) marks an output that does not depend
/// on the batch: it is returned as the function returned it, without a batch
/// dim. An output marked `None` that *is* batched is an error naming vmap.
///
/// ```
/// use batchrules::{ops, vmap, Tensor};
/// use ndarray::array;
///
/// let xs = Tensor::from(array![[1.0f64, 2.0], [3.0, 4.0], [5.0, 6.0]].into_dyn());
/// let w = Tensor::from(array![10.0f64, 20.0].into_dyn());
/// // Output 0 is batched at dim 0; output 1 (w itself) is returned as it is.
/// let (ys, same): (Tensor, Tensor) = vmap(|(x, w): (Tensor, Tensor)| Ok((ops::mul(&x, &w)?, w)))
///     .in_dims([Some(0), None])
///     .out_dims([Some(0), None])
///     .call((&xs, &w))?;
/// assert_eq!(ys.shape(), &[3, 2]);
/// assert_eq!(same.shape(), &[2]);
/// // A batched output under out_dims None is an error.
/// let err = vmap(|x: Tensor| ops::sin(&x)).out_dims(None).call(&xs).unwrap_err();
/// assert!(err.to_string().contains("vmap"));
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// [`VmapOutputs`]: super::VmapOutputs
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutDims {
    /// The same dim for every output (`None`: no output is batched).
    All(Option<i64>),
    /// One dim per output (`None`: that output is not batched).
    Each(Vec<Option<i64>>),
}

/// `None`: no output is batched, each is returned as the function returned
/// it; `Some(d)`: every output is batched at `d`.
impl From<Option<i64>> for OutDims {
    fn from(d: Option<i64>) -> Self {
        OutDims::All(d)
    }
}

macro_rules! dims_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for InDims {
            fn from(d: $t) -> Self {
                InDims::All(Some(d.as_dim()))
            }
        }
        impl<const N: usize> From<[Option<$t>; N]> for InDims {
            fn from(d: [Option<$t>; N]) -> Self {
                InDims::Each(d.iter().map(|d| InDim::Arg(d.map(|d| d.as_dim()))).collect())
            }
        }
        impl From<Vec<Option<$t>>> for InDims {
            fn from(d: Vec<Option<$t>>) -> Self {
                InDims::Each(d.iter().map(|d| InDim::Arg(d.map(|d| d.as_dim()))).collect())
            }
        }
        impl From<&[Option<$t>]> for InDims {
            fn from(d: &[Option<$t>]) -> Self {
                InDims::Each(d.iter().map(|d| InDim::Arg(d.map(|d| d.as_dim()))).collect())
            }
        }
        impl From<$t> for OutDims {
            fn from(d: $t) -> Self {
                OutDims::All(Some(d.as_dim()))
            }
        }
        impl<const N: usize> From<[$t; N]> for OutDims {
            fn from(d: [$t; N]) -> Self {
                OutDims::Each(d.iter().map(|&d| Some(d.as_dim())).collect())
            }
        }
        impl From<Vec<$t>> for OutDims {
            fn from(d: Vec<$t>) -> Self {
                OutDims::Each(d.iter().map(|&d| Some(d.as_dim())).collect())
            }
        }
        impl<const N: usize> From<[Option<$t>; N]> for OutDims {
            fn from(d: [Option<$t>; N]) -> Self {
                OutDims::Each(d.iter().map(|d| d.map(|d| d.as_dim())).collect())
            }
        }
        impl From<Vec<Option<$t>>> for OutDims {
            fn from(d: Vec<Option<$t>>) -> Self {
                OutDims::Each(d.iter().map(|d| d.map(|d| d.as_dim())).collect())
            }
        }
    )*};
}
dims_from_int!(i32, i64, usize);

/// `None`: no input is batched (give a [`Vmap::batch_size`]); `Some(d)`: every
/// input is batched at `d`.
///
/// [`Vmap::batch_size`]: super::Vmap::batch_size
impl From<Option<i64>> for InDims {
    fn from(d: Option<i64>) -> Self {
        InDims::All(d)
    }
}

/// A dim given as an integer of any width, as `i64`. A `usize` too large for
/// `i64` saturates to `i64::MAX`, which no tensor has as a dim, so it is
/// reported as out of range instead of wrapping around to a negative dim.
trait AsDim: Copy {
    fn as_dim(self) -> i64;
}
impl AsDim for i32 {
    fn as_dim(self) -> i64 {
        i64::from(self)
    }
}
impl AsDim for i64 {
    fn as_dim(self) -> i64 {
        self
    }
}
impl AsDim for usize {
    fn as_dim(self) -> i64 {
        i64::try_from(self).unwrap_or(i64::MAX)
    }
}

/// A dim for a message. `i64::MAX` stands for every `usize` dim at or beyond
/// it (see `AsDim`), so it is shown as such rather than as a number the user
/// may not have written.
pub(super) fn show_dim(d: i64) -> String {
    if d == i64::MAX {
        format!("{d} or larger")
    } else {
        d.to_string()
    }
}
