//! The graph grad records: one node per differentiated op call, holding the
//! values its vjp needs, and the backward pass that walks it.
//!
//! Nodes are reference counted and hold only values one level below the grad
//! level that recorded them, so a pullback keeps working after its level is
//! gone (`jacrev` calls it under a new vmap), and the vjps it runs are ordinary
//! op calls: batched by an enclosing vmap, recorded by an enclosing grad.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use smallvec::SmallVec;

use crate::core::value::{Arg, TensorMeta};
use crate::grad::rules::{vjps, VjpRuleFn};
use crate::registry::OpEntry;
use crate::{Error, Result, Tensor};

use crate::ops::usize_args;

/// A node and which of its outputs a tensor is.
#[derive(Clone, Debug)]
pub(crate) struct NodeRef {
    pub(crate) node: Arc<Node>,
    pub(crate) output: usize,
}

/// One recorded value: an input of the differentiated function (a leaf) or
/// the result of an op call.
#[derive(Debug)]
pub(crate) enum Node {
    /// Input leaf `index` of the grad call.
    Leaf { index: usize },
    /// An op call, with what its vjp needs.
    Op(OpNode),
}

/// A recorded op call.
#[derive(Debug)]
pub(crate) struct OpNode {
    pub(crate) entry: &'static OpEntry,
    /// The op's vjp, looked up when the call was recorded.
    pub(crate) vjp: VjpRuleFn,
    /// The arguments, one level below the grad level.
    pub(crate) args: Vec<Arg<Tensor>>,
    /// The outputs, one level below the grad level.
    pub(crate) outputs: Vec<Tensor>,
    /// For each tensor slot of `args` (a list contributes one per element), the
    /// node it came from if it was tracked at the grad level.
    pub(crate) parents: Vec<Option<NodeRef>>,
}

/// Dropping a long chain of nodes one inside the other would recurse once per
/// node and overflow the stack (a loop of many ops under grad); parents whose
/// last owner is this node are taken apart iteratively instead.
impl Drop for OpNode {
    fn drop(&mut self) {
        let mut stack: Vec<Arc<Node>> = self.parents.drain(..).flatten().map(|p| p.node).collect();
        while let Some(node) = stack.pop() {
            if let Ok(Node::Op(mut op)) = Arc::try_unwrap(node) {
                stack.extend(op.parents.drain(..).flatten().map(|p| p.node));
            }
        }
    }
}

