//! The dispatcher: what happens when an op is called.
//!
//! Every typed op function (`ops::triu(&x, 0)`) packs its arguments and calls
//! [`call`]. The dispatcher knows no transform:
//!
//! 1. It finds the highest transform level among the tensors of the call
//!    (none: the dense path).
//! 2. It runs the op's meta on the logical shapes (what code at that level sees),
//!    so an invalid call errors here at every level, naming the op and the level.
//! 3. It hands the call to that level's [`Interpreter`] (vmap's batches it), whose
//!    own op calls re-enter the dispatcher and reach the levels below.
//! 4. On the dense path it runs the kernel, or a composite's decomposition.
//!
//! A random op (its table says `random = true`; `rand` has no tensor argument
//! at all) also goes to the highest level above its tensors whose
//! interpreter [claims random ops](Interpreter::claims_random), so a vmap
//! level can apply its randomness policy to it. An interpreter passes a random
//! op on to the levels below with [`below_level`].
//!
//! A transform is added by implementing [`Interpreter`] and
//! [`LevelTensor`](crate::LevelTensor) and pushing levels with [`push_level`];
//! nothing here changes.
//!
//! In the `dispatch` layer (`runtime/src/dispatch/`). It may use the `core` and
//! `table` layers. `tests/suite/layers.rs` enforces it.

mod in_place;
mod levels;
mod meta_cache;

use std::any::Any;

pub(crate) use in_place::Form;
pub use in_place::{call_owned, in_place_rules, InPlace};
pub(crate) use levels::reaches_random;
pub use levels::{
    below_level, depth, escaped, interpreter, level_at, push_level, LevelGuard, MAX_DEPTH,
};
pub(crate) use meta_cache::run_meta;

use crate::core::value::{Arg, Outs, TensorMeta};
use crate::registry::{self, OpEntry};
use crate::schema::{OpKind, OpTable};
use crate::{Error, LevelId, Result, Tensor};

/// One op call as a level's interpreter receives it.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The op.
    pub entry: &'static OpEntry,
    /// Its arguments, the level's own tensors still wrapped.
    pub args: &'a [Arg<Tensor>],
    /// The live level the call is at.
    pub level: LevelId,
    /// The op's output metas (logical shapes and dtypes), when
    /// [`Interpreter::wants_output_metas`] returned `true` and the op has a
    /// meta.
    pub out_metas: Option<&'a [TensorMeta]>,
}

/// A transform's interpreter: what an op call does at one of its levels.
///
/// `process` receives the call with the level's own tensors still wrapped
/// (other tensors may be dense or at lower levels), after the dispatcher has
/// run the op's meta on logical shapes. It unwraps its level, does its work by
/// calling ops again (through the dispatcher, which sends them to the levels
/// below), and wraps the results at its level.
pub trait Interpreter: Any {
    /// The transform's name, for messages (`"vmap"`).
    fn name(&self) -> &'static str;

    /// Whether `process` wants the op's output metas (logical shapes and dtypes
    /// of the outputs), e.g. for a self-check. Computing them is cheap but not
    /// free; the default is `false`.
    fn wants_output_metas(&self) -> bool {
        false
    }

    /// Whether the dispatcher runs a composite op's decomposition at this
    /// level instead of calling [`Interpreter::process`], so that the
    /// transform sees only primitives (their rules are the only ones it
    /// has). The default is `true`, as for grad and jvp; vmap says `false`,
    /// because a composite may ask to be looped under vmap instead.
    fn decomposes_composites(&self) -> bool {
        true
    }

