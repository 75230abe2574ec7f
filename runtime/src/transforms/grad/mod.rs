//! Reverse-mode differentiation as a transform on the level stack.
//!
//! At a grad level tensors are *tracked* ([`tracked`]): each op call on them
//! runs one level down and records a graph node ([`graph`]) holding what the
//! op's `#[vjp]` needs. The backward pass walks the graph calling those vjps,
//! which are written with ops: under an enclosing vmap they are batched (per
//! example gradients), under an enclosing grad they are recorded again
//! (higher derivatives). Composite ops are differentiated through their
//! decomposition, so each of their constituents is recorded.
//!
//! In the `transforms` layer (`runtime/src/transforms/`). It may use the
//! `core`, `table` and `dispatch` layers; in its own layer, `transform_fn`,
//! `batching` and `vmap`. `tests/suite/layers.rs` enforces it.

mod api;
pub(crate) mod args;
mod graph;
mod interpreter;
pub(crate) mod jacrev;
pub(crate) mod rules;
mod tracked;

pub(crate) use api::{float_primals, gradient, inconsistent_ranges, position};
pub use api::{
    grad, linearize, value_and_grad, vjp, vjp_with_aux, Grad, GradOutput, LinearizeFn,
    ValueAndGrad, VjpFn,
};
pub use args::{ArgAt, Argnum, Argnums, Argnums2, Argnums3, Argnums4, GradArgs};
pub use graph::needs_gradient;
pub(crate) use jacrev::reverse_jacobian;
