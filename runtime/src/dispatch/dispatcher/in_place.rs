//! Owned calls: an op given its first operand by value writes its result into
//! that operand's buffer when nobody else holds it (the functions of
//! [`crate::owned`]). Reuse never changes a result: when the buffer is shared,
//! of another shape or dtype than the output, or at a level whose transform
//! does not take owned calls, the call goes the borrowed way.

use crate::core::value::{Arg, Outs};
use crate::registry::OpEntry;
use crate::{Data, Result, Tensor};

use super::{attribute, live_level, run_dense_kernel, run_meta, top_level};

/// How an op writes its result into the buffer of its first operand, for
/// [`call_owned`] and [`Interpreter::process_owned`](super::Interpreter::process_owned).
#[derive(Clone, Copy)]
pub struct InPlace {
    /// Writes the op's result over `first`, whose buffer nobody else holds and
    /// whose shape and dtype are the output's (the meta said so); `rest` are
    /// the op's other arguments.
    pub(crate) write: fn(first: &mut Data, rest: &[Arg<Tensor>]) -> Result<()>,
    /// What a transform may assume of the op's batching rule when it passes
    /// its unwrapped tensors on by value.
    pub(crate) form: Form,
}

crate::rule_table! {
    /// The [`InPlace`] form of each op that has one (the built-in pointwise
    /// ops register theirs where they are defined). [`jit`](mod@crate::jit) reads it
    /// to write a step's result over an operand whose last use the step is.
    pub mod in_place_rules: InPlace = "in-place writing", rule = "in-place form", refusing = None;
}

/// The shape of a built-in op that takes an owned call, as a transform sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// Pointwise with one tensor argument; the batching rule applies the op
    /// to the physical tensor as it is.
    Unary,
    /// Pointwise with two tensor arguments that broadcast (NumPy rules); the
    /// batching rule applies the op to the physical tensors once their batch
    /// dims are aligned.
    Broadcasting,
}

impl InPlace {
    /// Whether the op is pointwise with one tensor argument and its batching
    /// rule applies it to the physical tensor as it is: a transform may then
    /// call it on its unwrapped tensor with [`call_owned`] and wrap the result
    /// as it was wrapped.
    pub fn pointwise_unary(&self) -> bool {
        self.form == Form::Unary
    }

    /// Whether the op is pointwise with two tensor arguments that broadcast
    /// against each other (NumPy rules): a transform may call it with
    /// [`call_owned`] on unwrapped tensors whose broadcast, dim by dim from
    /// the right, is the one of the values they stand for (for vmap: the
    /// batch dims of both at the front, in physical tensors of one rank, or
    /// the second not batched and of at most the first's logical rank).
    pub fn broadcasting_binary(&self) -> bool {
        self.form == Form::Broadcasting
    }
}

impl std::fmt::Debug for InPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InPlace")
            .field("form", &self.form)
            .finish_non_exhaustive()
    }
}

/// Calls op `entry` with its first argument by value: like
/// [`call_op`](super::call_op), but on the dense path the result is written
/// into the first argument's buffer when nobody else holds it and the meta
/// gives the output its shape and dtype; at a transform level the level's
/// interpreter decides ([`Interpreter::process_owned`](super::Interpreter::process_owned)).
///
/// Errors as [`call_op`](super::call_op) does.
pub fn call_owned(
    entry: &'static OpEntry,
    mut args: Vec<Arg<Tensor>>,
    in_place: &InPlace,
) -> Result<Outs<Tensor>> {
    super::check_args(entry, &args)?;
    if entry.schema.random {
        // Random calls are routed by the randomness policy; no reuse.
        return super::call_entry(entry, &args);
    }
    if let Some(top) = top_level(&args) {
        let (live, interp) = live_level(entry, &args, top)?;
        let at = Some((top.depth(), interp.name()));
        let metas = run_meta(entry, &args, at, interp.wants_output_metas())?;
        if super::decomposed_here(entry, &*interp) {
            return super::decompose(entry, &args).map_err(|e| attribute(e, entry.name()));
        }
        return interp
            .process_owned(entry, args, live, metas.as_deref(), in_place)
            .map_err(|e| attribute(e, entry.name()));
    }
    // The output metas are asked for only when there is a buffer to write.
    let unique = match args.first_mut() {
        Some(Arg::Tensor(first)) => first.unique_data_mut().is_some(),
        _ => false,
    };
    let metas = run_meta(entry, &args, None, unique)?;
    if let (Some([out]), Some((Arg::Tensor(first), rest))) =
        (metas.as_deref(), args.split_first_mut())
        && out.shape() == first.shape()
        && out.dtype() == first.dtype()
        && let Some(data) = first.unique_data_mut()
    {
        (in_place.write)(data, rest).map_err(|e| attribute(e, entry.name()))?;
        // `args` is dropped on return: the result is again the only handle.
        return Ok(smallvec::smallvec![first.clone()]);
    }
    run_dense_kernel(entry, &args)
}
