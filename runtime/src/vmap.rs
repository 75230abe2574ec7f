//! `vmap`: levels, batched dispatch, and the fallback loop.
//!
//! Each call of [`Vmap::call`] pushes a level on this thread's level stack and
//! wraps the batched inputs as batched tensors at that level. When an op sees a
//! batched argument, the dispatcher (see [`call_batched`]) runs the op's meta on
//! the logical shapes, then the op's batching rule, its decomposition, or the
//! fallback loop.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::dispatch::{call_entry, name_error, run_meta};
use crate::registry::{OpEntry, VmapStrategy};
use crate::value::{Arg, BDim, BatchedOutput, Outputs, Outs, TensorMeta};
use crate::{Error, Result, Tensor};

/// Identifies one live vmap level: its depth (1 for the outermost vmap) and a
/// token unique to the `vmap` call, so a batched tensor that escaped its vmap is
/// never mistaken for one of a later vmap at the same depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LevelId {
    pub(crate) depth: usize,
    token: u64,
}

struct Level {
    id: LevelId,
    size: usize,
    policy: Option<FallbackPolicy>,
}

thread_local! {
    static LEVELS: RefCell<Vec<Level>> = const { RefCell::new(Vec::new()) };
}

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Pops its level when dropped, also when the vmapped function errors or panics.
struct LevelGuard;

impl Drop for LevelGuard {
    fn drop(&mut self) {
        LEVELS.with(|l| l.borrow_mut().pop());
    }
}

fn push_level(size: usize, policy: Option<FallbackPolicy>) -> (LevelId, LevelGuard) {
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    let id = LEVELS.with(|l| {
        let mut l = l.borrow_mut();
        let id = LevelId {
            depth: l.len() + 1,
            token,
        };
        l.push(Level { id, size, policy });
        id
    });
    (id, LevelGuard)
}

/// The live level at `depth`: its id, batch size and fallback policy.
fn live_level(depth: usize) -> Option<(LevelId, usize, Option<FallbackPolicy>)> {
    LEVELS.with(|l| {
        l.borrow()
            .get(depth.wrapping_sub(1))
            .map(|lv| (lv.id, lv.size, lv.policy))
    })
}

fn level_size(depth: usize) -> Result<usize> {
    live_level(depth)
        .map(|(_, size, _)| size)
        .ok_or_else(escaped)
}

fn escaped() -> Error {
    Error::Vmap(
        "a batched tensor was used outside the vmap that created it (or on another thread); \
         return it from the vmapped function instead of storing it"
            .to_string(),
    )
}

/// The number of vmap levels active on this thread.
pub fn vmap_depth() -> usize {
    LEVELS.with(|l| l.borrow().len())
}

/// What vmap does with an op that has no batching rule (or a composite that
/// opted out of decomposition): the fallback loop over the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallbackPolicy {
    /// Run the loop and log a warning once per op (the default).
    Warn,
    /// Run the loop silently.
    Silent,
    /// Refuse: the op call returns [`Error::Fallback`].
    Error,
}

static GLOBAL_POLICY: AtomicU8 = AtomicU8::new(0);

/// Sets the fallback policy for every vmap that does not set its own.
pub fn set_fallback_policy(policy: FallbackPolicy) {
    let v = match policy {
        FallbackPolicy::Warn => 0,
        FallbackPolicy::Silent => 1,
        FallbackPolicy::Error => 2,
    };
    GLOBAL_POLICY.store(v, Ordering::Relaxed);
}

/// The global fallback policy.
pub fn fallback_policy() -> FallbackPolicy {
    match GLOBAL_POLICY.load(Ordering::Relaxed) {
        1 => FallbackPolicy::Silent,
        2 => FallbackPolicy::Error,
        _ => FallbackPolicy::Warn,
    }
}

static WARNED: Mutex<Option<HashSet<(&'static str, &'static str)>>> = Mutex::new(None);

fn warn_once(entry: &OpEntry) {
    let key = (entry.table.path, entry.name());
    let first = {
        let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
        warned.get_or_insert_with(HashSet::new).insert(key)
    };
    if first {
        log::warn!(
            "vmap: op `{}` has no batching rule; running it once per example (the fallback loop). \
             Write `#[batching_rule(op = \"{}\")]` to batch it.",
            entry.name(),
            entry.name()
        );
    }
}

