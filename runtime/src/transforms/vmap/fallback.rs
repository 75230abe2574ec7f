//! The fallback loop: an op without a batching rule (or a composite that opted
//! out of its decomposition) runs once per example and the results are
//! stacked. The fallback policy (the level's, or else the global one set here)
//! says whether that is allowed, and whether it logs a warning. A random op
//! runs in the same loop, each example with the seed [`Seeds`] gives it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use crate::core::rng::derive_seed;
use crate::core::value::{Arg, Outs, TensorMeta};
use crate::dispatch::{self, below_level, call_entry};
use crate::registry::OpEntry;
use crate::{Error, LevelId, Result, Tensor};

use super::batched::{self, Batched};
use super::level::{level_size, FallbackPolicy};

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

std::thread_local! {
    /// This thread's fallback policy while a [`FallbackPolicyScope`] lives.
    static SCOPED_POLICY: std::cell::Cell<Option<FallbackPolicy>> =
        const { std::cell::Cell::new(None) };
}

/// The fallback policy of a vmap that does not set its own: this thread's
/// scoped one ([`scoped_fallback_policy`]) while a scope lives, else the
/// global one ([`set_fallback_policy`]).
pub fn fallback_policy() -> FallbackPolicy {
    if let Some(policy) = SCOPED_POLICY.with(std::cell::Cell::get) {
        return policy;
    }
    match GLOBAL_POLICY.load(Ordering::Relaxed) {
        1 => FallbackPolicy::Silent,
        2 => FallbackPolicy::Error,
        _ => FallbackPolicy::Warn,
    }
}

/// Sets the fallback policy of this thread's vmaps that do not set their own
/// (`Vmap::fallback`) until the returned scope is dropped, whatever the
/// global one: a test can require batching rules (`FallbackPolicy::Error`)
/// without changing the policy of the other tests of its process. Scopes
/// nest; dropping one restores the policy it replaced.
///
/// ```
/// use batchrules::{fallback_policy, scoped_fallback_policy, FallbackPolicy};
///
/// let outer = fallback_policy();
/// {
///     let _scope = scoped_fallback_policy(FallbackPolicy::Error);
///     assert_eq!(fallback_policy(), FallbackPolicy::Error);
///     // Another thread still has the global policy.
///     let there = std::thread::spawn(fallback_policy).join().unwrap();
///     assert_eq!(there, outer);
/// }
/// assert_eq!(fallback_policy(), outer);
/// ```
pub fn scoped_fallback_policy(policy: FallbackPolicy) -> FallbackPolicyScope {
    let previous = SCOPED_POLICY.with(|p| p.replace(Some(policy)));
    FallbackPolicyScope {
        previous,
        _this_thread: std::marker::PhantomData,
    }
}

/// This thread's fallback policy until dropped: see [`scoped_fallback_policy`].
#[must_use = "the policy holds only while the scope lives: bind it with `let _scope = ...`"]
#[derive(Debug)]
pub struct FallbackPolicyScope {
    previous: Option<FallbackPolicy>,
    /// A scope sets its own thread's policy, so it stays on that thread.
    _this_thread: std::marker::PhantomData<*const ()>,
}

impl Drop for FallbackPolicyScope {
    fn drop(&mut self) {
        SCOPED_POLICY.with(|p| p.set(self.previous));
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

/// The fallback: applies the policy, then calls the op once per example (with
/// the seed `seeds` gives it, for a random op) and stacks the results.
///
/// Each example runs below `level` (see [`below_level`]): a random op inside
/// it draws at the levels below, as one example outside this vmap would.
pub(crate) fn run(
    entry: &'static OpEntry,
    args: &[Arg<Tensor>],
    level: LevelId,
    size: usize,
    policy: Option<FallbackPolicy>,
    metas: Option<&[TensorMeta]>,
    seeds: Seeds,
) -> Result<Outs<Tensor>> {
    match policy.unwrap_or_else(fallback_policy) {
        FallbackPolicy::Error => {
            return Err(Error::Fallback {
                op: entry.name().to_string(),
                level: level.depth(),
            })
        }
        FallbackPolicy::Warn => warn_once(entry),
        FallbackPolicy::Silent => {}
    }
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
                a.try_map(|t| match Batched::at(t, level) {
                    Some(b) => b.inner.select(b.bdim, i),
                    None => Ok(t.clone()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let args = seeds.apply(args, i);
        below_level(level, || call_entry(entry, &args))
    };
    let per_example: Vec<Outs<Tensor>> = if parallel(entry, args, level, size) {
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            crate::core::spin::region();
            (0..size)
                .into_par_iter()
                .map(example)
                .collect::<Result<_>>()?
        }
        #[cfg(not(feature = "rayon"))]
        unreachable!("parallel is false without the rayon feature")
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
            let stacked = batched::stack(&column, 0, &level_size).map_err(|e| {
                Error::Vmap(format!(
                    "op `{}` (fallback loop): output {j} differs between examples: {e}",
                    entry.name()
                ))
            })?;
            Batched::wrap(stacked, 0, level)
        })
        .collect()
}

/// Whether the fallback may run its examples on several threads: only with the
/// `rayon` feature, and only when every example is dense (nothing at a lower
/// level), because transform levels live on the calling thread. A random op
/// also needs no level below to claim it (a vmap below applies its own
/// randomness policy). The seeds do not depend on the thread an example runs
/// on, so neither do the draws.
fn parallel(entry: &OpEntry, args: &[Arg<Tensor>], level: LevelId, size: usize) -> bool {
    let below_claims_random = || {
        (1..level.depth()).any(|d| dispatch::level_at(d).is_some_and(|(_, i)| i.claims_random()))
    };
    cfg!(feature = "rayon")
        && size > 1
        && crate::core::threads::parallel()
        && !(entry.schema.random && below_claims_random())
        && args.iter().flat_map(Arg::tensors).all(|t| match t.level() {
            None => true,
            Some(_) => Batched::at(t, level).is_some_and(|b| b.inner.level().is_none()),
        })
}

fn empty_batch(meta: &TensorMeta, level: LevelId) -> Result<Tensor> {
    let mut shape = vec![0];
    shape.extend_from_slice(meta.shape());
    Batched::wrap(Tensor::empty(&shape, meta.dtype())?, 0, level)
}
