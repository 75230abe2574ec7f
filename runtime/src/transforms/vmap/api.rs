//! The public API of vmap: [`vmap`] and the builder [`Vmap`], and how a call
//! runs: it resolves the in_dims against the inputs, pushes a vmap level (one
//! per chunk, with `chunk_size`), runs the function on the batched inputs, and
//! moves each output's batch dim to its out_dim. The dims types are in `dims`,
//! the input and output forms in `inputs`.

use std::marker::PhantomData;

use crate::dispatch::{self, push_level};
use crate::transform_fn::{self as name, OneArgument, TransformFn};
use crate::{Error, LevelId, Result, Tensor};

use super::batched::Batched;
use super::chunks::Joiner;
use super::dim_specs::{show_dim, InDim, InDims, OutDims};
use super::inputs::{Inputs, VmapInputs, VmapOutputs};
use super::level::{FallbackPolicy, LevelConfig, Randomness, VmapInterpreter};
use crate::ops::usize_args;

/// The number of vmap levels active on this thread.
pub fn vmap_depth() -> usize {
    (1..=dispatch::depth())
        .filter(|&d| {
            dispatch::level_at(d)
                .is_some_and(|(_, i)| i.as_any().downcast_ref::<VmapInterpreter>().is_some())
        })
        .count()
}

