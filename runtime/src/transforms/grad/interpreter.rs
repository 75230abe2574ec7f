//! grad's interpreter: an op call at a grad level runs the op one level down
//! and records a graph node. A composite never reaches it: the dispatcher
//! runs its decomposition, so each of its constituent ops is recorded.

use std::sync::Arc;

use crate::core::value::Outs;
use crate::dispatch::{call_entry, lower, Call, Interpreter};
use crate::{Result, Tensor};

use super::graph::{no_vjp, Node, NodeRef, OpNode};
use super::rules::vjps;
use super::tracked::Tracked;

/// The interpreter of one grad level. It holds no state: the graph lives in
/// the nodes the tracked tensors point to.
pub(crate) struct GradInterpreter;

impl Interpreter for GradInterpreter {
    fn name(&self) -> &'static str {
        "grad"
    }

    fn process(&self, call: Call<'_>) -> Result<Outs<Tensor>> {
        let Call {
            entry, args, level, ..
        } = call;
        // One parent per tensor, in schema order (what the vjps' gradients
        // line up with).
        let mut parents = Vec::new();
        let inner: Vec<_> = lower(args, |t| match Tracked::at(t, level) {
            Some(tr) => (tr.inner.clone(), Some(tr.node.clone())),
            None => (t.clone(), None),
        })
        .map(|(a, slot)| {
            parents.extend(slot);
            a
        })
        .collect();
        let tracked = parents.iter().any(Option::is_some);
        let outs = call_entry(entry, &inner)?;
        if !tracked || !entry.schema.differentiable {
            return Ok(outs);
        }
        if !outs.iter().any(|t| t.dtype().is_float()) {
            // Integer or bool results carry no gradient.
            return Ok(outs);
        }
        let Some(vjp) = vjps::TABLE.get(entry)? else {
            return Err(no_vjp(entry, level.depth()));
        };
        let node = Arc::new(Node::Op(OpNode {
            entry,
            vjp,
            args: inner,
            outputs: outs.to_vec(),
            parents,
        }));
        Ok(outs
            .into_iter()
            .enumerate()
            .map(|(output, t)| {
                if t.dtype().is_float() {
                    Tracked::wrap(
                        t,
                        NodeRef {
                            node: Arc::clone(&node),
                            output,
                        },
                        level,
                    )
                } else {
                    t
                }
            })
            .collect())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
