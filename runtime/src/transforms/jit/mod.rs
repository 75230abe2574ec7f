//! `jit`: trace a function once per input signature, then replay the planned
//! program.
//!
//! [`jit`] pushes a level at the bottom of the stack, below every level the
//! function pushes, so it sees exactly the op calls that eager execution
//! would send to the dense kernels (after vmap's batching rules, grad's
//! backward pass, composites' decompositions). It records them with their
//! output metas instead of running them (`trace.rs`), optimizes the recording
//! and plans when each value is freed (`program.rs`, [`Program`]), and replays the
//! program's kernels on the inputs of every call with the same signature.
//!
//! In the `transforms` layer (`runtime/src/transforms/`). It may use the
//! `core`, `table` and `dispatch` layers; in its own layer, `transform_fn`,
//! `batching`, `vmap`, `grad` and `forward`. `tests/suite/layers.rs` enforces
//! it.

mod program;
mod trace;

use std::any::Any;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

pub use program::{PassCounts, Program};

use crate::core::alloc::limit_generation;
use crate::dispatch::{self, push_level};
use crate::transform_fn::{self as name, OneArgument, TransformFn};
use crate::vmap::{fallback_policy, FallbackPolicy, Inputs, VmapInputs};
use crate::{DType, Error, Result, Tensor, TensorTree};

use trace::{JitInterpreter, Recorder};

/// How many input signatures a [`Jit`] keeps programs for, unless
/// [`Jit::cache_size`] says otherwise.
pub const DEFAULT_CACHE_SIZE: usize = 8;

/// A function prepared for tracing and replay; see [`jit`].
#[must_use = "`jit(f)` only prepares the transform: keep it and call `.call(args)`"]
pub struct Jit<F, A, O, M> {
    f: F,
    /// The function's argument and output, and its arity (fixed by `jit`).
    types: PhantomData<fn(A) -> (O, M)>,
    capacity: usize,
    cache: Mutex<Cache>,
}

/// The programs of the most recently used signatures, oldest first.
#[derive(Default)]
struct Cache {
    plans: Vec<(Signature, Arc<Plan>)>,
    traces: usize,
}

/// What a program is specific to: the tree structure, shapes and dtypes of
/// the inputs, and the process-wide settings a trace reads (the vmap fallback
/// policy, and the allocation limit the metas checked).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Signature {
    counts: Vec<usize>,
    leaves: Vec<(Vec<usize>, DType)>,
    policy: FallbackPolicy,
    limit: usize,
}

/// A program and the structure of the function's output (its leaves
/// replaced by placeholders), which a replay fills.
struct Plan {
    program: Program,
    template: Box<dyn Any + Send + Sync>,
}