/// A function prepared for vmap; see [`vmap`]. `A` is what the function
/// receives: a [`Tensor`], a struct of tensors, a tuple of them, or a `Vec`
/// (see [`VmapInputs`]).
#[must_use = "`vmap(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Vmap<F, A> {
    f: F,
    args: PhantomData<fn(A)>,
    in_dims: InDims,
    out_dims: OutDims,
    batch_size: Option<usize>,
    policy: Option<FallbackPolicy>,
    chunk_size: Option<usize>,
    randomness: Randomness,
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
///
/// Inputs and outputs may be structures of tensors ([`TensorTree`]s): tuples,
/// `Vec`s and structs with `#[derive(TensorTree)]`. An in_dim applies to every
/// tensor of its argument, so one `None` shares a model's parameters across the
/// batch, and one `Some(0)` runs several stacked models at once (ensembling):
///
/// ```
/// use batchrules::{ops, vmap, Tensor, TensorTree};
/// use ndarray::array;
///
/// #[derive(Clone, TensorTree)]
/// struct Linear {
///     w: Tensor,
///     b: Tensor,
/// }
///
/// fn forward(p: &Linear, x: &Tensor) -> batchrules::Result<Tensor> {
///     ops::linear(x, &p.w, Some(&p.b))
/// }
///
/// let p = Linear {
///     w: Tensor::from(array![[1.0f64, 2.0], [0.0, 1.0]].into_dyn()),
///     b: Tensor::from(array![0.5f64, -0.5].into_dyn()),
/// };
/// let xs = Tensor::from(array![[1.0f64, 0.0], [0.0, 1.0], [1.0, 1.0]].into_dyn());
///
/// // Shared parameters, batched data: the closure gets a `Linear` and a row.
/// let ys = vmap(|(p, x): (Linear, Tensor)| forward(&p, &x))
///     .in_dims([None, Some(0)])
///     .call((&p, &xs))?;
/// assert_eq!(ys.to_array::<f64>()?, array![[1.5, -0.5], [2.5, 0.5], [3.5, 0.5]].into_dyn());
///
/// // Two models stacked leaf by leaf (dim 0), the same data for both.
/// let two = p.map_leaves(&mut |t| ops::stack(&[t.clone(), ops::neg(t)?], 0))?;
/// let both = vmap(|(p, x): (Linear, Tensor)| forward(&p, &x))
///     .in_dims([Some(0), None])
///     .call((&two, &xs.select(0, 0)?))?;
/// assert_eq!(both.to_array::<f64>()?, array![[1.5, -0.5], [-1.5, 0.5]].into_dyn());
///
/// // A struct comes back as a struct: every leaf gets the batch dim.
/// let grown = vmap(|p: Linear| p.map_leaves(&mut |t| ops::add(t, t))).call(&two)?;
/// assert_eq!(grown.w.shape(), &[2, 2, 2]);
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// [`TensorTree`]: trait@crate::TensorTree
pub fn vmap<F, A, O, M>(f: F) -> Vmap<F, A>
where
    F: TransformFn<A, O, name::vmap, M>,
    M: OneArgument<name::vmap>,
{
    Vmap {
        f,
        args: PhantomData,
        in_dims: InDims::All(Some(0)),
        out_dims: OutDims::All(Some(0)),
        batch_size: None,
        policy: None,
        chunk_size: None,
        randomness: Randomness::Error,
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
            chunk_size: self.chunk_size,
            randomness: self.randomness,
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
            .field("chunk_size", &self.chunk_size)
            .field("randomness", &self.randomness)
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

    /// Sets what a random op (`rand`, `randn`, `bernoulli`, `dropout`, any op
    /// its table marks `random = true`) does at this vmap's level; the default,
    /// [`Randomness::Error`], refuses it. The policy holds for this level
    /// only: a nested vmap sets its own.
    ///
    /// ```
    /// use batchrules::{ops, vmap, DType, Randomness, Tensor};
    ///
    /// // Five examples, each with its own dropout mask (p = 0.5, seed 3).
    /// let x = Tensor::from(ndarray::Array::<f64, _>::ones((5, 8)).into_dyn());
    /// let y = vmap(|x: Tensor| ops::dropout(&x, 0.5, 3))
    ///     .randomness(Randomness::Different)
    ///     .call(&x)?
    ///     .to_array::<f64>()?;
    /// // Kept entries are scaled by 1 / (1 - p), dropped ones are 0.
    /// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
    /// assert_ne!(y.index_axis(ndarray::Axis(0), 0), y.index_axis(ndarray::Axis(0), 1));
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    pub fn randomness(mut self, randomness: Randomness) -> Self {
        self.randomness = randomness;
        self
    }

    /// Runs the batch in chunks of at most `size` examples, one vmap call per
    /// chunk, and joins the results along each output's batch dim, so the
    /// memory the function's intermediates take is bounded by the chunk, not
    /// the batch. The results equal the unchunked ones, random draws included
    /// (each chunk passes the index of its first example, from which
    /// [`Randomness::Different`] derives each example's seed), except for the
    /// rounding of large f32/f64 matrix products: their GEMM may sum in
    /// another order for another number of rows (in `examples/chunked_memory`,
    /// 1.9e-6 on values of order 1, in f32).
    ///
    /// ```
    /// use batchrules::{ops, vmap, Tensor};
    ///
    /// let xs = Tensor::from(ndarray::Array::from_shape_fn((10, 3), |(i, j)| (i * 3 + j) as f64).into_dyn());
    /// let f = |x: Tensor| ops::sum(&ops::mul(&x, &x)?, None, false);
    /// let whole = vmap(f).call(&xs)?;
    /// let chunked = vmap(f).chunk_size(4).call(&xs)?;  // chunks of 4, 4 and 2
    /// assert_eq!(chunked.to_array::<f64>()?, whole.to_array::<f64>()?);
    /// # Ok::<(), batchrules::Error>(())
    /// ```
    ///
    /// `call` errors if `size` is 0.
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = Some(size);
        self
    }

    /// Runs the function over the batch. `args` is a tensor, a struct of
    /// tensors, a tuple of references to either, or a list (see
    /// [`VmapInputs`]); the function receives the same structure, batched.
    ///
    /// Errors if `in_dims`/`out_dims` do not fit the inputs/outputs, if batched
    /// inputs disagree on the batch size, if nothing is batched and no batch size
    /// was given, or if the function itself errors (with the vmap level added).
    pub fn call<I, O, M>(&self, args: I) -> Result<O>
    where
        I: VmapInputs<Inner = A>,
        F: TransformFn<A, O, name::vmap, M>,
        O: VmapOutputs,
    {
        let inputs = args.tensors();
        let counts = args.arg_leaf_counts();
        let input_name = |k: usize| leaf_name("input", &counts, k, |a, l| args.arg_leaf_path(a, l));
        let dims = resolve_in_dims(&self.in_dims, &inputs, &counts, &input_name)?;
        let size = batch_size(&inputs, &dims, self.batch_size, &input_name)?;
        match self.chunk_size {
            Some(0) => Err(Error::Vmap(
                "chunk_size(0): a chunk must hold at least one example".to_string(),
            )),
            Some(chunk) if chunk < size => {
                self.call_chunked(&inputs, &dims, size, chunk, |sliced, len, start| {
                    self.call_level(&args, sliced, &dims, len, start)
                })
            }
            _ => self.call_level(&args, inputs, &dims, size, 0),
        }
    }

    /// The batch in chunks of `chunk` examples, joined: `call_level(inputs,
    /// len, start)` is the vmap call over one chunk, the `len` examples from
    /// example `start` on (`inputs` sliced to them).
    fn call_chunked<O: VmapOutputs>(
        &self,
        inputs: &[Tensor],
        dims: &[Option<usize>],
        size: usize,
        chunk: usize,
        call_level: impl Fn(Inputs, usize, usize) -> Result<O>,
    ) -> Result<O> {
        // The first chunk's output gives the structure of the result; its
        // leaves and every later chunk's are joined leaf by leaf as they come,
        // so a chunk's result is dropped once it is copied (see `Joiner`).
        // (The first chunk's output is kept for its structure only.)
        let mut first: Option<O> = None;
        let mut joins: Vec<Join> = Vec::new();
        for start in (0..size).step_by(chunk) {
            let len = chunk.min(size - start);
            let sliced: Inputs = inputs
                .iter()
                .zip(dims)
                .map(|(t, d)| match d {
                    Some(d) => usize_args::narrow(t, *d, start, len),
                    None => Ok(t.clone()),
                })
                .collect::<Result<_>>()?;
            let part = call_level(sliced, len, start)?;
            let mut leaves = Vec::new();
            part.leaves(&mut leaves);
            if first.is_none() {
                let counts = part.output_leaf_counts();
                joins = leaves
                    .iter()
                    .enumerate()
                    .map(|(k, leaf)| {
                        // The dim was checked against this rank by the first chunk.
                        let Some(d) = self.out_dim(&counts, k)? else {
                            // Not batched (out_dim None): the first chunk's leaf.
                            return Ok(Join::Unbatched(leaf.clone()));
                        };
                        let rank = leaf.ndim() as i64;
                        let d = if d < 0 { d + rank } else { d } as usize;
                        Ok(Join::Batched(Joiner::new("chunk_size", d, size)))
                    })
                    .collect::<Result<_>>()?;
                first = Some(part);
            }
            if leaves.len() != joins.len() {
                return Err(Error::Vmap(format!(
                    "chunk_size: the function returned {} tensors for the first chunk and {} for another; chunked vmap needs outputs of the same structure for every chunk",
                    joins.len(),
                    leaves.len()
                )));
            }
            for (join, leaf) in joins.iter_mut().zip(leaves) {
                if let Join::Batched(join) = join {
                    join.push(leaf, len)?;
                }
            }
        }
        let mut joins = joins.into_iter();
        let first = first.ok_or_else(|| Error::Vmap("chunk_size: no chunk ran".to_string()))?;
        first.map_leaves(&mut |_| match joins.next() {
            Some(Join::Batched(join)) => join.finish(),
            Some(Join::Unbatched(leaf)) => Ok(leaf),
            None => Err(Error::Vmap(
                "chunk_size: the output has more tensors than its first chunk".to_string(),
            )),
        })
    }

    /// The out_dim of output leaf `k`, for outputs of `counts` leaves each
    /// (`None`: the leaf is not batched).
    fn out_dim(&self, counts: &[usize], k: usize) -> Result<Option<i64>> {
        match &self.out_dims {
            OutDims::All(d) => Ok(*d),
            OutDims::Each(ds) => ds
                .get(locate(counts, k).0)
                .copied()
                .ok_or_else(|| inconsistent_tree("output", counts, &format!("at least {}", k + 1))),
        }
    }

    /// One vmap call over `size` examples, the first of which is example
    /// `offset` of the whole batch.
    fn call_level<I, O, M>(
        &self,
        args: &I,
        inputs: Inputs,
        dims: &[Option<usize>],
        size: usize,
        offset: usize,
    ) -> Result<O>
    where
        I: VmapInputs<Inner = A>,
        F: TransformFn<A, O, name::vmap, M>,
        O: VmapOutputs,
    {
        let config = LevelConfig {
            size,
            policy: self.policy,
            randomness: self.randomness,
            offset,
        };
        let guard = push_level("vmap", |id| VmapInterpreter::at_depth(id.depth(), config))?;
        let level = guard.id();
        let wrapped: Inputs = inputs
            .into_iter()
            .zip(dims)
            .map(|(t, d)| match d {
                Some(d) => Batched::wrap(t, *d, level),
                None => Ok(t),
            })
            .collect::<Result<_>>()?;
        let out = self
            .f
            .run(args.rebuild(wrapped)?)
            .map_err(|e| in_level(e, level.depth()))?;
        let counts = out.output_leaf_counts();
        if let OutDims::Each(ds) = &self.out_dims
            && ds.len() != counts.len()
        {
            return Err(Error::Vmap(format!(
                "out_dims has {} entries but the function returned {} outputs",
                ds.len(),
                counts.len()
            )));
        }
        // Each leaf of the output, in order, finished at its output's out_dim.
        let mut next = 0;
        out.map_leaves(&mut |t| {
            let k = next;
            next += 1;
            let d = self.out_dim(&counts, k)?;
            let name = || leaf_name("output", &counts, k, |o, l| out.output_leaf_path(o, l));
            finish_output(&name, t, d, level, size)
        })
    }
}