/// Splits a tensor argument into its physical tensor and its batch dim at `level`.
fn unwrap_at(t: &Tensor, level: LevelId) -> (Tensor, Option<usize>) {
    match t.batched() {
        Some(b) if b.level == level => (b.inner.clone(), Some(b.bdim)),
        _ => (t.clone(), None),
    }
}

/// Dispatch of an op whose highest-level batched argument is at `depth`.
pub(crate) fn call_batched(
    entry: &'static OpEntry,
    args: &[Arg<Tensor>],
    depth: usize,
) -> Result<Outs<Tensor>> {
    let (level, size, policy) = live_level(depth).ok_or_else(escaped)?;
    let stale = args
        .iter()
        .flat_map(Arg::tensors)
        .filter_map(Tensor::batched)
        .any(|b| b.level.depth == depth && b.level != level);
    if stale {
        return Err(escaped());
    }
    // The output metas serve the rule self-check (debug builds) and the
    // fallback on an empty batch.
    let want = cfg!(debug_assertions) || size == 0;
    let metas = run_meta(entry, args, Some(depth), want)?;
    let strategy = entry.vmap_strategy();
    #[cfg(feature = "bench-internals")]
    let strategy = if crate::dispatch::bench::FORCE_FALLBACK.load(Ordering::Relaxed) {
        VmapStrategy::Fallback
    } else {
        strategy
    };
    let result = match strategy {
        VmapStrategy::BatchingRule => run_rule(entry, args, level, size, metas.as_deref()),
        VmapStrategy::Decomposition => match entry.decomposition {
            Some((f, _)) => f(args),
            None => Err(Error::NotImplemented {
                op: entry.name().to_string(),
                message: "no decomposition is registered".to_string(),
            }),
        },
        // An op without tensor arguments never has batched ones.
        VmapStrategy::Fallback | VmapStrategy::NeverBatched => {
            match policy.unwrap_or_else(fallback_policy) {
                FallbackPolicy::Error => {
                    return Err(Error::Fallback {
                        op: entry.name().to_string(),
                        level: depth,
                    })
                }
                FallbackPolicy::Warn => warn_once(entry),
                FallbackPolicy::Silent => {}
            }
            run_fallback(entry, args, level, size, metas.as_deref())
        }
    };
    // Errors of rules and kernels are not meta errors: they get no level.
    result.map_err(|e| name_error(e, entry.name(), None))
}

fn run_rule(
    entry: &OpEntry,
    args: &[Arg<Tensor>],
    level: LevelId,
    size: usize,
    metas: Option<&[TensorMeta]>,
) -> Result<Outs<Tensor>> {
    let Some(rule) = entry.rule else {
        return Err(Error::NotImplemented {
            op: entry.name().to_string(),
            message: "no batching rule is registered".to_string(),
        });
    };
    let mut values: smallvec::SmallVec<[_; 4]> = smallvec::SmallVec::new();
    let mut bdims: smallvec::SmallVec<[_; 4]> = smallvec::SmallVec::new();
    for a in args {
        let (v, b) = match a {
            Arg::Tensor(t) => {
                let (p, b) = unwrap_at(t, level);
                (Arg::Tensor(p), BDim::One(b))
            }
            Arg::OptTensor(Some(t)) => {
                let (p, b) = unwrap_at(t, level);
                (Arg::OptTensor(Some(p)), BDim::One(b))
            }
            Arg::OptTensor(None) => (Arg::OptTensor(None), BDim::One(None)),
            Arg::TensorList(ts) => {
                let (ps, bs) = ts.iter().map(|t| unwrap_at(t, level)).unzip();
                (Arg::TensorList(ps), BDim::List(bs))
            }
            other => (other.clone(), BDim::NotTensor),
        };
        values.push(v);
        bdims.push(b);
    }
    let outs = rule(&values, &bdims)?;
    if cfg!(debug_assertions) {
        if let Some(metas) = metas {
            check_rule_output(entry, &outs, metas, level, size)?;
        }
    }
    Ok(outs
        .into_iter()
        .map(|(t, b)| match b {
            Some(b) => Tensor::wrap_batched(t, b, level),
            None => t,
        })
        .collect())
}