/// Traces `f` once per input signature and replays the planned program,
/// as `jax.jit` does.
///
/// The first [`Jit::call`] with a given signature (the inputs' tree
/// structure, shapes and dtypes) runs `f` with traced tensors, which carry a
/// shape and a dtype and no data, through every transform `f` applies. The
/// op calls that reach the bottom of the stack (what eager execution would
/// run as kernels) are recorded with their metas, so a call that is invalid
/// fails as it does eagerly. The recording is then optimized: steps whose
/// arguments are all constants are computed once, equal steps are merged,
/// and steps no output depends on are dropped (the loss value of
/// `vmap(grad(loss))`, say). Each value is freed after its last use, and a
/// pointwise op (`exp`, `mul`, ...) whose first operand is used for the last
/// time there writes its result over that operand's buffer, when nobody
/// else holds it (the planned steps say `in place of`). A replay takes the
/// output buffers of its kernels, small ones too, from the thread's buffer
/// cache, which the previous replay filled. Later
/// calls with the same signature replay the program: the same kernels on the
/// same values in the same order, so the results equal eager execution bit
/// for bit, without the cost of running the transforms again. (One
/// exception: the sign and payload bits of a NaN, which the in-place loops
/// and LLVM's freedom to commute float additions and multiplications may
/// propagate from the other operand; every other bit, `-0.0` included,
/// agrees.) The programs
/// of the last [`DEFAULT_CACHE_SIZE`] signatures are kept (see
/// [`Jit::cache_size`]); keep the `Jit` value to reuse them.
///
/// ```
/// use batchrules::{grad, jit, ops, vmap, Tensor};
/// use ndarray::array;
///
/// // Per-example gradients of a squared error, traced once.
/// let loss = |(w, x): (Tensor, Tensor)| {
///     let wx = ops::mul(&w, &x)?;
///     ops::sum(&ops::mul(&wx, &wx)?, None, false)
/// };
/// let per_example = jit(move |(w, xs): (Tensor, Tensor)| {
///     vmap(|(w, x): (Tensor, Tensor)| grad(loss).call((&w, &x)))
///         .in_dims([None, Some(0)])
///         .call((&w, &xs))
/// });
/// let w = Tensor::from(array![1.0f64, 2.0].into_dyn());
/// let xs = Tensor::from(array![[1.0f64, 0.0], [0.5, 1.0], [2.0, 3.0]].into_dyn());
/// let g = per_example.call((&w, &xs))?;
/// // d/dw sum((w x)^2) = 2 w x^2
/// assert_eq!(g.to_array::<f64>()?, array![[2.0, 0.0], [0.5, 4.0], [8.0, 36.0]].into_dyn());
///
/// // The program it replays: the forward's loss value is not an output, so
/// // the steps that only it needed are gone.
/// let program = per_example.lower((&w, &xs))?;
/// println!("{program}");
/// assert!(program.passes().dead > 0);
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// Code that reads tensor values while it runs (to branch on them, or to
/// copy them out) cannot be traced: the call returns an error that names
/// what read the data. Non-tensor values the function computes (a seed, a
/// dim, a scalar) are fixed when it is traced, as in `jax.jit`: the function
/// must compute the same ones for every call with the same signature.
///
/// `jit` is meant to be the outermost transform. Called inside another
/// transform (`vmap(jit(f))`, `grad(jit(f))`), or on tensors of a
/// transform level, it runs `f` eagerly through the stack, with the same
/// results as without `jit`.
pub fn jit<F, A, O, M>(f: F) -> Jit<F, A, O, M>
where
    F: TransformFn<A, O, name::jit, M>,
    M: OneArgument<name::jit>,
{
    let cache = Mutex::default();
    Jit {
        capacity: DEFAULT_CACHE_SIZE,
        cache,
        types: PhantomData,
        f,
    }
}

impl<F, A, O, M> std::fmt::Debug for Jit<F, A, O, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("cache_size", &self.capacity)
            .field("traces", &self.traces())
            .finish_non_exhaustive()
    }
}

impl<F, A, O, M> Jit<F, A, O, M> {
    /// Sets how many input signatures keep their programs (the least
    /// recently used is dropped first); the default is
    /// [`DEFAULT_CACHE_SIZE`]. `call` errors if `size` is 0.
    pub fn cache_size(mut self, size: usize) -> Self {
        self.capacity = size;
        self
    }

