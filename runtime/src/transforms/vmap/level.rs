//! The state of one vmap level, which the interpreter, the fallback loop and
//! the random ops all read: the level's batch size, its [`FallbackPolicy`],
//! its [`Randomness`] policy, and the index of its first example in the whole
//! batch. [`VmapInterpreter`] holds them (its [`Interpreter`] impl is in
//! `interpreter`); [`level_size`] reads the batch size of a live level from
//! the level stack.
//!
//! [`Interpreter`]: crate::dispatch::Interpreter

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::dispatch;
use crate::{Error, LevelId, Result};

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

/// What a vmap level does with a random op (`rand`, `randn`, `bernoulli`,
/// `dropout`, and any op an op table marks `random = true`), set per vmap
/// with [`Vmap::randomness`](crate::Vmap::randomness).
///
/// Each vmap level has its own policy; a nested vmap does not inherit its
/// outer vmap's. Draws are counter-based: element `k` of a draw from seed `s`
/// is a pure function of `(s, k)`, so every policy gives the same numbers for
/// any [`chunk_size`](crate::Vmap::chunk_size), with or without the `rayon`
/// feature, and whether the op is batched by a rule or by the fallback loop.
///
/// ```
/// use batchrules::{ops, vmap, DType, Randomness, Tensor};
///
/// let x = Tensor::from(ndarray::Array::<f64, _>::zeros((4, 3)).into_dyn());
/// let noisy = |x: Tensor| ops::add(&x, &ops::randn(&[3], 7, DType::F64)?);
///
/// // The default refuses: should the four examples draw alike or not?
/// let err = vmap(noisy).call(&x).unwrap_err();
/// assert!(err.to_string().contains("randn"));
///
/// // Different: each example draws its own noise.
/// let y = vmap(noisy).randomness(Randomness::Different).call(&x)?;
/// let rows = y.to_array::<f64>()?;
/// assert_ne!(rows.index_axis(ndarray::Axis(0), 0), rows.index_axis(ndarray::Axis(0), 1));
/// // ... and the same noise for any chunk size.
/// let chunked = vmap(noisy).randomness(Randomness::Different).chunk_size(3).call(&x)?;
/// assert_eq!(chunked.to_array::<f64>()?, rows);
///
/// // Same: one draw, shared by every example.
/// let z = vmap(noisy).randomness(Randomness::Same).call(&x)?.to_array::<f64>()?;
/// assert_eq!(z.index_axis(ndarray::Axis(0), 0), z.index_axis(ndarray::Axis(0), 3));
/// # Ok::<(), batchrules::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Randomness {
    /// A random op at this level is an error ([`Error::Randomness`], naming
    /// the op and the fix). The default, as in functorch: vmap cannot know
    /// whether the examples should draw alike.
    #[default]
    Error,
    /// Each example draws its own stream: example `i` draws from the seed
    /// derived from the op's seed and `i`, its index in the whole batch (so a
    /// chunked vmap gives the same numbers). The result is batched.
    Different,
    /// One draw, shared by every example (as if the op were called outside
    /// the vmap). A random op whose tensor inputs are batched (`bernoulli`
    /// with a batched `p`) uses the same random numbers for every example.
    Same,
}

/// The state of one vmap level.
///
/// The fields are cells so that one allocation serves every vmap call at the
/// same depth on a thread (see [`VmapInterpreter::at_depth`]): levels are
/// strictly nested, so at most one vmap call uses it at a time, and a tensor
/// that escaped an earlier call is recognized by its level's token, never by
/// this object.
pub(crate) struct VmapInterpreter {
    /// The batch size.
    size: Cell<usize>,
    /// The fallback policy of this vmap call (`None`: the global one).
    policy: Cell<Option<FallbackPolicy>>,
    /// What a random op at this level does.
    randomness: Cell<Randomness>,
    /// The index of this call's first example in the whole batch (a chunk's
    /// start), from which `Randomness::Different` derives each example's seed.
    offset: Cell<usize>,
}

/// How one vmap call sets up its level.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LevelConfig {
    pub(crate) size: usize,
    pub(crate) policy: Option<FallbackPolicy>,
    pub(crate) randomness: Randomness,
    pub(crate) offset: usize,
}

thread_local! {
    /// One interpreter per depth, reused by every vmap call at that depth.
    static BY_DEPTH: RefCell<Vec<Rc<VmapInterpreter>>> = const { RefCell::new(Vec::new()) };
}

impl VmapInterpreter {
    /// The interpreter for a vmap call at `depth` on this thread, set up as
    /// `config` says.
    pub(crate) fn at_depth(depth: usize, config: LevelConfig) -> Rc<VmapInterpreter> {
        BY_DEPTH.with(|pool| {
            let mut pool = pool.borrow_mut();
            while pool.len() < depth {
                pool.push(Rc::new(VmapInterpreter {
                    size: Cell::new(0),
                    policy: Cell::new(None),
                    randomness: Cell::new(Randomness::Error),
                    offset: Cell::new(0),
                }));
            }
            let interp = Rc::clone(&pool[depth - 1]);
            interp.size.set(config.size);
            interp.policy.set(config.policy);
            interp.randomness.set(config.randomness);
            interp.offset.set(config.offset);
            interp
        })
    }

    /// The batch size of the current vmap call at this level.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        self.size.get()
    }

    /// The fallback policy of this vmap call (`None`: the global one).
    #[inline]
    pub(crate) fn fallback_policy(&self) -> Option<FallbackPolicy> {
        self.policy.get()
    }

    /// The randomness policy of this vmap call.
    #[inline]
    pub(crate) fn randomness(&self) -> Randomness {
        self.randomness.get()
    }

    /// The index of this call's first example in the whole batch.
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.offset.get()
    }
}

/// The batch size of the live vmap level `level`.
pub(crate) fn level_size(level: LevelId) -> Result<usize> {
    dispatch::interpreter(level)
        .and_then(|i| {
            i.as_any()
                .downcast_ref::<VmapInterpreter>()
                .map(VmapInterpreter::size)
        })
        .ok_or_else(|| {
            Error::Vmap(format!(
                "level {} is not a live vmap level (a batched tensor was used outside the vmap that created it)",
                level.depth()
            ))
        })
}