/// Hashes a node's address: addresses are already unique and well spread, so
/// the maps of one backward pass need no general-purpose hash.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // Nodes are at least 8-byte aligned: drop the always-zero bits.
        self.0 = ((n as u64) >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type ByAddress = BuildHasherDefault<AddressHasher>;

fn key(node: &Arc<Node>) -> usize {
    Arc::as_ptr(node) as *const () as usize
}

/// Every node reachable from `roots`, each after all of its parents.
fn topological(roots: &[&Arc<Node>]) -> Vec<Arc<Node>> {
    let mut order = Vec::new();
    let mut visited: HashSet<usize, ByAddress> = HashSet::default();
    // Iterative depth-first search; `true` marks a node whose parents are done.
    let mut stack: Vec<(Arc<Node>, bool)> = roots.iter().map(|r| (Arc::clone(r), false)).collect();
    while let Some((node, done)) = stack.pop() {
        if done {
            order.push(node);
            continue;
        }
        if !visited.insert(key(&node)) {
            continue;
        }
        stack.push((Arc::clone(&node), true));
        if let Node::Op(op) = &*node {
            for p in op.parents.iter().flatten() {
                if !visited.contains(&key(&p.node)) {
                    stack.push((Arc::clone(&p.node), false));
                }
            }
        }
    }
    order
}

/// The backward pass: given a cotangent for each root (a node output), the
/// gradient of each of the `leaves` input leaves (`None`: no path from it to a
/// root, so its gradient is zero).
pub(crate) fn backward(roots: &[(NodeRef, Tensor)], leaves: usize) -> Result<Vec<Option<Tensor>>> {
    let root_nodes: Vec<&Arc<Node>> = roots.iter().map(|(r, _)| &r.node).collect();
    let order = topological(&root_nodes);
    let mut cotangents: Cotangents = HashMap::default();
    for (r, ct) in roots {
        accumulate(&mut cotangents, r, ct.clone())?;
    }
    let mut grads = vec![None; leaves];
    for node in order.iter().rev() {
        let Some(cts) = cotangents.remove(&key(node)) else {
            continue;
        };
        match &**node {
            Node::Leaf { index } => {
                if let Some(slot) = grads.get_mut(*index) {
                    *slot = cts.into_iter().next().flatten();
                }
            }
            Node::Op(op) => {
                let grads_in = run_vjp(op, cts)?;
                for (parent, g) in op.parents.iter().zip(grads_in) {
                    if let (Some(p), Some(g)) = (parent, g) {
                        accumulate(&mut cotangents, p, g)?;
                    }
                }
            }
        }
    }
    Ok(grads)
}

/// The cotangents flowing into each node's outputs, by node address.
type Cotangents = HashMap<usize, SmallVec<[Option<Tensor>; 1]>, ByAddress>;

fn accumulate(cotangents: &mut Cotangents, at: &NodeRef, ct: Tensor) -> Result<()> {
    let n = match &*at.node {
        Node::Leaf { .. } => 1,
        Node::Op(op) => op.outputs.len(),
    };
    let slots = cotangents
        .entry(key(&at.node))
        .or_insert_with(|| SmallVec::from_elem(None, n));
    let slot = &mut slots[at.output];
    *slot = Some(match slot.take() {
        Some(prev) => crate::ops::add(&prev, &ct)?,
        None => ct,
    });
    Ok(())
}

/// Calls `op`'s vjp with the cotangents of its outputs (zeros where none
/// flowed) and checks the gradients against the inputs.
fn run_vjp(op: &OpNode, cts: SmallVec<[Option<Tensor>; 1]>) -> Result<Vec<Option<Tensor>>> {
    let (entry, vjp) = (op.entry, op.vjp);
    let cts = op
        .outputs
        .iter()
        .zip(cts)
        .map(|(out, ct)| match ct {
            Some(ct) => Ok(ct),
            None => usize_args::zeros(out.shape(), out.dtype()),
        })
        .collect::<Result<Vec<_>>>()?;
    let grads = {
        let _skip = Unwanted::set(op);
        vjp(&op.args, &op.outputs, &cts).map_err(|e| crate::dispatch::attribute(e, entry.name()))?
    };
    check_grads(op, &grads)?;
    Ok(grads)
}

/// The error for a differentiable op without a vjp.
pub(crate) fn no_vjp(entry: &OpEntry, depth: usize) -> Error {
    let at = format!(" (at grad level {depth})");
    Error::NotImplemented {
        op: entry.name().to_string(),
        message: format!(
            "grad cannot differentiate it{at}: it has no vjp; register one with \
             `#[vjp(op = \"{}\")]`, or mark it `differentiable = false` in its op table if it has \
             no derivative",
            entry.name()
        ),
    }
}

/// The vjp self-check: one gradient per tensor slot, each with its input's
/// logical shape and dtype (a forgotten un-broadcast or cast shows here, not
/// as a wrong answer later).
fn check_grads(op: &OpNode, grads: &[Option<Tensor>]) -> Result<()> {
    let entry = op.entry;
    let bug = |message: String| Error::RuleBug {
        op: entry.name().to_string(),
        rule: vjps::TABLE.describe(entry, "vjp"),
        message,
    };
    let inputs = slots(&op.args);
    if grads.len() != inputs.len() {
        return Err(bug(format!(
            "the vjp returned {} gradients, the op has {} tensor inputs",
            grads.len(),
            inputs.len()
        )));
    }
    for (i, (g, x)) in grads.iter().zip(&inputs).enumerate() {
        let (Some(g), Some(x)) = (g, x) else { continue };
        let want = TensorMeta::of(x);
        if g.shape() != want.shape() || g.dtype() != want.dtype() {
            return Err(bug(format!(
                "gradient {i} has shape {:?} and dtype {}, but its input has shape {:?} and dtype {} \
                 (un-broadcast with sum_to_size and convert the dtype back)",
                g.shape(),
                g.dtype(),
                want.shape(),
                want.dtype()
            )));
        }
    }
    Ok(())
}

/// The tensor of each tensor slot of `args`: one per `Tensor` and `Tensor?`
/// argument (`None` when absent), one per element of a `Tensor[]`.
pub(crate) fn slots(args: &[Arg<Tensor>]) -> Vec<Option<&Tensor>> {
    let mut out = Vec::new();
    for a in args {
        match a {
            Arg::Tensor(t) => out.push(Some(t)),
            Arg::OptTensor(t) => out.push(t.as_ref()),
            Arg::TensorList(ts) => out.extend(ts.iter().map(Some)),
            _ => {}
        }
    }
    out
}

thread_local! {
    /// The identities of the inputs of the vjp running on this thread whose
    /// gradients the backward pass discards (see [`needs_gradient`]).
    static UNWANTED: RefCell<SmallVec<[usize; 4]>> = RefCell::new(SmallVec::new());
}

/// Holds the unwanted inputs of one vjp call; restores the previous set
/// (of an enclosing call) when dropped.
struct Unwanted {
    previous: SmallVec<[usize; 4]>,
}

impl Unwanted {
    fn set(op: &OpNode) -> Unwanted {
        let inputs = slots(&op.args);
        let wanted: SmallVec<[usize; 4]> = inputs
            .iter()
            .zip(&op.parents)
            .filter_map(|(t, p)| p.as_ref().and(t.map(Tensor::identity)))
            .collect();
        // An input that is also a wanted one (the same tensor passed twice)
        // stays wanted.
        let unwanted = inputs
            .iter()
            .zip(&op.parents)
            .filter_map(|(t, p)| {
                if p.is_none() {
                    t.map(Tensor::identity)
                } else {
                    None
                }
            })
            .filter(|id| !wanted.contains(id))
            .collect();
        Unwanted {
            previous: UNWANTED.with(|u| std::mem::replace(&mut *u.borrow_mut(), unwanted)),
        }
    }
}

impl Drop for Unwanted {
    fn drop(&mut self) {
        let previous = std::mem::take(&mut self.previous);
        UNWANTED.with(|u| *u.borrow_mut() = previous);
    }
}

/// Whether the vjp running on this thread must compute the gradient of its
/// input `input`: `false` when the backward pass will discard it, because
/// `input` is not differentiated (a constant, data, or an argument outside
/// `argnums`). A vjp may skip such a gradient and return `None` for it, which
/// saves work that can dominate (the weight gradient of a matmul when only
/// the input's is wanted, as in a Jacobian with respect to the input).
///
/// Outside a vjp called by the backward pass (a vjp called directly, in a
/// test) every gradient is needed.
///
/// ```
/// use batchrules::{needs_gradient, Tensor};
/// // Not inside a backward pass: compute everything.
/// assert!(needs_gradient(&Tensor::scalar(1.0f64)));
/// ```
pub fn needs_gradient(input: &Tensor) -> bool {
    let id = input.identity();
    UNWANTED.with(|u| !u.borrow().contains(&id))
}
