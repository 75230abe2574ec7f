//! The meta check of every op call, and the per-thread cache that makes it
//! cheap: metas are pure functions of shapes, dtypes and scalar arguments.

use crate::core::alloc::{check_alloc, limit_generation};
use crate::core::value::{Arg, Outs, TensorMeta};
use crate::registry::{MetaFn, OpEntry};
use crate::{Result, Tensor};

use super::name_error;

/// Runs the op's meta on the (logical) shapes of `args`. Errors name the op and
/// the transform level `at` (depth and transform name), if any.
///
/// Metas are pure functions of shapes, dtypes and scalar arguments, so each
/// thread remembers, per op, the last successful call: a call with the same
/// signature reuses its output metas instead of running the meta again. (Errors
/// are never cached, so an invalid call always gets its full message.)
///
/// Returns the output metas when `want_outputs` (and the op has a meta).
pub(crate) fn run_meta(
    entry: &OpEntry,
    args: &[Arg<Tensor>],
    at: Option<(usize, &'static str)>,
    want_outputs: bool,
) -> Result<Option<Outs<TensorMeta>>> {
    let Some(meta) = entry.meta else {
        return Ok(None);
    };
    #[cfg(feature = "bench-internals")]
    if !super::bench::META_CHECKS.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(None);
    }
    let hit = META_CACHE.with(|c| c.borrow().lookup(entry.id, meta, args, want_outputs));
    if let Some(outs) = hit {
        return Ok(outs);
    }
    let metas = args
        .iter()
        .map(|a| a.try_map(|t| Ok(TensorMeta::of(t))))
        .collect::<Result<MetaArgs>>()?;
    let outs = meta(&metas).map_err(|e| name_error(e, entry.name(), at))?;
    // The allocation guard, once per signature: no output may be too large to
    // allocate. (Under vmap the shapes here are logical; the rule's and the
    // fallback's own op calls are checked at their physical shapes.)
    for out in &outs {
        check_alloc(out.shape(), out.dtype()).map_err(|e| name_error(e, entry.name(), at))?;
    }
    META_CACHE.with(|c| c.borrow_mut().store(entry.id, meta, metas, &outs));
    Ok(want_outputs.then_some(outs))
}

type MetaArgs = smallvec::SmallVec<[Arg<TensorMeta>; 4]>;

/// Per op id, the meta function, arguments and outputs of the last few
/// successful meta calls (one op is typically called with a few signatures: its
/// logical shapes at each vmap level and the physical shapes its rule uses).
/// The function is part of the key because op ids are only unique within one
/// registry.
struct MetaCache {
    slots: Vec<Slots>,
    /// The allocation limit's generation the remembered outputs were checked
    /// against; a new limit empties the cache.
    generation: usize,
}

/// How many signatures are remembered per op.
const SLOTS: usize = 4;

type Remembered = (MetaFn, MetaArgs, Outs<TensorMeta>);

#[derive(Default)]
struct Slots {
    entries: [Option<Remembered>; SLOTS],
    /// The slot the next miss overwrites (round robin).
    next: usize,
}

thread_local! {
    static META_CACHE: std::cell::RefCell<MetaCache> =
        const {
            std::cell::RefCell::new(MetaCache {
                slots: Vec::new(),
                generation: 0,
            })
        };
}

impl MetaCache {
    /// `Some` on a hit: the remembered outputs if `want_outputs`, else `None`.
    fn lookup(
        &self,
        id: usize,
        meta: MetaFn,
        args: &[Arg<Tensor>],
        want_outputs: bool,
    ) -> Option<Option<Outs<TensorMeta>>> {
        if self.generation != limit_generation() {
            return None;
        }
        self.slots
            .get(id)?
            .entries
            .iter()
            .flatten()
            .find_map(|(f, key, outs)| {
                (std::ptr::fn_addr_eq(*f, meta)
                    && key.len() == args.len()
                    && key.iter().zip(args).all(|(k, a)| same_signature(k, a)))
                .then(|| want_outputs.then(|| outs.clone()))
            })
    }

    fn store(&mut self, id: usize, meta: MetaFn, key: MetaArgs, outs: &Outs<TensorMeta>) {
        let generation = limit_generation();
        if self.generation != generation {
            self.slots.clear();
            self.generation = generation;
        }
        if self.slots.len() <= id {
            self.slots.resize_with(id + 1, Slots::default);
        }
        let slots = &mut self.slots[id];
        let at = slots.next;
        slots.entries[at] = Some((meta, key, outs.clone()));
        slots.next = (at + 1) % SLOTS;
    }
}

/// Whether `actual` has the shapes, dtypes and scalar values recorded in `key`.
fn same_signature(key: &Arg<TensorMeta>, actual: &Arg<Tensor>) -> bool {
    let tensor = |m: &TensorMeta, t: &Tensor| {
        let (a, b) = (m.shape(), t.shape());
        m.dtype() == t.dtype() && a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
    };
    match (key, actual) {
        (Arg::Tensor(m), Arg::Tensor(t)) => tensor(m, t),
        (Arg::OptTensor(m), Arg::OptTensor(t)) => match (m, t) {
            (Some(m), Some(t)) => tensor(m, t),
            (None, None) => true,
            _ => false,
        },
        (Arg::TensorList(ms), Arg::TensorList(ts)) => {
            ms.len() == ts.len() && ms.iter().zip(ts).all(|(m, t)| tensor(m, t))
        }
        (Arg::Int(a), Arg::Int(b)) => a == b,
        (Arg::OptInt(a), Arg::OptInt(b)) => a == b,
        (Arg::IntList(a), Arg::IntList(b)) => a == b,
        (Arg::OptIntList(a), Arg::OptIntList(b)) => a == b,
        // Bitwise, so NaN matches NaN and 0.0 does not match -0.0.
        (Arg::Float(a), Arg::Float(b)) => a.to_bits() == b.to_bits(),
        (Arg::OptFloat(a), Arg::OptFloat(b)) => a.map(f64::to_bits) == b.map(f64::to_bits),
        (Arg::Bool(a), Arg::Bool(b)) => a == b,
        (Arg::OptBool(a), Arg::OptBool(b)) => a == b,
        (Arg::ScalarType(a), Arg::ScalarType(b)) => a == b,
        (Arg::OptScalarType(a), Arg::OptScalarType(b)) => a == b,
        (Arg::Reduction(a), Arg::Reduction(b)) => a == b,
        (Arg::Str(a), Arg::Str(b)) => a == b,
        _ => false,
    }
}
