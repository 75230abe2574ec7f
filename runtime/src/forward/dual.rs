//! The dual tensor: the jvp transform's representation of a tensor at its
//! level.

use std::sync::Arc;

use crate::ops::internal;
use crate::{LevelId, Tensor};

/// A tensor at a jvp level: its value and its tangent, both one level down
/// (either may itself belong to a lower level, e.g. a tangent batched by the
/// vmap of [`jacfwd`](crate::jacfwd)). A tensor with a zero tangent is never
/// wrapped: it stays a tensor of the level below.
#[derive(Debug)]
pub(crate) struct Dual {
    /// The value, one level down.
    pub(crate) primal: Tensor,
    /// Its tangent, with the primal's logical shape and dtype.
    pub(crate) tangent: Tensor,
    /// The jvp level.
    pub(crate) level: LevelId,
}

impl Dual {
    /// Wraps `primal` and `tangent` as one tensor at `level`.
    pub(crate) fn wrap(primal: Tensor, tangent: Tensor, level: LevelId) -> Tensor {
        Tensor::from_level(Arc::new(Dual {
            primal,
            tangent,
            level,
        }))
    }
}

// As for grad's tracked tensors, the structural views go through ops, so
// the jvp level transforms them like any other call (they are linear: the
// same view of the tangent).
internal::level_tensor_through_ops!(Dual {
    value: primal,
    parts: [primal, tangent],
    transform: "jvp",
    kind: "dual"
});
