//! The public API of vmap: [`vmap`], [`Vmap`], in/out dims, and the input and
//! output shapes a vmapped function may take.

use std::marker::PhantomData;

use crate::core::value::{Outputs, Outs};
use crate::dispatch::{self, push_level};
use crate::{Error, LevelId, Result, Tensor};

use super::batched::Batched;
use super::fallback::FallbackPolicy;
use super::interpreter::VmapInterpreter;

/// The number of vmap levels active on this thread.
pub fn vmap_depth() -> usize {
    (1..=dispatch::depth())
        .filter(|&d| {
            dispatch::level_at(d)
                .is_some_and(|(_, i)| i.as_any().downcast_ref::<VmapInterpreter>().is_some())
        })
        .count()
}

/// Where each input's batch dim is: one entry per argument, `None` for an
/// argument that is not batched. Negative dims count from the end.
///
/// Converts from a single dim (applied to every argument), `None` (no argument
/// batched; give a [`Vmap::batch_size`]), or a list with one entry per argument:
/// `[Some(0), None]`, `vec![Some(-1), Some(0)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InDims {
    /// The same entry for every argument.
    All(Option<i64>),
    /// One entry per argument.
    Each(Vec<Option<i64>>),
}

/// Where each output's batch dim goes: one dim for every output, or one per
/// output. Negative dims count from the end of the output (batch dim included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutDims {
    /// The same dim for every output.
    All(i64),
    /// One dim per output.
    Each(Vec<i64>),
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
                InDims::Each(d.iter().map(|d| d.map(|d| d.as_dim())).collect())
            }
        }
        impl From<Vec<Option<$t>>> for InDims {
            fn from(d: Vec<Option<$t>>) -> Self {
                InDims::Each(d.iter().map(|d| d.map(|d| d.as_dim())).collect())
            }
        }
        impl From<&[Option<$t>]> for InDims {
            fn from(d: &[Option<$t>]) -> Self {
                InDims::Each(d.iter().map(|d| d.map(|d| d.as_dim())).collect())
            }
        }
        impl From<$t> for OutDims {
            fn from(d: $t) -> Self {
                OutDims::All(d.as_dim())
            }
        }
        impl<const N: usize> From<[$t; N]> for OutDims {
            fn from(d: [$t; N]) -> Self {
                OutDims::Each(d.iter().map(|&d| d.as_dim()).collect())
            }
        }
        impl From<Vec<$t>> for OutDims {
            fn from(d: Vec<$t>) -> Self {
                OutDims::Each(d.iter().map(|&d| d.as_dim()).collect())
            }
        }
    )*};
}
dims_from_int!(i32, i64, usize);

/// `None`: no input is batched (give a [`Vmap::batch_size`]); `Some(d)`: every
/// input is batched at `d`.
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

/// The inputs of a vmapped function: one tensor, a tuple of up to four, or a
/// list. The function receives them as owned [`Tensor`]s (cheap handles), in the
/// same shape: `Tensor`, `(Tensor, Tensor)`, ..., or `Vec<Tensor>`.
pub trait VmapInputs {
    /// What the vmapped function receives.
    type Inner;
    /// The input tensors, in order.
    fn tensors(&self) -> Inputs;
    /// Rebuilds the function's argument from (batched) tensors.
    fn rebuild(ts: Inputs) -> Self::Inner;
}

/// The input tensors of a vmap call (inline up to four).
pub type Inputs = smallvec::SmallVec<[Tensor; 4]>;

impl VmapInputs for &Tensor {
    type Inner = Tensor;
    fn tensors(&self) -> Inputs {
        smallvec::smallvec![(*self).clone()]
    }
    fn rebuild(ts: Inputs) -> Tensor {
        ts.into_iter().next().expect("one input")
    }
}

impl VmapInputs for Tensor {
    type Inner = Tensor;
    fn tensors(&self) -> Inputs {
        smallvec::smallvec![self.clone()]
    }
    fn rebuild(ts: Inputs) -> Tensor {
        ts.into_iter().next().expect("one input")
    }
}