/// How the chunks of one output leaf are put together: joined along its
/// out_dim, or (out_dim None) the first chunk's leaf, the same for all.
enum Join<'a> {
    Batched(Joiner<'a>),
    Unbatched(Tensor),
}

/// A hand-written `TensorTree` whose `leaf_count` disagrees with its `leaves`
/// (or `map_leaves`): the leaves cannot be matched to their dims.
fn inconsistent_tree(kind: &str, counts: &[usize], got: &str) -> Error {
    Error::Vmap(format!(
        "the {kind}s count {} leaves ({counts:?} per {kind}) but give {got} tensors; a hand-written TensorTree impl must make leaf_count, leaves and map_leaves agree",
        counts.iter().sum::<usize>()
    ))
}

/// Which top-level argument (or output) leaf `k` of the flattened list
/// belongs to, and its index among that argument's leaves.
fn locate(counts: &[usize], mut k: usize) -> (usize, usize) {
    for (i, &n) in counts.iter().enumerate() {
        if k < n {
            return (i, k);
        }
        k -= n;
    }
    (counts.len(), k)
}

/// `input 2`, or `input 0 (.layers[1].w)` for a leaf inside an argument.
fn leaf_name(
    kind: &str,
    counts: &[usize],
    k: usize,
    path: impl Fn(usize, usize) -> String,
) -> String {
    let (arg, leaf) = locate(counts, k);
    let path = path(arg, leaf);
    if path.is_empty() {
        format!("{kind} {arg}")
    } else {
        format!("{kind} {arg} ({path})")
    }
}

