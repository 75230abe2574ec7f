//! Every op of the built-in table, exhaustively under vmap: each sample input
//! against the per-example loop for every in_dims combination, batch sizes 1 and
//! 3, and nested vmap; each error input must error under every in_dims
//! combination; and no op may reach the fallback loop.

use std::collections::BTreeMap;

use batchrules::registry::{registry, VmapStrategy};
use batchrules::schema::OpKind;
use batchrules::testing::{check_op, check_op_errors, op_infos, OpInfo};
use batchrules::{set_fallback_policy, FallbackPolicy};

const TABLE: &str = "batchrules::ops";

fn infos() -> BTreeMap<&'static str, &'static OpInfo> {
    op_infos()
        .filter(|i| i.table.path == TABLE)
        .map(|i| (i.op, i))
        .collect()
}

#[test]
fn every_op_has_samples_and_error_inputs_where_it_can_fail() {
    let infos = infos();
    let reg = registry().unwrap();
    let missing: Vec<&str> = reg
        .ops()
        .iter()
        .filter(|e| e.table.path == TABLE)
        .map(|e| e.name())
        .filter(|name| infos.get(name).is_none_or(|i| (i.samples)().is_empty()))
        .collect();
    assert!(missing.is_empty(), "ops without sample inputs: {missing:?}");
}

#[test]
fn every_op_has_a_rule_or_a_decomposition() {
    let reg = registry().unwrap();
    let on_fallback: Vec<&str> = reg
        .ops()
        .iter()
        .filter(|e| e.table.path == TABLE && e.vmap_strategy() == VmapStrategy::Fallback)
        .map(|e| e.name())
        .collect();
    assert!(
        on_fallback.is_empty(),
        "ops on the fallback: {on_fallback:?}"
    );
}

#[test]
fn every_op_matches_the_loop_and_rejects_its_error_inputs() {
    // Any op reaching the fallback loop fails the call: this proves every
    // primitive is batched by its rule and every composite by its decomposition.
    set_fallback_policy(FallbackPolicy::Error);
    let reg = registry().unwrap();
    let infos = infos();
    let mut failures = Vec::new();
    let (mut ops, mut cases, mut error_cases) = (0, 0, 0);
    for entry in reg.ops().iter().filter(|e| e.table.path == TABLE) {
        let Some(info) = infos.get(entry.name()) else {
            continue;
        };
        ops += 1;
        for sample in (info.samples)() {
            match check_op(entry, &sample) {
                Ok(n) => cases += n,
                Err(m) => failures.push(m.to_string()),
            }
        }
        for sample in (info.errors)() {
            match check_op_errors(entry, &sample) {
                Ok(n) => error_cases += n,
                Err(m) => failures.push(m.to_string()),
            }
        }
        if entry.schema.kind == OpKind::Primitive
            && entry.vmap_strategy() != VmapStrategy::NeverBatched
        {
            assert!(
                entry.rule.is_some(),
                "{} has no batching rule",
                entry.name()
            );
        }
    }
    println!("{ops} ops, {cases} (op, sample, in_dims) cases, {error_cases} error cases");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