impl VmapInputs for &[Tensor] {
    type Inner = Vec<Tensor>;
    fn tensors(&self) -> Inputs {
        self.iter().cloned().collect()
    }
    fn rebuild(ts: Inputs) -> Vec<Tensor> {
        ts.into_vec()
    }
}

impl VmapInputs for &Vec<Tensor> {
    type Inner = Vec<Tensor>;
    fn tensors(&self) -> Inputs {
        self.iter().cloned().collect()
    }
    fn rebuild(ts: Inputs) -> Vec<Tensor> {
        ts.into_vec()
    }
}

impl VmapInputs for Vec<Tensor> {
    type Inner = Vec<Tensor>;
    fn tensors(&self) -> Inputs {
        self.iter().cloned().collect()
    }
    fn rebuild(ts: Inputs) -> Vec<Tensor> {
        ts.into_vec()
    }
}

macro_rules! tuple_inputs {
    ($($name:ident),+) => {
        impl VmapInputs for ($(&$name,)+) {
            type Inner = ($($name,)+);
            #[allow(non_snake_case)]
            fn tensors(&self) -> Inputs {
                let ($($name,)+) = *self;
                smallvec::smallvec![$((*$name).clone()),+]
            }
            #[allow(non_snake_case)]
            fn rebuild(ts: Inputs) -> Self::Inner {
                let mut it = ts.into_iter();
                $(let $name = it.next().expect("arity checked");)+
                ($($name,)+)
            }
        }
    };
}
#[allow(non_camel_case_types)]
type T1 = Tensor;
#[allow(non_camel_case_types)]
type T2 = Tensor;
#[allow(non_camel_case_types)]
type T3 = Tensor;
#[allow(non_camel_case_types)]
type T4 = Tensor;
tuple_inputs!(T1, T2);
tuple_inputs!(T1, T2, T3);
tuple_inputs!(T1, T2, T3, T4);

/// The outputs of a vmapped function: a [`Tensor`], a tuple of two or three, or
/// a `Vec<Tensor>`.
pub trait VmapOutputs: Outputs<Tensor> {}
impl<O: Outputs<Tensor>> VmapOutputs for O {}

/// A function prepared for vmap; see [`vmap`]. `A` is what the function
/// receives: a [`Tensor`], a tuple of them, or a `Vec<Tensor>`.
pub struct Vmap<F, A> {
    f: F,
    args: PhantomData<fn(A)>,
    in_dims: InDims,
    out_dims: OutDims,
    batch_size: Option<usize>,
    policy: Option<FallbackPolicy>,
}

/// Vectorizes a per-example function over a batch dim.
///
/// `f` is written for one example; [`Vmap::call`] runs it on a whole batch,
/// with every op inside dispatched to its batching rule (or decomposition, or
/// the fallback loop). By default every input is batched at dim 0 and every
/// output gets its batch dim at 0.
///
/// ```
/// use batchrules::{ops, vmap, Tensor};
/// use ndarray::Array;
///
/// // Per example: x is [3], w is [3] and shared by all examples.
/// let x = Tensor::from(Array::from_shape_fn((4, 3), |(i, j)| (i * 3 + j) as f64).into_dyn());
/// let w = Tensor::from(ndarray::array![1.0f64, 0.0, -1.0].into_dyn());
/// // The closure's argument types follow from what `call` is given.
/// let y = vmap(|(x, w)| ops::sum(&ops::mul(&x, &w)?, None, false))
///     .in_dims([Some(0), None])
///     .call((&x, &w))?;
/// assert_eq!(y.shape(), &[4]);
/// assert_eq!(y.to_array::<f64>()?[[1]], 3.0 - 5.0);
///
/// // Meta checks see the per-example (logical) shape: each row of x is 1-d.
/// let err = vmap(|x: Tensor| ops::triu(&x, 0)).call(&x).unwrap_err();
/// assert!(err.to_string().contains("got shape [3]"));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn vmap<F, A, O>(f: F) -> Vmap<F, A>
where
    F: Fn(A) -> Result<O>,
{
    Vmap {
        f,
        args: PhantomData,
        in_dims: InDims::All(Some(0)),
        out_dims: OutDims::All(0),
        batch_size: None,
        policy: None,
    }
}

