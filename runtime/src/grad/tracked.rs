//! The tracked tensor: grad's representation of a tensor at its level.

use std::sync::Arc;

use crate::{LevelId, Tensor};

use super::graph::NodeRef;
use crate::ops::internal;

/// A tensor at a grad level: its value one level down (`inner`, which may
/// itself belong to a lower level) and the graph node that produced it.
#[derive(Debug)]
pub(crate) struct Tracked {
    /// The value, one level down.
    pub(crate) inner: Tensor,
    /// The node that produced this value and which of its outputs it is.
    pub(crate) node: NodeRef,
    /// The grad level.
    pub(crate) level: LevelId,
}

impl Tracked {
    /// Wraps `inner` as tracked at `level`, produced by `node`.
    pub(crate) fn wrap(inner: Tensor, node: NodeRef, level: LevelId) -> Tensor {
        Tensor::from_level(Arc::new(Tracked { inner, node, level }))
    }
}

// The structural views go through ops (`permute`, `unsqueeze`, ...), so that
// the grad level records them like any other call: a batching rule or the
// fallback loop of an inner vmap that rearranges a tracked tensor is
// differentiated through.
internal::level_tensor_through_ops!(Tracked {
    value: inner,
    parts: [inner, node],
    transform: "grad",
    kind: "tracked"
});