    /// Runs the op call `call` at its level.
    fn process(&self, call: Call<'_>) -> Result<Outs<Tensor>>;

    /// Whether this level takes the calls of random ops (ops whose table says
    /// `random = true`) made while it is live, also those in which none of
    /// its tensors appear (`rand` has no tensor argument). The dispatcher then
    /// hands such a call to the highest claiming level above the call's
    /// tensors. The default is `false`: a random op reaches this level only
    /// through its tensors, like any op (grad records nothing for it and
    /// passes it down). vmap claims random ops, to apply its randomness
    /// policy; an interpreter that does passes them on to the levels below
    /// with [`below_level`].
    fn claims_random(&self) -> bool {
        false
    }

    /// Runs op `entry` with its first argument given by value
    /// ([`call_owned`]): `in_place` says how the op can write its result into
    /// that argument's buffer. The default runs [`Interpreter::process`] on
    /// the arguments; a transform whose level can hand the unwrapped value on
    /// by value (vmap, for a [pointwise unary](InPlace::pointwise_unary) op
    /// and a [broadcasting binary](InPlace::broadcasting_binary) one whose
    /// batch dims line up) overrides it.
    fn process_owned(
        &self,
        entry: &'static OpEntry,
        args: Vec<Arg<Tensor>>,
        level: LevelId,
        out_metas: Option<&[TensorMeta]>,
        in_place: &InPlace,
    ) -> Result<Outs<Tensor>> {
        let _ = in_place;
        self.process(Call {
            entry,
            args: &args,
            level,
            out_metas,
        })
    }

    /// `self` as [`Any`], so a transform can reach its own interpreter's state.
    fn as_any(&self) -> &dyn Any;
}

/// Entry point of every generated op function: dispatches op `local` of `table`.
#[doc(hidden)]
pub fn call(table: &'static OpTable, local: usize, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    let entry = registry::entry(table, local)?;
    call_entry(entry, args)
}

/// Calls op `entry` with erased arguments, through the dispatcher (so inside a
/// transform it is transformed like any other call). Tests and generic tools use
/// this; code normally calls the typed functions of the op's table.
///
/// Errors if `args` does not fit the op's schema (count or kind of an argument).
pub fn call_op(entry: &'static OpEntry, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    check_args(entry, args)?;
    call_entry(entry, args)
}

fn check_args(entry: &OpEntry, args: &[Arg<Tensor>]) -> Result<()> {
    use crate::schema::ArgType;
    let schema = &entry.schema.args;
    if args.len() != schema.len() {
        return Err(Error::InvalidArgument {
            op: entry.name().to_string(),
            message: format!(
                "expected {} arguments (`{}`), got {}",
                schema.len(),
                entry.schema.schema,
                args.len()
            ),
            level: None,
            transform: "",
        });
    }
    for (i, (a, s)) in args.iter().zip(schema.iter()).enumerate() {
        let fits = match (s.ty, s.optional) {
            (ArgType::Tensor, false) => matches!(a, Arg::Tensor(_)),
            (ArgType::Tensor, true) => matches!(a, Arg::OptTensor(_)),
            (ArgType::TensorList, _) => matches!(a, Arg::TensorList(_)),
            (ArgType::Int, false) => matches!(a, Arg::Int(_)),
            (ArgType::Int, true) => matches!(a, Arg::OptInt(_)),
            (ArgType::IntList, false) => matches!(a, Arg::IntList(_)),
            (ArgType::IntList, true) => matches!(a, Arg::OptIntList(_)),
            (ArgType::Float, false) => matches!(a, Arg::Float(_)),
            (ArgType::Float, true) => matches!(a, Arg::OptFloat(_)),
            (ArgType::Bool, false) => matches!(a, Arg::Bool(_)),
            (ArgType::Bool, true) => matches!(a, Arg::OptBool(_)),
            (ArgType::ScalarType, false) => matches!(a, Arg::ScalarType(_)),
            (ArgType::ScalarType, true) => matches!(a, Arg::OptScalarType(_)),
            (ArgType::Reduction, _) => matches!(a, Arg::Reduction(_)),
            (ArgType::Str, _) => matches!(a, Arg::Str(_)),
        };
        if !fits {
            return Err(Error::InvalidArgument {
                op: entry.name().to_string(),
                message: format!(
                    "argument {i} (`{}`) does not fit the schema `{}`",
                    s.name, entry.schema.schema
                ),
                level: None,
                transform: "",
            });
        }
    }
    Ok(())
}

/// Dispatches a call whose arguments fit the schema (the typed functions
/// guarantee it).
pub(crate) fn call_entry(entry: &'static OpEntry, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    let top = top_level(args);
    let top = if entry.schema.random {
        levels::claiming_level(top).or(top)
    } else {
        top
    };
    let Some(top) = top else {
        return call_dense(entry, args);
    };
    let (live, interp) = live_level(entry, args, top)?;
    let at = Some((top.depth(), interp.name()));
    let metas = run_meta(entry, args, at, interp.wants_output_metas())?;
    if decomposed_here(entry, &*interp) {
        return decompose(entry, args).map_err(|e| attribute(e, entry.name()));
    }
    let call = Call {
        entry,
        args,
        level: live,
        out_metas: metas.as_deref(),
    };
    interp.process(call).map_err(|e| attribute(e, entry.name()))
}

/// Whether a call of `entry` at the level of `interp` runs the op's
/// decomposition instead of the interpreter (see
/// [`Interpreter::decomposes_composites`]).
fn decomposed_here(entry: &OpEntry, interp: &dyn Interpreter) -> bool {
    entry.schema.kind == OpKind::Composite && interp.decomposes_composites()
}

/// The live level `top` of a call and its interpreter. Errors if `top` is
/// not live, or a tensor of the call is at a dead level of the same depth
/// (escaped from an earlier transform call), which must not be taken for one
/// of the live level.
fn live_level(
    entry: &OpEntry,
    args: &[Arg<Tensor>],
    top: LevelId,
) -> Result<(LevelId, std::rc::Rc<dyn Interpreter>)> {
    let (live, interp) = level_at(top.depth())
        .filter(|(id, _)| *id == top)
        .ok_or_else(|| attribute(escaped_in(args, top), entry.name()))?;
    if args
        .iter()
        .flat_map(Arg::tensors)
        .filter_map(Tensor::level)
        .any(|l| l.depth() == top.depth() && l != live)
    {
        return Err(attribute(escaped_in(args, top), entry.name()));
    }
    Ok((live, interp))
}

/// What a level keeps of one argument's tensors when it lowers the argument
/// one level down (see [`lower`]): grad keeps a tensor's graph node, jvp its
/// tangent, vmap its batch dim.
#[derive(Debug)]
pub(crate) enum Slot<K> {
    /// A non-tensor argument.
    NotTensor,
    /// A `Tensor` or `Tensor?` argument (`None` also for an absent one).
    One(Option<K>),
    /// A `Tensor[]` argument: one entry per element.
    List(Vec<Option<K>>),
}

impl<K> Slot<K> {
    /// What was kept of a tensor argument, one entry per tensor (one `None`
    /// for an absent `Tensor?`); `None` for a non-tensor argument.
    pub(crate) fn tensors(self) -> Option<Vec<Option<K>>> {
        (!matches!(self, Slot::NotTensor)).then(|| self.into_iter().collect())
    }
}

/// What was kept of each tensor of the argument, in order (nothing for a
/// non-tensor argument), without allocating for a single tensor.
impl<K> IntoIterator for Slot<K> {
    type Item = Option<K>;
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<Option<K>>, std::vec::IntoIter<Option<K>>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, list) = match self {
            Slot::NotTensor => (None, Vec::new()),
            Slot::One(k) => (Some(k), Vec::new()),
            Slot::List(ks) => (None, ks),
        };
        one.into_iter().chain(list)
    }
}