impl<F: Clone, A> Clone for Vmap<F, A> {
    fn clone(&self) -> Self {
        Vmap {
            f: self.f.clone(),
            args: PhantomData,
            in_dims: self.in_dims.clone(),
            out_dims: self.out_dims.clone(),
            batch_size: self.batch_size,
            policy: self.policy,
        }
    }
}

impl<F, A> std::fmt::Debug for Vmap<F, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vmap")
            .field("in_dims", &self.in_dims)
            .field("out_dims", &self.out_dims)
            .field("batch_size", &self.batch_size)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<F, A> Vmap<F, A> {
    /// Sets where each input's batch dim is (see [`InDims`]).
    pub fn in_dims(mut self, in_dims: impl Into<InDims>) -> Self {
        self.in_dims = in_dims.into();
        self
    }

    /// Sets where each output's batch dim goes (see [`OutDims`]).
    pub fn out_dims(mut self, out_dims: impl Into<OutDims>) -> Self {
        self.out_dims = out_dims.into();
        self
    }

    /// Sets the batch size explicitly; required when no input is batched, and
    /// checked against the inputs otherwise.
    pub fn batch_size(mut self, size: usize) -> Self {
        self.batch_size = Some(size);
        self
    }

    /// Sets the fallback policy for ops dispatched at this vmap's level,
    /// overriding [`set_fallback_policy`](crate::set_fallback_policy).
    pub fn fallback(mut self, policy: FallbackPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Runs the function over the batch.
    ///
    /// Errors if `in_dims`/`out_dims` do not fit the inputs/outputs, if batched
    /// inputs disagree on the batch size, if nothing is batched and no batch size
    /// was given, or if the function itself errors (with the vmap level added).
    pub fn call<I, O>(&self, args: I) -> Result<O>
    where
        I: VmapInputs<Inner = A>,
        F: Fn(A) -> Result<O>,
        O: VmapOutputs,
    {
        let inputs = args.tensors();
        let dims = resolve_in_dims(&self.in_dims, &inputs)?;
        let size = batch_size(&inputs, &dims, self.batch_size)?;
        let policy = self.policy;
        let guard = push_level("vmap", |id| {
            VmapInterpreter::at_depth(id.depth(), size, policy)
        })?;
        let level = guard.id();
        let wrapped: Inputs = inputs
            .into_iter()
            .zip(&dims)
            .map(|(t, d)| match d {
                Some(d) => Batched::wrap(t, *d, level),
                None => Ok(t),
            })
            .collect::<Result<_>>()?;
        let out = (self.f)(I::rebuild(wrapped)).map_err(|e| in_level(e, level.depth()))?;
        let outs = out.into_outputs();
        if let OutDims::Each(ds) = &self.out_dims {
            if ds.len() != outs.len() {
                return Err(Error::Vmap(format!(
                    "out_dims has {} entries but the function returned {} outputs",
                    ds.len(),
                    outs.len()
                )));
            }
        }
        let results = outs
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let d = match &self.out_dims {
                    OutDims::All(d) => *d,
                    OutDims::Each(ds) => ds[i],
                };
                finish_output(i, &t, d, level, size)
            })
            .collect::<Result<Outs<_>>>()?;
        O::from_outputs(results)
    }
}

/// Adds the vmap level to an error from the vmapped function, unless the error
/// already says which level it was checked at.
fn in_level(e: Error, depth: usize) -> Error {
    let says_level = matches!(
        e.root(),
        Error::InvalidArgument { level: Some(_), .. }
            | Error::Fallback { .. }
            | Error::RuleBug { .. }
    );
    if says_level || matches!(e, Error::InVmap { .. }) {
        return e;
    }
    Error::InVmap {
        level: depth,
        source: Box::new(e),
    }
}

