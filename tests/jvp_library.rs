//! Forward mode over the whole built-in library: every differentiable op's
//! jvp against finite differences and against its vjp, the composition
//! matrix (vmap∘jvp, jvp∘vmap, jvp∘vjp, vmap∘jvp∘vjp), and jacfwd against
//! jacrev, on every sample, under `FallbackPolicy::Error` (a derivative that
//! needs the fallback loop is a missing batching rule).

use batchrules::dispatch::call_op;
use batchrules::registry::registry;
use batchrules::schema::OpKind;
use batchrules::testing::{check_jvp, check_op_jvp, op_infos, sample_tensors, with_tensors};
use batchrules::{set_fallback_policy, FallbackPolicy};

#[test]
fn every_differentiable_op_passes_check_jvp_the_composition_matrix_and_jacfwd_against_jacrev() {
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
        // and the vjp checked the jvp itself (not only the compositions).
        let mut any = false;
        for sample in (info.samples)() {
            match check_op_jvp(entry, &sample) {
                Ok(n) => checked += n,
                Err(m) => failures.push(m.to_string()),
            }
            let f = |ts: &[batchrules::Tensor]| {
                Ok(call_op(entry, &with_tensors(&sample, ts)?)?.into_vec())
            };
            any |= check_jvp(f, &sample_tensors(&sample)).is_ok_and(|n| n > 0);
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
    // Every differentiable op of the library had its jvp checked against
    // finite differences and its vjp on some sample.
    let missing: Vec<&str> = reg
        .ops()
        .iter()
        .filter(|e| e.table.path == "batchrules::ops")
        .filter(|e| e.schema.kind == OpKind::Composite || e.schema.differentiable)
        .map(|e| e.name())
        .filter(|n| !ops_checked.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "differentiable ops never checked: {missing:?}"
    );
}
