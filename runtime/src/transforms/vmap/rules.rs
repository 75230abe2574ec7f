//! vmap's rule table: the `#[batching_rule]` of each primitive, and what vmap
//! runs for an op ([`VmapStrategy`]).
//!
//! The table is declared with [`rule_table!`](crate::rule_table), as a
//! third-party transform declares its own; `#[batching_rule]` registers into
//! it. Its audit (a second rule for one op, a rule for a composite or for an
//! op of a table the program does not link) runs the first time vmap reads it.

use std::fmt;

use crate::core::value::{Arg, BDim, BatchedOutput, Outs};
use crate::registry::{DecomposeVmap, OpEntry};
use crate::schema::{ArgType, OpKind};
use crate::{Result, Tensor};

/// The erased form of a `#[batching_rule]` function: the op's arguments (each
/// tensor with its batch dim moved where the rule's signature says) and one
/// batch dim per tensor slot; returns each output with its batch dim.
pub type BatchingRuleFn = fn(&[Arg<Tensor>], &[BDim]) -> Result<Outs<BatchedOutput>>;

crate::rule_table! {
    /// vmap's rules: the `#[batching_rule]` registered for each primitive.
    pub mod batching_rules: BatchingRuleFn = "vmap", rule = "#[batching_rule]", refusing = None;
}

/// What vmap will use for an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmapStrategy {
    /// The op's batching rule.
    BatchingRule,
    /// The composite's decomposition, each constituent op batched on its own.
    Decomposition,
    /// The per-example loop.
    Fallback,
    /// The op takes no tensors (a factory), so vmap never batches it.
    NeverBatched,
}

impl VmapStrategy {
    /// What vmap runs for `entry`, given whether it has a batching rule.
    pub fn of(entry: &OpEntry, has_rule: bool) -> VmapStrategy {
        let takes_tensors = entry
            .schema
            .args
            .iter()
            .any(|a| matches!(a.ty, ArgType::Tensor | ArgType::TensorList));
        if !takes_tensors {
            return VmapStrategy::NeverBatched;
        }
        match (entry.schema.kind, has_rule, entry.decomposition) {
            (OpKind::Primitive, true, _) => VmapStrategy::BatchingRule,
            (OpKind::Composite, _, Some((_, DecomposeVmap::Decompose))) => {
                VmapStrategy::Decomposition
            }
            _ => VmapStrategy::Fallback,
        }
    }
}

/// What vmap runs for `entry` in this program (reading the batching-rule
/// table, whose audit may fail with [`Error::Registry`](crate::Error::Registry)).
pub fn vmap_strategy(entry: &OpEntry) -> Result<VmapStrategy> {
    let has_rule = batching_rules::TABLE.get(entry)?.is_some();
    Ok(VmapStrategy::of(entry, has_rule))
}

impl fmt::Display for VmapStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VmapStrategy::BatchingRule => "rule",
            VmapStrategy::Decomposition => "decomposition",
            VmapStrategy::Fallback => "fallback",
            VmapStrategy::NeverBatched => "never batched (no tensor args)",
        })
    }
}