/// The rule self-check: each output, with its batch dim removed, must match the
/// meta's logical output.
fn check_rule_output(
    entry: &OpEntry,
    outs: &[BatchedOutput],
    metas: &[TensorMeta],
    level: LevelId,
    size: usize,
) -> Result<()> {
    let bug = |message: String| Error::RuleBug {
        op: entry.name().to_string(),
        rule: entry
            .rule_location
            .map_or_else(|| "?".to_string(), |l| l.to_string()),
        message,
    };
    if outs.len() != metas.len() {
        return Err(bug(format!(
            "it returned {} outputs, the meta says {}",
            outs.len(),
            metas.len()
        )));
    }
    for (i, ((t, b), meta)) in outs.iter().zip(metas).enumerate() {
        if t.batched().is_some_and(|bt| bt.level == level) {
            return Err(bug(format!(
                "output {i} is still batched at the rule's own level; return the physical tensor and its batch dim"
            )));
        }
        let mut logical = t.shape().to_vec();
        if let Some(b) = *b {
            if b >= logical.len() || logical[b] != size {
                return Err(bug(format!(
                    "output {i} has shape {logical:?} with batch dim {b}, which is not a dim of size {size} (the batch size)"
                )));
            }
            logical.remove(b);
        }
        if logical != meta.shape() || t.dtype() != meta.dtype() {
            return Err(bug(format!(
                "output {i} has logical shape {logical:?} and dtype {}, but the meta computes shape {:?} and dtype {}",
                t.dtype(),
                meta.shape(),
                meta.dtype()
            )));
        }
    }
    Ok(())
}

/// The fallback: call the op once per example and stack the results.
fn run_fallback(
    entry: &'static OpEntry,
    args: &[Arg<Tensor>],
    level: LevelId,
    size: usize,
    metas: Option<&[TensorMeta]>,
) -> Result<Outs<Tensor>> {
    if size == 0 {
        let Some(metas) = metas else {
            return Err(Error::NotImplemented {
                op: entry.name().to_string(),
                message: "the fallback cannot run on a batch of size 0 without a #[meta] to give the output shapes; add a meta".to_string(),
            });
        };
        return metas
            .iter()
            .map(|m| empty_batch(m, level))
            .collect::<Result<_>>();
    }
    let example = |i: usize| -> Result<Outs<Tensor>> {
        let args = args
            .iter()
            .map(|a| {
                a.try_map(|t| match t.batched() {
                    Some(b) if b.level == level => b.inner.select(b.bdim, i),
                    _ => Ok(t.clone()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        call_entry(entry, &args)
    };
    let per_example: Vec<Outs<Tensor>> = if parallel_fallback(args, level, size) {
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            (0..size)
                .into_par_iter()
                .map(example)
                .collect::<Result<_>>()?
        }
        #[cfg(not(feature = "rayon"))]
        unreachable!("parallel_fallback is false without the rayon feature")
    } else {
        (0..size).map(example).collect::<Result<_>>()?
    };
    let n = per_example[0].len();
    if per_example.iter().any(|o| o.len() != n) {
        return Err(Error::Vmap(format!(
            "op `{}` returned a different number of tensors for different examples; \
             vmap needs the same number for every example",
            entry.name()
        )));
    }
    (0..n)
        .map(|j| {
            let column: Vec<Tensor> = per_example.iter().map(|o| o[j].clone()).collect();
            let stacked = Tensor::stack(&column, 0, &level_size)?;
            Ok(Tensor::wrap_batched(stacked, 0, level))
        })
        .collect()
}

/// Whether the fallback may run its examples on several threads: only with the
/// `rayon` feature, and only when every example is dense (nothing batched at a
/// lower level), because vmap levels live on the calling thread.
fn parallel_fallback(args: &[Arg<Tensor>], level: LevelId, size: usize) -> bool {
    cfg!(feature = "rayon")
        && size > 1
        && args.iter().flat_map(Arg::tensors).all(|t| {
            t.batched()
                .is_none_or(|b| b.level == level && b.inner.vmap_level().is_none())
        })
}

fn empty_batch(meta: &TensorMeta, level: LevelId) -> Result<Tensor> {
    let mut shape = vec![0];
    shape.extend_from_slice(meta.shape());
    let t = match meta.dtype() {
        crate::DType::Bool => Tensor::from_shape_vec::<bool>(&shape, Vec::new()),
        crate::DType::I64 => Tensor::from_shape_vec::<i64>(&shape, Vec::new()),
        crate::DType::F32 => Tensor::from_shape_vec::<f32>(&shape, Vec::new()),
        crate::DType::F64 => Tensor::from_shape_vec::<f64>(&shape, Vec::new()),
    }?;
    Ok(Tensor::wrap_batched(t, 0, level))
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
                InDims::All(Some(d as i64))
            }
        }
        impl From<Option<$t>> for InDims {
            fn from(d: Option<$t>) -> Self {
                InDims::All(d.map(|d| d as i64))
            }
        }
        impl<const N: usize> From<[Option<$t>; N]> for InDims {
            fn from(d: [Option<$t>; N]) -> Self {
                InDims::Each(d.iter().map(|d| d.map(|d| d as i64)).collect())
            }
        }
        impl From<Vec<Option<$t>>> for InDims {
            fn from(d: Vec<Option<$t>>) -> Self {
                InDims::Each(d.iter().map(|d| d.map(|d| d as i64)).collect())
            }
        }
        impl From<&[Option<$t>]> for InDims {
            fn from(d: &[Option<$t>]) -> Self {
                InDims::Each(d.iter().map(|d| d.map(|d| d as i64)).collect())
            }
        }
        impl From<$t> for OutDims {
            fn from(d: $t) -> Self {
                OutDims::All(d as i64)
            }
        }
        impl<const N: usize> From<[$t; N]> for OutDims {
            fn from(d: [$t; N]) -> Self {
                OutDims::Each(d.iter().map(|&d| d as i64).collect())
            }
        }
        impl From<Vec<$t>> for OutDims {
            fn from(d: Vec<$t>) -> Self {
                OutDims::Each(d.iter().map(|&d| d as i64).collect())
            }
        }
    )*};
}
dims_from_int!(i32, i64, usize);

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

