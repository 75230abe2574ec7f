//! jvp's rule table: the `#[jvp]` of each differentiable primitive that is
//! not linear, and how forward mode goes through an op ([`JvpStatus`]).
//!
//! The table is declared with [`rule_table!`](crate::rule_table), as a
//! third-party transform declares its own; `#[jvp]` registers into it. Besides
//! what every table refuses, it refuses a jvp for an op its op table marks
//! `differentiable = false` or `linear = true` (whose jvp is the op applied to
//! the tangents). The audit runs the first time jvp reads it.

use std::fmt;

use crate::core::value::Arg;
use crate::registry::{derivative_refusal, Location, OpEntry, Problem};
use crate::schema::{OpKind, Role};
use crate::{Result, Tensor};

/// The erased form of a `#[jvp]` function: the op's arguments (primals), its
/// outputs, and the tangents, one entry per tensor-valued argument slot
/// (`Tensor`, `Tensor?`, `Tensor[]`) in schema order: a `Tensor`/`Tensor?`
/// slot's entry has exactly one element, a `Tensor[]` slot's one per list
/// element; `None` is a zero tangent. Returns one tangent per output tensor
/// (in `Outs` order), `None` for zero.
pub type JvpRuleFn =
    fn(&[Arg<Tensor>], &[Tensor], &[Vec<Option<Tensor>>]) -> Result<Vec<Option<Tensor>>>;

fn refuse(entry: &OpEntry, location: &Location) -> Option<Problem> {
    derivative_refusal(Role::Jvp, entry, location)
}

crate::rule_table! {
    /// jvp's rules: the `#[jvp]` registered for each differentiable primitive
    /// that is not linear.
    pub mod jvps: JvpRuleFn = "jvp", rule = "#[jvp]", refusing = Some(refuse);
}

/// How forward-mode differentiation goes through an op: see
/// [`JvpStatus::of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JvpStatus {
    /// A primitive with a registered `#[jvp]`.
    Jvp,
    /// The table marks the op `linear = true`: its jvp is the op applied to
    /// the tangents.
    Linear,
    /// A differentiable primitive that is neither linear nor has a `#[jvp]`:
    /// jvp fails on it.
    Missing,
    /// The table marks the op `differentiable = false`, or it takes no
    /// tensors: its outputs have no tangent.
    NotDifferentiable,
    /// A composite: jvp goes through the ops of its decomposition.
    ThroughDecomposition,
}

impl JvpStatus {
    /// How forward mode goes through `entry`, given whether it has a `#[jvp]`.
    pub fn of(entry: &OpEntry, has_jvp: bool) -> JvpStatus {
        match entry.schema.kind {
            OpKind::Composite => JvpStatus::ThroughDecomposition,
            _ if has_jvp => JvpStatus::Jvp,
            _ if !entry.schema.differentiable || !entry.schema.takes_tensors() => {
                JvpStatus::NotDifferentiable
            }
            _ if entry.schema.linear => JvpStatus::Linear,
            _ => JvpStatus::Missing,
        }
    }
}

/// How forward mode goes through `entry` in this program (reading the jvp
/// table, whose audit may fail with [`Error::Registry`](crate::Error::Registry)).
pub fn jvp_status(entry: &OpEntry) -> Result<JvpStatus> {
    Ok(JvpStatus::of(entry, jvps::TABLE.get(entry)?.is_some()))
}

impl fmt::Display for JvpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JvpStatus::Jvp => "jvp",
            JvpStatus::Linear => "linear",
            JvpStatus::Missing => "-",
            JvpStatus::NotDifferentiable => "not differentiable",
            JvpStatus::ThroughDecomposition => "through decomposition",
        })
    }
}
