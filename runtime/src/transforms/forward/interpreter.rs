//! jvp's interpreter: an op call at a jvp level runs the op on the primals one
//! level down and its jvp on the tangents. A composite never reaches it: the
//! dispatcher runs its decomposition, so each constituent op is
//! differentiated.

use crate::core::value::{Arg, Outs};
use crate::dispatch::{call_entry, lower, Call, Interpreter};
use crate::registry::OpEntry;
use crate::{Error, LevelId, Result, Tensor};

use super::dual::Dual;
use super::rules::jvps;
use crate::ops::usize_args;

/// The interpreter of one jvp level. It holds no state: each dual tensor
/// carries its tangent.
pub(crate) struct JvpInterpreter;

/// The tangents of an op's tensor-valued argument slots, in schema order: one
/// element for a `Tensor` or `Tensor?` slot, one per element for a
/// `Tensor[]`; `None` is a zero tangent.
type Tangents = Vec<Vec<Option<Tensor>>>;

impl Interpreter for JvpInterpreter {
    fn name(&self) -> &'static str {
        "jvp"
    }

    fn process(&self, call: Call<'_>) -> Result<Outs<Tensor>> {
        let (entry, level) = (call.entry, call.level);
        let (primals, tangents) = split(call.args, level);
        let outs = call_entry(entry, &primals)?;
        let any_tangent = tangents.iter().flatten().any(Option::is_some);
        if !any_tangent
            || !entry.schema.differentiable
            || !outs.iter().any(|t| t.dtype().is_float())
        {
            // Nothing to push forward, or nothing flows through the op:
            // the results have zero tangents and stay one level down.
            return Ok(outs);
        }
        let out_tangents = if entry.schema.linear {
            linear_jvp(entry, &primals, &tangents, &outs)?
        } else if let Some(rule) = jvps::TABLE.get(entry)? {
            rule(&primals, &outs, &tangents)?
        } else {
            return Err(no_jvp(entry, level.depth()));
        };
        check_tangents(entry, &outs, &out_tangents)?;
        Ok(outs
            .into_iter()
            .zip(out_tangents)
            .map(|(primal, tangent)| match tangent {
                Some(tangent) if primal.dtype().is_float() => Dual::wrap(primal, tangent, level),
                _ => primal,
            })
            .collect())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The primal arguments (one level down) and the tangent of each tensor slot.
fn split(args: &[Arg<Tensor>], level: LevelId) -> (Vec<Arg<Tensor>>, Tangents) {
    let mut tangents = Vec::new();
    let primals = lower(args, |t| match Dual::at(t, level) {
        Some(d) => (d.primal.clone(), Some(d.tangent.clone())),
        None => (t.clone(), None),
    })
    .map(|(a, slot)| {
        tangents.extend(slot.tensors());
        a
    })
    .collect();
    (primals, tangents)
}

/// The jvp of an op its table marks `linear`: the op itself applied to the
/// tangents of the arguments it is linear in (a zero for one without a
/// tangent), the other arguments (indices, masks) held at their value.
fn linear_jvp(
    entry: &'static OpEntry,
    primals: &[Arg<Tensor>],
    tangents: &Tangents,
    outs: &[Tensor],
) -> Result<Vec<Option<Tensor>>> {
    let mut slots = tangents.iter();
    let args = primals
        .iter()
        .zip(entry.schema.args)
        .map(|(a, schema)| match a {
            Arg::Tensor(_) | Arg::OptTensor(_) | Arg::TensorList(_) => {
                let slot = slots.next().map(Vec::as_slice).unwrap_or_default();
                if !entry.schema.linear_in.contains(&schema.name) {
                    return Ok(a.clone());
                }
                let mut k = 0;
                a.try_map(|p| {
                    let t = slot.get(k).cloned().flatten();
                    k += 1;
                    match t {
                        Some(t) => Ok(t),
                        None => usize_args::zeros(p.shape(), p.dtype()),
                    }
                })
            }
            other => Ok(other.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    let pushed = call_entry(entry, &args)?;
    Ok(pushed
        .into_iter()
        .zip(outs)
        .map(|(t, out)| out.dtype().is_float().then_some(t))
        .collect())
}

/// The error for a differentiable primitive without a jvp.
pub(crate) fn no_jvp(entry: &OpEntry, depth: usize) -> Error {
    Error::NotImplemented {
        op: entry.name().to_string(),
        message: format!(
            "jvp cannot differentiate it (at jvp level {depth}): it has no jvp; register one \
             with `#[jvp(op = \"{}\")]`, mark it `linear = true` in its op table if it is linear \
             in its tensor arguments, or `differentiable = false` if it has no derivative",
            entry.name()
        ),
    }
}

/// The jvp self-check: one tangent per output, each with its output's logical
/// shape and dtype (a forgotten broadcast or cast shows here, not as a wrong
/// answer later).
fn check_tangents(entry: &OpEntry, outs: &[Tensor], tangents: &[Option<Tensor>]) -> Result<()> {
    let bug = |message: String| Error::RuleBug {
        op: entry.name().to_string(),
        rule: if entry.schema.linear {
            "linear jvp (the op applied to the tangents)".to_string()
        } else {
            jvps::TABLE.describe(entry, "jvp")
        },
        message,
    };
    if tangents.len() != outs.len() {
        return Err(bug(format!(
            "the jvp returned {} tangents, the op has {} outputs",
            tangents.len(),
            outs.len()
        )));
    }
    for (i, (out, t)) in outs.iter().zip(tangents).enumerate() {
        if let Some(t) = t
            && (t.shape() != out.shape() || t.dtype() != out.dtype())
        {
            return Err(bug(format!(
                    "tangent {i} has shape {:?} and dtype {}, but output {i} has shape {:?} and dtype {}",
                    t.shape(),
                    t.dtype(),
                    out.shape(),
                    out.dtype()
                )));
        }
    }
    Ok(())
}
