//! Forward-mode differentiation as a transform on the level stack.
//!
//! At a jvp level a tensor is *dual* ([`dual`]): a value and its tangent,
//! both one level down. An op call on dual tensors runs the op on the values
//! and its jvp on the tangents ([`interpreter`]): a `#[jvp]` written with ops,
//! or, for an op its table marks `linear`, the op itself applied to the
//! tangents. Both are ordinary op calls, so under an enclosing vmap they are
//! batched ([`jacfwd`](crate::jacfwd()) is the jvp vmapped over a basis of tangents) and under
//! an enclosing grad they are recorded. Composite ops are differentiated
//! through their decomposition.
//!
//! In the `transforms` layer (`runtime/src/transforms/`). It may use the
//! `core`, `table` and `dispatch` layers; in its own layer, `transform_fn`,
//! `batching`, `vmap` and `grad`. `tests/suite/layers.rs` enforces it.

mod api;
mod dual;
mod interpreter;
pub(crate) mod jacfwd;
pub(crate) mod rules;

pub use api::{hvp, jvp, jvp_with_aux};
pub(crate) use api::{jvp_with_constants, scalar_output};
pub(crate) use jacfwd::forward_jacobian;
