//! Reverse mode over the whole built-in library: every differentiable op's
//! vjp against finite differences, and the composition matrix (vmap∘vjp,
//! vjp∘vmap, vjp∘vjp, vmap∘vjp∘vjp) on every sample, under
//! `FallbackPolicy::Error` (a derivative that needs the fallback loop is a
//! missing batching rule).

use batchrules::testing::{check_grad, check_op_grad};

use crate::common;

#[test]
fn every_differentiable_op_passes_check_grad_and_the_composition_matrix() {
    // Every differentiable op also had its vjp checked against finite
    // differences on some sample.
    common::sweep_differentiable_ops(check_op_grad, |f, inputs| check_grad(f, inputs));
}