/// A function prepared for vmap; see [`vmap`].
#[derive(Clone, Debug)]
pub struct Vmap<F> {
    f: F,
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
/// let y = vmap(|(x, w): (Tensor, Tensor)| ops::sum(&ops::mul(&x, &w)?, None, false))
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
pub fn vmap<F>(f: F) -> Vmap<F> {
    Vmap {
        f,
        in_dims: InDims::All(Some(0)),
        out_dims: OutDims::All(0),
        batch_size: None,
        policy: None,
    }
}

impl<F> Vmap<F> {
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
    /// overriding [`set_fallback_policy`].
    pub fn fallback(mut self, policy: FallbackPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Runs the function over the batch.
    ///
    /// Errors if `in_dims`/`out_dims` do not fit the inputs/outputs, if batched
    /// inputs disagree on the batch size, if nothing is batched and no batch size
    /// was given, or if the function itself errors (with the vmap level added).
    pub fn call<A, O>(&self, args: A) -> Result<O>
    where
        A: VmapInputs,
        F: Fn(A::Inner) -> Result<O>,
        O: VmapOutputs,
    {
        let inputs = args.tensors();
        let depth = vmap_depth() + 1;
        let dims = resolve_in_dims(&self.in_dims, &inputs)?;
        let size = batch_size(&inputs, &dims, self.batch_size)?;
        let (level, _guard) = push_level(size, self.policy);
        let wrapped: Inputs = inputs
            .into_iter()
            .zip(&dims)
            .map(|(t, d)| match d {
                Some(d) => Tensor::wrap_batched(t, *d, level),
                None => t,
            })
            .collect();
        let out = (self.f)(A::rebuild(wrapped)).map_err(|e| in_level(e, depth))?;
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
    match e {
        e @ Error::InvalidArgument { level: Some(_), .. } => e,
        e @ (Error::Fallback { .. } | Error::RuleBug { .. }) => e,
        e @ Error::InVmap { .. } => e,
        other => Error::InVmap {
            level: depth,
            source: Box::new(other),
        },
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
                    "in_dim {d} of input {i} is out of range for its shape {:?} (valid: {}..={})",
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
            "out_dim {out_dim} of output {i} is out of range: the output has logical shape {:?}, so with its batch dim it has {rank} dims (valid: {}..={})",
            t.shape(),
            -rank,
            rank - 1
        )));
    }
    let d = if out_dim < 0 { out_dim + rank } else { out_dim } as usize;
    match t.batched() {
        Some(b) if b.level == level => b.inner.moved_dim(b.bdim, d),
        Some(b) if b.level.depth >= level.depth => Err(escaped()),
        _ => t.broadcast_new_dim(d, size),
    }
}
