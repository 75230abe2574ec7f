//! The dual tensor: the jvp transform's representation of a tensor at its
//! level.

use crate::ops::usize_args;
use crate::Tensor;

// As for grad's tracked tensors, the structural views go through ops, so
// the jvp level transforms them like any other call (they are linear: the
// same view of the tangent).
usize_args::level_tensor_through_ops! {
    /// A tensor at a jvp level: its value and its tangent, both one level down
    /// (either may itself belong to a lower level, e.g. a tangent batched by the
    /// vmap of [`jacfwd`](crate::jacfwd)). A tensor with a zero tangent is never
    /// wrapped: it stays a tensor of the level below.
    struct Dual {
        /// The value, one level down.
        primal: Tensor,
        /// Its tangent, with the primal's logical shape and dtype.
        tangent: Tensor,
    }
    value: primal, transform: "jvp", kind: "dual"
}