/// A dim for a message. `i64::MAX` stands for every `usize` dim at or beyond
/// it (see `AsDim`), so it is shown as such rather than as a number the user
/// may not have written.
fn show_dim(d: i64) -> String {
    if d == i64::MAX {
        format!("{d} or larger")
    } else {
        d.to_string()
    }
}

/// Resolved in_dims: one entry per input (inline up to four).
type Dims = smallvec::SmallVec<[Option<usize>; 4]>;

fn resolve_in_dims(in_dims: &InDims, inputs: &[Tensor]) -> Result<Dims> {
    if let InDims::Each(ds) = in_dims {
        if ds.len() != inputs.len() {
            return Err(Error::Vmap(format!(
                "in_dims has {} entries but the function takes {} inputs; give one entry per input (None for an unbatched one)",
                ds.len(),
                inputs.len()
            )));
        }
    }
    inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let d = match in_dims {
                InDims::All(d) => *d,
                InDims::Each(ds) => ds[i],
            };
            let Some(d) = d else { return Ok(None) };
            let rank = t.ndim() as i64;
            if rank == 0 {
                return Err(Error::Vmap(format!(
                    "input {i} is a 0-d tensor and has no dim to batch over; give it in_dim None"
                )));
            }
            if d < -rank || d >= rank {
                return Err(Error::Vmap(format!(
                    "in_dim {} of input {i} is out of range for its shape {:?} (valid: {}..={})",
                    show_dim(d),
                    t.shape(),
                    -rank,
                    rank - 1
                )));
            }
            Ok(Some(if d < 0 { d + rank } else { d } as usize))
        })
        .collect()
}

fn batch_size(inputs: &[Tensor], dims: &[Option<usize>], explicit: Option<usize>) -> Result<usize> {
    // (input, in_dim, size) of every batched input.
    let sizes = || {
        inputs
            .iter()
            .zip(dims)
            .enumerate()
            .filter_map(|(i, (t, d))| d.map(|d| (i, d, t.shape()[d])))
    };
    let describe = || {
        sizes()
            .map(|(i, d, n)| format!("input {i} has size {n} at in_dim {d}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((_, _, n)) = sizes().next() else {
        return explicit.ok_or_else(|| {
            Error::Vmap(
                "no input is batched (every in_dim is None) and no batch size was given; \
                 batch an input or call .batch_size(n)"
                    .to_string(),
            )
        });
    };
    if sizes().any(|s| s.2 != n) {
        return Err(Error::Vmap(format!(
            "inconsistent batch sizes: {}; all batched inputs must have the same size along their in_dim",
            describe()
        )));
    }
    match explicit {
        Some(e) if e != n => Err(Error::Vmap(format!(
            "batch_size({e}) disagrees with the inputs: {}",
            describe()
        ))),
        _ => Ok(n),
    }
}

/// Moves output `i`'s batch dim at `level` to `out_dim`, broadcasting an
/// output that does not depend on the batch.
fn finish_output(
    i: usize,
    t: &Tensor,
    out_dim: i64,
    level: LevelId,
    size: usize,
) -> Result<Tensor> {
    let rank = t.ndim() as i64 + 1;
    if out_dim < -rank || out_dim >= rank {
        return Err(Error::Vmap(format!(
            "out_dim {} of output {i} is out of range: the output has logical shape {:?}, so with its batch dim it has {rank} dims (valid: {}..={})",
            show_dim(out_dim),
            t.shape(),
            -rank,
            rank - 1
        )));
    }
    let d = if out_dim < 0 { out_dim + rank } else { out_dim } as usize;
    if let Some(b) = Batched::at(t, level) {
        return b.inner.moved_dim(b.bdim, d);
    }
    match t.level() {
        // A tensor of a level above this one (or of a dead one at this depth)
        // escaped the transform that created it.
        Some(l) if l.depth() >= level.depth() => Err(dispatch::escaped(t)),
        // An output that does not depend on the batch is repeated along it.
        _ => t.broadcast_new_dim(d, size).map_err(|e| {
            Error::Vmap(format!(
                "output {i} does not depend on the batch and is repeated {size} times: {e}"
            ))
        }),
    }
}