impl From<Slot<usize>> for crate::core::value::BDim {
    fn from(slot: Slot<usize>) -> Self {
        match slot {
            Slot::NotTensor => Self::NotTensor,
            Slot::One(b) => Self::One(b),
            Slot::List(bs) => Self::List(bs),
        }
    }
}

/// The arguments of a call at a level, one level down, each with what the
/// level keeps of its tensors: the unwrap step every interpreter takes.
/// `peel` gives a tensor's value one level down and what the level keeps of
/// it (`None` for a tensor that is not of the level).
pub(crate) fn lower<'a, K: 'a>(
    args: &'a [Arg<Tensor>],
    mut peel: impl FnMut(&Tensor) -> (Tensor, Option<K>) + 'a,
) -> impl Iterator<Item = (Arg<Tensor>, Slot<K>)> + 'a {
    args.iter().map(move |a| match a {
        Arg::Tensor(t) => {
            let (v, k) = peel(t);
            (Arg::Tensor(v), Slot::One(k))
        }
        Arg::OptTensor(Some(t)) => {
            let (v, k) = peel(t);
            (Arg::OptTensor(Some(v)), Slot::One(k))
        }
        Arg::OptTensor(None) => (Arg::OptTensor(None), Slot::One(None)),
        Arg::TensorList(ts) => {
            let (vs, ks) = ts.iter().map(&mut peel).unzip();
            (Arg::TensorList(vs), Slot::List(ks))
        }
        other => (other.clone(), Slot::NotTensor),
    })
}