    /// How many times the function has been traced: once per signature
    /// that was not in the cache.
    pub fn traces(&self) -> usize {
        self.lock().traces
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<F, A, O, M> Jit<F, A, O, M>
where
    F: TransformFn<A, O, name::jit, M>,
    O: TensorTree + Send + Sync + 'static,
{
    /// Runs the function: a replay of the program for the signature of
    /// `args`, traced first if it is new. `args` takes the forms
    /// [`Vmap::call`](crate::Vmap::call) takes (see [`VmapInputs`]).
    ///
    /// Errors as the function would eagerly (the metas run while tracing),
    /// if the function reads tensor data, or if [`Jit::cache_size`] is 0.
    pub fn call<I: VmapInputs<Inner = A>>(&self, args: I) -> Result<O> {
        let inputs = args.tensors();
        let Some(plan) = self.planned(&args, &inputs)? else {
            return self.f.run(args.rebuild(inputs)?);
        };
        let template = plan.template.downcast_ref::<O>().ok_or_else(|| {
            Error::Tensor("jit: the program's output has another type (a bug)".to_string())
        })?;
        // A kernel that refuses the values (an index out of range, say)
        // gets the error eager execution gives, which names the ops the
        // failing one ran inside of.
        let outs = match plan.program.run(&inputs) {
            Ok(outs) => outs,
            Err(replayed) => return Err(self.eager_error(&args, &inputs, replayed)),
        };
        let mut outs = outs.into_iter();
        template.map_leaves(&mut |_| {
            outs.next().ok_or_else(|| {
                Error::Tensor("jit: the program returned too few outputs (a bug)".to_string())
            })
        })
    }

    /// The program [`Jit::call`] replays for the signature of `args`
    /// (traced now if it is new). Its `Display` prints it, as
    /// `jax.make_jaxpr` does; see [`jit`].
    ///
    /// Errors as [`Jit::call`] does, and if `jit` would run eagerly here
    /// (inside another transform): then there is no program.
    pub fn lower<I: VmapInputs<Inner = A>>(&self, args: I) -> Result<Program> {
        let inputs = args.tensors();
        match self.planned(&args, &inputs)? {
            Some(plan) => Ok(plan.program.clone()),
            None => Err(Error::Tensor(
                "jit(..).lower: inside another transform, jit runs the function eagerly, \
                 so there is no program; call lower outside every transform"
                    .to_string(),
            )),
        }
    }

    /// The plan for `inputs`, or `None` where `jit` runs the function
    /// eagerly: inside another transform, or on tensors of a level.
    fn planned<I: VmapInputs<Inner = A>>(
        &self,
        args: &I,
        inputs: &Inputs,
    ) -> Result<Option<Arc<Plan>>> {
        if dispatch::depth() > 0 || inputs.iter().any(|t| t.level().is_some()) {
            return Ok(None);
        }
        self.plan(args, inputs).map(Some)
    }

    /// The error eager execution gives for `args` (with leaves `inputs`),
    /// or `otherwise` if it runs.
    fn eager_error<I: VmapInputs<Inner = A>>(
        &self,
        args: &I,
        inputs: &Inputs,
        otherwise: Error,
    ) -> Error {
        match args.rebuild(inputs.clone()).and_then(|a| self.f.run(a)) {
            Err(eager) => eager,
            Ok(_) => otherwise,
        }
    }

    /// The plan for the signature of `inputs`, from the cache or traced.
    fn plan<I: VmapInputs<Inner = A>>(&self, args: &I, inputs: &Inputs) -> Result<Arc<Plan>> {
        if self.capacity == 0 {
            return Err(Error::Tensor(
                "jit: cache_size(0): the cache must hold at least one program".to_string(),
            ));
        }
        let signature = Signature {
            counts: args.arg_leaf_counts().to_vec(),
            leaves: inputs
                .iter()
                .map(|t| (t.shape().to_vec(), t.dtype()))
                .collect(),
            policy: fallback_policy(),
            limit: limit_generation(),
        };
        {
            let mut cache = self.lock();
            if let Some(i) = cache.plans.iter().position(|(s, _)| *s == signature) {
                let entry = cache.plans.remove(i);
                let plan = Arc::clone(&entry.1);
                cache.plans.push(entry);
                return Ok(plan);
            }
        }
        let plan = match self.trace(args, inputs) {
            Ok(plan) => Arc::new(plan),
            // An error while tracing: the function's own error, as eager
            // execution gives it (a meta error names the levels the function
            // pushed, which tracing shifts by one), or, if the function runs
            // eagerly, the tracing error (it read tensor data).
            Err(traced) => return Err(self.eager_error(args, inputs, traced)),
        };
        let mut cache = self.lock();
        cache.traces += 1;
        if cache.plans.len() >= self.capacity {
            let drop = cache.plans.len() + 1 - self.capacity;
            cache.plans.drain(..drop);
        }
        cache.plans.push((signature, Arc::clone(&plan)));
        Ok(plan)
    }

    /// Traces the function on `inputs` and plans the program.
    fn trace<I: VmapInputs<Inner = A>>(&self, args: &I, inputs: &Inputs) -> Result<Plan> {
        let recorder = Arc::new(Recorder::default());
        let (ids, template) = {
            let interp = Rc::new(JitInterpreter {
                recorder: Arc::clone(&recorder),
            });
            let guard = push_level("jit", |_| interp)?;
            let level = guard.id();
            let traced: Inputs = inputs.iter().map(|t| recorder.input(t, level)).collect();
            let out = self.f.run(args.rebuild(traced)?)?;
            let mut leaves = Vec::new();
            out.leaves(&mut leaves);
            let ids = leaves
                .iter()
                .map(|t| recorder.value_of(t, level))
                .collect::<Result<Vec<_>>>()?;
            let template = out.map_leaves(&mut |_| Ok(Tensor::scalar(false)))?;
            (ids, template)
        };
        let program = Program::plan(recorder.finish(), ids)?;
        Ok(Plan {
            program,
            template: Box::new(template),
        })
    }
}
