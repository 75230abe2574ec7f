//! Forward mode over the whole built-in library: every differentiable op's
//! jvp against finite differences and against its vjp, the composition
//! matrix (vmap∘jvp, jvp∘vmap, jvp∘vjp, vmap∘jvp∘vjp), and jacfwd against
//! jacrev, on every sample, under `FallbackPolicy::Error` (a derivative that
//! needs the fallback loop is a missing batching rule).

use batchrules::testing::{check_jvp, check_op_jvp};

use crate::common;

#[test]
fn every_differentiable_op_passes_check_jvp_the_composition_matrix_and_jacfwd_against_jacrev() {
    // Every differentiable op also had its jvp checked against finite
    // differences on some sample.
    common::sweep_differentiable_ops(check_op_jvp, |f, inputs| check_jvp(f, inputs));
}