/// Adds the vmap level to an error from the vmapped function, unless the error
/// already says which level it was checked at.
fn in_level(e: Error, depth: usize) -> Error {
    let says_level = matches!(
        e.root(),
        Error::InvalidArgument { level: Some(_), .. }
            | Error::Fallback { .. }
            | Error::Randomness { .. }
            | Error::RuleBug { .. }
    );
    if says_level || matches!(e, Error::InVmap { .. }) {
        return e;
    }
    Error::InVmap {
        level: depth,
        inner: Box::new(e),
    }
}

/// Resolved in_dims: one entry per leaf of the inputs (inline up to four).
type Dims = smallvec::SmallVec<[Option<usize>; 4]>;

/// The in_dim of every leaf, as given (one entry per leaf, inline up to four).
fn leaf_in_dims(
    in_dims: &InDims,
    leaves: usize,
    counts: &[usize],
) -> Result<smallvec::SmallVec<[Option<i64>; 4]>> {
    let ds = match in_dims {
        InDims::All(d) => return Ok(smallvec::smallvec![*d; leaves]),
        InDims::Each(ds) => ds,
    };
    if ds.len() != counts.len() {
        return Err(Error::Vmap(format!(
            "in_dims has {} entries but the function takes {} inputs; give one entry per input (None for an unbatched one)",
            ds.len(),
            counts.len()
        )));
    }
    let mut out = smallvec::SmallVec::with_capacity(leaves);
    for (i, (d, &n)) in ds.iter().zip(counts).enumerate() {
        match d {
            InDim::Arg(d) => out.extend(std::iter::repeat_n(*d, n)),
            InDim::Leaves(ls) if ls.len() == n => out.extend_from_slice(ls),
            InDim::Leaves(ls) => {
                return Err(Error::Vmap(format!(
                    "in_dims entry {i} gives {} leaf dims but input {i} has {n} leaves; build the entry from the argument itself with InDim::fields or InDim::per_leaf",
                    ls.len()
                )))
            }
        }
    }
    Ok(out)
}

