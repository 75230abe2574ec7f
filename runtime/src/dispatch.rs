//! The dispatcher: what happens when a typed op function is called.

use crate::registry::{self, OpEntry};
use crate::schema::{OpKind, OpTable};
use crate::value::{Arg, Outs, TensorMeta};
use crate::{Error, Result, Tensor};

/// Entry point of every generated op function: dispatches op `local` of `table`.
#[doc(hidden)]
pub fn call(table: &'static OpTable, local: usize, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    let entry = registry::entry(table, local)?;
    call_entry(entry, args)
}

pub(crate) fn call_entry(entry: &'static OpEntry, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    match top_level(args) {
        None => call_dense(entry, args),
        Some(level) => crate::vmap::call_batched(entry, args, level),
    }
}

/// The highest vmap level among the tensors of `args`.
fn top_level(args: &[Arg<Tensor>]) -> Option<usize> {
    args.iter()
        .flat_map(|a| a.tensors())
        .filter_map(Tensor::vmap_level)
        .max()
}

/// Runs the op's meta on the (logical) shapes of `args`. Errors name the op and
/// the vmap level.
pub(crate) fn run_meta(
    entry: &OpEntry,
    args: &[Arg<Tensor>],
    level: Option<usize>,
) -> Result<Option<Outs<TensorMeta>>> {
    let Some(meta) = entry.meta else {
        return Ok(None);
    };
    #[cfg(feature = "bench-internals")]
    if !bench::META_CHECKS.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(None);
    }
    let metas = args
        .iter()
        .map(|a| a.try_map(|t| Ok(TensorMeta::of(t))))
        .collect::<Result<smallvec::SmallVec<[_; 4]>>>()?;
    meta(&metas)
        .map(Some)
        .map_err(|e| name_error(e, entry.name(), level))
}

/// Fills the op name (unless an inner op already named itself) and, for meta
/// errors, the vmap level into an error a registered function returned.
pub(crate) fn name_error(e: Error, op: &str, at: Option<usize>) -> Error {
    let named = |existing: String| {
        if existing.is_empty() {
            op.to_string()
        } else {
            existing
        }
    };
    match e {
        Error::InvalidArgument {
            op: existing,
            message,
            level,
        } => Error::InvalidArgument {
            op: named(existing),
            message,
            level: level.or(at),
        },
        Error::DType {
            op: existing,
            message,
        } => Error::DType {
            op: named(existing),
            message,
        },
        other => other,
    }
}

/// The dense path: meta once, then the kernel (or the composite's decomposition).
fn call_dense(entry: &'static OpEntry, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    run_meta(entry, args, None)?;
    let f = match entry.schema.kind {
        OpKind::Primitive => entry.kernel,
        OpKind::Composite => entry.decomposition.map(|(f, _)| f),
    };
    let f = f.ok_or_else(|| Error::NotImplemented {
        op: entry.name().to_string(),
        message: "no kernel or decomposition is registered".to_string(),
    })?;
    f(args).map_err(|e| name_error(e, entry.name(), None))
}

/// Switches that exist only to measure what the checks cost (cargo feature
/// `bench-internals`; never enable it in production: it turns off correctness
/// checks).
#[cfg(feature = "bench-internals")]
pub mod bench {
    use std::sync::atomic::{AtomicBool, Ordering};

    pub(crate) static META_CHECKS: AtomicBool = AtomicBool::new(true);
    pub(crate) static FORCE_FALLBACK: AtomicBool = AtomicBool::new(false);

    /// Turns meta functions off (`false`) or on: without them nothing is
    /// checked, and the rule self-check has nothing to compare with.
    pub fn set_meta_checks(on: bool) {
        META_CHECKS.store(on, Ordering::Relaxed);
    }

    /// Makes vmap use the fallback loop even for ops with a batching rule.
    pub fn set_force_fallback(on: bool) {
        FORCE_FALLBACK.store(on, Ordering::Relaxed);
    }
}