/// Runs composite op `entry` through its decomposition, at the current level:
/// what a transform does with a composite it does not handle as a whole.
pub(crate) fn decompose(entry: &'static OpEntry, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    match entry.decomposition {
        Some((f, _)) => f(args),
        None => Err(Error::NotImplemented {
            op: entry.name().to_string(),
            message: "no decomposition is registered".to_string(),
        }),
    }
}

/// The one output of a call to op `name`.
pub(crate) fn one_output(name: &str, mut outs: Outs<Tensor>) -> Result<Tensor> {
    match (outs.pop(), outs.is_empty()) {
        (Some(t), true) => Ok(t),
        _ => Err(Error::Tensor(format!(
            "op `{name}` did not return one tensor"
        ))),
    }
}

/// The highest transform level among the tensors of `args`.
fn top_level(args: &[Arg<Tensor>]) -> Option<LevelId> {
    args.iter()
        .flat_map(|a| a.tensors())
        .filter_map(Tensor::level)
        .max_by_key(|l| l.depth())
}

fn escaped_in(args: &[Arg<Tensor>], level: LevelId) -> Error {
    args.iter()
        .flat_map(Arg::tensors)
        .find(|t| t.level() == Some(level))
        .map_or_else(
            || Error::Tensor("a transformed tensor escaped its level".into()),
            escaped,
        )
}

/// Fills the op name (unless an inner op already named itself) and, for meta
/// errors, the vmap level into an error a registered function returned.
pub(crate) fn name_error(e: Error, op: &str, at: Option<(usize, &'static str)>) -> Error {
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
            level: None,
            ..
        } => Error::InvalidArgument {
            op: named(existing),
            message,
            level: at.map(|(depth, _)| depth),
            transform: at.map_or("", |(_, transform)| transform),
        },
        Error::InvalidArgument {
            op: existing,
            message,
            level,
            transform,
        } => Error::InvalidArgument {
            op: named(existing),
            message,
            level,
            transform,
        },
        Error::NotImplemented {
            op: existing,
            message,
        } => Error::NotImplemented {
            op: named(existing),
            message,
        },
        other => other,
    }
}

/// The dense path: meta once, then the kernel (or the composite's decomposition).
fn call_dense(entry: &'static OpEntry, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    run_meta(entry, args, None, false)?;
    run_dense_kernel(entry, args)
}

/// The kernel (or the composite's decomposition), after the meta.
pub(crate) fn run_dense_kernel(
    entry: &'static OpEntry,
    args: &[Arg<Tensor>],
) -> Result<Outs<Tensor>> {
    let f = match entry.schema.kind {
        OpKind::Primitive => entry.kernel,
        OpKind::Composite => entry.decomposition.map(|(f, _)| f),
    };
    let f = f.ok_or_else(|| Error::NotImplemented {
        op: entry.name().to_string(),
        message: "no kernel or decomposition is registered".to_string(),
    })?;
    f(args).map_err(|e| attribute(e, entry.name()))
}

/// Makes an error raised while running `op` name `op` first: an unnamed
/// error gets the name; an error of another op (a decomposition's constituent,
/// an op a rule calls) or of a tensor method is wrapped in [`Error::Inside`],
/// so the user sees the op they called and the inner error as context.
pub(crate) fn attribute(e: Error, op: &str) -> Error {
    match e.op() {
        Some(o) if o == op => e,
        Some("") => name_error(e, op, None),
        _ => match e {
            e @ (Error::Registry { .. } | Error::InVmap { .. }) => e,
            e => Error::Inside {
                op: op.to_string(),
                inner: Box::new(e),
            },
        },
    }
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
