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

use crate::core::value::{Arg, Outs, TensorMeta};
use crate::dispatch::{self, below_level, call_entry};
use crate::registry::{DecomposeVmap, OpEntry};
use crate::schema::{ArgType, OpKind};
use crate::{Error, LevelId, Result, Tensor};

use super::batched::Batched;
use super::fallback::{self, Seeds};
use super::level::{FallbackPolicy, Randomness, VmapInterpreter};

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
        Some(FallbackPolicy::Silent)
    };
    fallback::run(entry, args, level, interp.size(), policy, metas, seeds)
}
