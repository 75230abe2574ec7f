//! The tracked tensor: grad's representation of a tensor at its level.

use super::graph::NodeRef;
use crate::ops::usize_args;
use crate::Tensor;

// The structural views go through ops (`permute`, `unsqueeze`, ...), so that
// the grad level records them like any other call: a batching rule or the
// fallback loop of an inner vmap that rearranges a tracked tensor is
// differentiated through.
usize_args::level_tensor_through_ops! {
    /// A tensor at a grad level: its value one level down (`inner`, which may
    /// itself belong to a lower level) and the graph node that produced it.
    struct Tracked {
        /// The value, one level down.
        inner: Tensor,
        /// The node that produced this value and which of its outputs it is.
        node: NodeRef,
    }
    value: inner, transform: "grad", kind: "tracked"
}
