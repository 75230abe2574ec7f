//! Every op of the built-in table, exhaustively under vmap: each sample input
//! against the per-example loop for every in_dims combination, batch sizes 1 and
//! 3, and nested vmap; each error input must error under every in_dims
//! combination; and no op may reach the fallback loop. Also: every op declares
//! sample and error inputs, and batches an empty batch.

use std::collections::BTreeMap;

use batchrules::dispatch::call_op;
use batchrules::registry::{registry, VmapStrategy};
use batchrules::schema::OpKind;
use batchrules::testing::{
    check_op, check_op_errors, describe, op_infos, sample_tensors, with_tensors, OpInfo,
};
use batchrules::{set_fallback_policy, vmap, FallbackPolicy, Tensor};

const TABLE: &str = "batchrules::ops";

fn infos() -> BTreeMap<&'static str, &'static OpInfo> {
    op_infos()
        .filter(|i| i.table.path == TABLE)
        .map(|i| (i.op, i))
        .collect()
}

#[test]
fn every_op_has_sample_and_error_inputs() {
    // Every op of the table can be called wrongly (a bad dim, dtype, shape or
    // size), so every op declares inputs it must reject as well as valid ones.
    let infos = infos();
    let reg = registry().unwrap();
    let (mut no_samples, mut no_errors) = (Vec::new(), Vec::new());
    for name in reg
        .ops()
        .iter()
        .filter(|e| e.table.path == TABLE)
        .map(|e| e.name())
    {
        let info = infos.get(name);
        if info.is_none_or(|i| (i.samples)().is_empty()) {
            no_samples.push(name);
        }
        if info.is_none_or(|i| (i.errors)().is_empty()) {
            no_errors.push(name);
        }
    }
    assert!(
        no_samples.is_empty() && no_errors.is_empty(),
        "ops without sample inputs: {no_samples:?}; ops without error inputs: {no_errors:?}"
    );
}

#[test]
fn every_op_batches_an_empty_batch() {
    // A batch of 0 examples of each sample (one tensor argument batched at a
    // time) gives the dense result's shape with a leading 0.
    set_fallback_policy(FallbackPolicy::Error);
    let reg = registry().unwrap();
    let infos = infos();
    let mut failures = Vec::new();
    for entry in reg.ops().iter().filter(|e| e.table.path == TABLE) {
        let Some(info) = infos.get(entry.name()) else {
            continue;
        };
        for sample in (info.samples)() {
            let tensors = sample_tensors(&sample);
            let dense = call_op(entry, &sample).unwrap().into_vec();
            for i in 0..tensors.len() {
                let mut inputs = tensors.clone();
                inputs[i] = tensors[i].broadcast_new_dim(0, 0).unwrap();
                let in_dims: Vec<Option<i64>> =
                    (0..tensors.len()).map(|k| (k == i).then_some(0)).collect();
                let out = vmap(|ts: Vec<Tensor>| {
                    Ok(call_op(entry, &with_tensors(&sample, &ts)?)?.into_vec())
                })
                .in_dims(in_dims)
                .call(&inputs[..]);
                let expected: Vec<Vec<usize>> =
                    dense.iter().map(|t| [&[0], t.shape()].concat()).collect();
                match out {
                    Ok(out) => {
                        let got: Vec<Vec<usize>> = out.iter().map(|t| t.shape().to_vec()).collect();
                        if got != expected {
                            failures.push(format!(
                                "{} {} (argument {i} batched): shapes {got:?}, expected {expected:?}",
                                entry.name(),
                                describe(&sample)
                            ));
                        }
                    }
                    Err(e) => failures.push(format!(
                        "{} {} (argument {i} batched): {e}",
                        entry.name(),
                        describe(&sample)
                    )),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
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