fn resolve_in_dims(
    in_dims: &InDims,
    inputs: &[Tensor],
    counts: &[usize],
    name: &dyn Fn(usize) -> String,
) -> Result<Dims> {
    if counts.iter().sum::<usize>() != inputs.len() {
        return Err(inconsistent_tree(
            "input",
            counts,
            &inputs.len().to_string(),
        ));
    }
    let given = leaf_in_dims(in_dims, inputs.len(), counts)?;
    inputs
        .iter()
        .zip(given)
        .enumerate()
        .map(|(i, (t, d))| {
            let Some(d) = d else { return Ok(None) };
            let rank = t.ndim() as i64;
            if rank == 0 {
                return Err(Error::Vmap(format!(
                    "{} is a 0-d tensor and has no dim to batch over; give it in_dim None",
                    name(i)
                )));
            }
            if d < -rank || d >= rank {
                return Err(Error::Vmap(format!(
                    "in_dim {} of {} is out of range for its shape {:?} (valid: {}..={})",
                    show_dim(d),
                    name(i),
                    t.shape(),
                    -rank,
                    rank - 1
                )));
            }
            Ok(Some(if d < 0 { d + rank } else { d } as usize))
        })
        .collect()
}

fn batch_size(
    inputs: &[Tensor],
    dims: &[Option<usize>],
    explicit: Option<usize>,
    name: &dyn Fn(usize) -> String,
) -> Result<usize> {
    // (leaf, in_dim, size) of every batched leaf.
    let sizes = || {
        inputs
            .iter()
            .zip(dims)
            .enumerate()
            .filter_map(|(i, (t, d))| d.map(|d| (i, d, t.shape()[d])))
    };
    let describe = || {
        sizes()
            .map(|(i, d, n)| format!("{} has size {n} at in_dim {d}", name(i)))
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

/// Moves the batch dim at `level` of an output leaf (`name()` for messages)
/// to `out_dim`, broadcasting a leaf that does not depend on the batch. With
/// `out_dim` None the leaf is returned as it is, and must not be batched.
fn finish_output(
    name: &dyn Fn() -> String,
    t: &Tensor,
    out_dim: Option<i64>,
    level: LevelId,
    size: usize,
) -> Result<Tensor> {
    let Some(out_dim) = out_dim else {
        if Batched::at(t, level).is_some() {
            return Err(Error::Vmap(format!(
                "{} has out_dim None but depends on the batch (it is batched at this level, of {size} \
                 examples); out_dims None is for outputs that are the same for every example: give it a dim",
                name()
            )));
        }
        return match t.level() {
            Some(l) if l.depth() >= level.depth() => Err(dispatch::escaped(t)),
            _ => Ok(t.clone()),
        };
    };
    let rank = t.ndim() as i64 + 1;
    if out_dim < -rank || out_dim >= rank {
        return Err(Error::Vmap(format!(
            "out_dim {} of {} is out of range: the output has logical shape {:?}, so with its batch dim it has {rank} dims (valid: {}..={})",
            show_dim(out_dim),
            name(),
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
                "{} does not depend on the batch and is repeated {size} times: {e}",
                name()
            ))
        }),
    }
}
