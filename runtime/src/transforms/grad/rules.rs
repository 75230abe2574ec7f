//! grad's rule table: the `#[vjp]` of each differentiable primitive, and how
//! grad differentiates an op ([`VjpStatus`]).
//!
//! The table is declared with [`rule_table!`](crate::rule_table), as a
//! third-party transform declares its own; `#[vjp]` registers into it. Besides
//! what every table refuses, it refuses a vjp for an op its op table marks
//! `differentiable = false`. The audit runs the first time grad reads it.

use std::fmt;

use crate::core::value::Arg;
use crate::registry::{derivative_refusal, Location, OpEntry, Problem};
use crate::schema::{OpKind, Role};
use crate::{Result, Tensor};

/// The erased form of a `#[vjp]` function.
///
/// It receives the op's arguments (as the kernel gets them), the op's outputs,
/// and one cotangent per output (of that output's shape and dtype). It returns
/// one gradient per tensor-valued argument slot, in argument order: one entry
/// for a `Tensor` argument, one for a `Tensor?` argument (`None` when the
/// argument is `None`), and one per element for a `Tensor[]` argument. `None`
/// means that no gradient flows to that slot.
pub type VjpRuleFn = fn(&[Arg<Tensor>], &[Tensor], &[Tensor]) -> Result<Vec<Option<Tensor>>>;

fn refuse(entry: &OpEntry, location: &Location) -> Option<Problem> {
    derivative_refusal(Role::Vjp, entry, location)
}

crate::rule_table! {
    /// grad's rules: the `#[vjp]` registered for each differentiable primitive.
    pub mod vjps: VjpRuleFn = "grad", rule = "#[vjp]", refusing = Some(refuse);
}

/// How grad differentiates an op: see [`VjpStatus::of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VjpStatus {
    /// A primitive with a registered `#[vjp]`.
    Vjp,
    /// A differentiable primitive without a `#[vjp]`: grad fails on it.
    Missing,
    /// The table marks the op `differentiable = false`, or it takes no
    /// tensors: no gradient flows through it.
    NotDifferentiable,
    /// A composite: grad differentiates the ops of its decomposition.
    ThroughDecomposition,
}

impl VjpStatus {
    /// How grad differentiates `entry`, given whether it has a `#[vjp]`.
    pub fn of(entry: &OpEntry, has_vjp: bool) -> VjpStatus {
        match entry.schema.kind {
            OpKind::Composite => VjpStatus::ThroughDecomposition,
            _ if has_vjp => VjpStatus::Vjp,
            _ if !entry.schema.differentiable || !entry.schema.takes_tensors() => {
                VjpStatus::NotDifferentiable
            }
            _ => VjpStatus::Missing,
        }
    }
}

/// How grad differentiates `entry` in this program (reading the vjp table,
/// whose audit may fail with [`Error::Registry`](crate::Error::Registry)).
pub fn vjp_status(entry: &OpEntry) -> Result<VjpStatus> {
    Ok(VjpStatus::of(entry, vjps::TABLE.get(entry)?.is_some()))
}

impl fmt::Display for VjpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VjpStatus::Vjp => "vjp",
            VjpStatus::Missing => "-",
            VjpStatus::NotDifferentiable => "not differentiable",
            VjpStatus::ThroughDecomposition => "through decomposition",
        })
    }
}
