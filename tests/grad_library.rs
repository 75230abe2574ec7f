//! Reverse mode over the whole built-in library: every differentiable op's
//! vjp against finite differences, and the composition matrix (vmap∘vjp,
//! vjp∘vmap, vjp∘vjp, vmap∘vjp∘vjp) on every sample, under
//! `FallbackPolicy::Error` (a derivative that needs the fallback loop is a
//! missing batching rule).
//!
//! Random ops (`dropout`, `bernoulli`) get the finite-difference check only:
//! the composition matrix runs vmap at its default randomness policy, which
//! refuses a random op by design. Their compositions with vmap are checked
//! under each policy in `tests/randomness.rs`.

use batchrules::dispatch::call_op;
use batchrules::registry::registry;
use batchrules::schema::OpKind;
use batchrules::testing::{check_grad, check_op_grad, op_infos, sample_tensors, with_tensors};
use batchrules::{set_fallback_policy, FallbackPolicy};

#[test]
fn every_differentiable_op_passes_check_grad_and_the_composition_matrix() {
    set_fallback_policy(FallbackPolicy::Error);
    let reg = registry().expect("registry");
    let mut failures = Vec::new();
    let mut checked = 0usize;
    let mut ops_checked = Vec::new();
    for info in op_infos() {
        if info.table.path != "batchrules::ops" {
            continue;
        }
        let entry = reg.find(info.table.path, info.op).expect("op of a sample");
        if entry.schema.kind == OpKind::Primitive && !entry.schema.differentiable {
            continue;
        }
        // `any`: some sample had finite values, so the finite differences
        // checked the vjp itself (not only the compositions).
        let mut any = false;
        for sample in (info.samples)() {
            if !entry.schema.random {
                match check_op_grad(entry, &sample) {
                    Ok(n) => checked += n,
                    Err(m) => failures.push(m.to_string()),
                }
            }
            let f = |ts: &[batchrules::Tensor]| {
                Ok(call_op(entry, &with_tensors(&sample, ts)?)?.into_vec())
            };
            any |= check_grad(f, &sample_tensors(&sample)).is_ok_and(|n| n > 0);
        }
        if any {
            ops_checked.push(info.op);
        }
    }
    ops_checked.sort_unstable();
    ops_checked.dedup();
    println!(
        "{checked} cases over {} ops: {ops_checked:?}",
        ops_checked.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every differentiable op of the library had its vjp checked against
    // finite differences on some sample (an op without tensor arguments,
    // such as `rand`, has nothing to differentiate).
    let missing: Vec<&str> = reg
        .ops()
        .iter()
        .filter(|e| e.table.path == "batchrules::ops")
        .filter(|e| e.schema.kind == OpKind::Composite || e.schema.differentiable)
        .filter(|e| e.schema.takes_tensors())
        .map(|e| e.name())
        .filter(|n| !ops_checked.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "differentiable ops never checked: {missing:?}"
    );
}
