//! Random ops under vmap: each level's randomness policy.
//!
//! A random op (its table says `random = true`; it draws from the stream its
//! `int seed` argument names) reaches every live vmap level, also when none
//! of its tensors is batched there (`rand` has no tensor at all): the vmap
//! interpreter [claims](crate::dispatch::Interpreter::claims_random) random
//! op calls. At a level:
//!
//! * under [`Randomness::Error`] the call fails, naming the op and the fix;
//! * a composite random op (`rand`, `randn`, `bernoulli`, `dropout`) runs its
//!   decomposition, whose random constituent (`random_key`) comes back here;
//! * a random primitive with nothing batched at this level, under
//!   [`Randomness::Same`], is passed on to the levels below: one draw, not
//!   batched here;
//! * otherwise the op runs once per example, under `Same` with the seed as
//!   given, under `Different` with example `i`'s seed derived from the seed
//!   and `i`'s index in the whole batch. For `random_key` (the only built-in
//!   random primitive) that loop *is* the batching: it builds the batch of
//!   keys that the keyed ops (`random_uniform`, `random_normal`) then draw from
//!   with their batching rules.

use crate::core::random::derive_seed;
use crate::core::value::{Arg, Outs, TensorMeta};
use crate::dispatch::{self, below_level, call_entry};
use crate::registry::{DecomposeVmap, OpEntry};
use crate::schema::{ArgType, OpKind};
use crate::{Error, LevelId, Result, Tensor};

use super::batched::Batched;
use super::fallback;
use super::interpreter::VmapInterpreter;

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

/// How the per-example loop sets each example's seed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seeds {
    /// As given (not a random op, or the `Same` policy).
    AsGiven,
    /// Example `i`'s seed is `derive(seed, offset + i)`.
    Derived {
        /// The seed argument's position.
        arg: usize,
        /// The index of the call's first example in the whole batch.
        offset: usize,
    },
}

impl Seeds {
    /// The arguments of example `i`, whose tensors are already selected.
    pub(crate) fn apply(self, mut args: Vec<Arg<Tensor>>, i: usize) -> Vec<Arg<Tensor>> {
        if let Seeds::Derived { arg, offset } = self
            && let Some(Arg::Int(seed)) = args.get(arg)
        {
            let index = offset.saturating_add(i) as u64;
            args[arg] = Arg::Int(derive_seed(*seed, index));
        }
        args
    }
}

/// The position of a random op's `int seed` argument (the op table checks
/// that a random op has one).
fn seed_arg(entry: &OpEntry) -> Result<usize> {
    entry
        .schema
        .args
        .iter()
        .position(|a| a.name == "seed" && a.ty == ArgType::Int && !a.optional)
        .ok_or_else(|| Error::NotImplemented {
            op: entry.name().to_string(),
            message: "a random op needs an `int seed` argument".to_string(),
        })
}

/// Errors if this level or a vmap level below it that the op will reach
/// refuses random ops, so the error names the op the user called rather than
/// one of its constituents. (A level whose fallback loop is running the
/// current example is out of reach: the example is below it.)
fn check_policies(entry: &OpEntry, level: LevelId) -> Result<()> {
    let below = (1..level.depth()).filter(|&d| dispatch::reaches_random(d));
    for depth in std::iter::once(level.depth()).chain(below.rev()) {
        let Some((_, interp)) = dispatch::level_at(depth) else {
            continue;
        };
        if let Some(v) = interp.as_any().downcast_ref::<VmapInterpreter>()
            && v.randomness() == Randomness::Error
        {
            return Err(Error::Randomness {
                op: entry.name().to_string(),
                transform: "vmap",
                level: depth,
            });
        }
    }
    Ok(())
}

/// A random op at vmap level `level` (see the module documentation).
pub(super) fn process(
    interp: &VmapInterpreter,
    entry: &'static OpEntry,
    args: &[Arg<Tensor>],
    level: LevelId,
    metas: Option<&[TensorMeta]>,
) -> Result<Outs<Tensor>> {
    check_policies(entry, level)?;
    let batched_here = args
        .iter()
        .flat_map(Arg::tensors)
        .any(|t| Batched::at(t, level).is_some());
    if entry.schema.kind == OpKind::Composite
        && let Some((f, DecomposeVmap::Decompose)) = entry.decomposition
    {
        return f(args);
    }
    let seeds = match interp.randomness() {
        Randomness::Same if !batched_here => {
            return below_level(level, || call_entry(entry, args));
        }
        Randomness::Same | Randomness::Error => Seeds::AsGiven,
        Randomness::Different => Seeds::Derived {
            arg: seed_arg(entry)?,
            offset: interp.offset(),
        },
    };
    // With batched inputs this is the fallback loop, under its policy; with
    // none it is how each example gets its seed, not a missing rule.
    let policy = if batched_here {
        interp.fallback_policy()
    } else {
        Some(fallback::FallbackPolicy::Silent)
    };
    fallback::run(entry, args, level, interp.size(), policy, metas, seeds)
}
