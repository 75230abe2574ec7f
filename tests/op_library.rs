//! Every op of the built-in table, exhaustively under vmap: each sample input
//! against the per-example loop for every in_dims combination, batch sizes 1 and
//! 3, and nested vmap; each error input must error under every in_dims
//! combination; and no op may reach the fallback loop. Also: every op declares
//! sample and error inputs, and batches an empty batch.

use std::collections::BTreeMap;

use batchrules::dispatch::call_op;
use batchrules::registry::{registry, OpEntry, VmapStrategy};
use batchrules::schema::OpKind;
use batchrules::testing::{
    check_op, check_op_errors, describe, op_infos, sample_tensors, with_tensors, OpInfo,
};
use batchrules::{set_fallback_policy, vmap, Arg, FallbackPolicy, Tensor};

const TABLE: &str = "batchrules::ops";

/// The ops that accept every input, so they have no error inputs to declare:
/// `detach` is the identity on any tensor.
const ACCEPTS_EVERY_INPUT: &[&str] = &["detach"];

fn infos() -> BTreeMap<&'static str, &'static OpInfo> {
    op_infos()
        .filter(|i| i.table.path == TABLE)
        .map(|i| (i.op, i))
        .collect()
}

/// The ops of the table that declare sample inputs, with their inputs.
fn ops_with_inputs() -> Vec<(&'static OpEntry, &'static OpInfo)> {
    let infos = infos();
    registry()
        .unwrap()
        .ops()
        .iter()
        .filter(|e| e.table.path == TABLE)
        .filter_map(|e| Some((e, *infos.get(e.name())?)))
        .collect()
}

#[test]
fn every_op_has_sample_and_error_inputs() {
    // Every op of the table can be called wrongly (a bad dim, dtype, shape or
    // size), so every op declares inputs it must reject as well as valid ones;
    // an op listed as accepting every input must declare none.
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
        let rejects_nothing = info.is_none_or(|i| (i.errors)().is_empty());
        if rejects_nothing != ACCEPTS_EVERY_INPUT.contains(&name) {
            no_errors.push(name);
        }
    }
    assert!(
        no_samples.is_empty() && no_errors.is_empty(),
        "ops without sample inputs: {no_samples:?}; ops without error inputs (or, in \
         ACCEPTS_EVERY_INPUT, with some): {no_errors:?}"
    );
}

/// Calls `entry` on `sample` under vmap with tensor argument `i` made a batch
/// of 0 examples (the others unbatched): each output must have the dense
/// output's shape after a leading 0.
fn check_empty_batch(
    entry: &'static OpEntry,
    sample: &[Arg<Tensor>],
    i: usize,
) -> Result<(), String> {
    let tensors = sample_tensors(sample);
    let dense = call_op(entry, sample).map_err(|e| e.to_string())?;
    let mut inputs = tensors.clone();
    inputs[i] = tensors[i]
        .broadcast_new_dim(0, 0)
        .map_err(|e| e.to_string())?;
    let in_dims: Vec<Option<i64>> = (0..tensors.len()).map(|k| (k == i).then_some(0)).collect();
    let out = vmap(|ts: Vec<Tensor>| Ok(call_op(entry, &with_tensors(sample, &ts)?)?.into_vec()))
        .in_dims(in_dims)
        .call(&inputs[..])
        .map_err(|e| e.to_string())?;
    let got: Vec<Vec<usize>> = out.iter().map(|t| t.shape().to_vec()).collect();
    let expected: Vec<Vec<usize>> = dense.iter().map(|t| [&[0], t.shape()].concat()).collect();
    if got != expected {
        return Err(format!("shapes {got:?}, expected {expected:?}"));
    }
    Ok(())
}

#[test]
fn every_op_batches_an_empty_batch() {
    set_fallback_policy(FallbackPolicy::Error);
    let mut failures = Vec::new();
    for (entry, info) in ops_with_inputs() {
        for sample in (info.samples)() {
            for i in 0..sample_tensors(&sample).len() {
                if let Err(m) = check_empty_batch(entry, &sample, i) {
                    let case = describe(&sample);
                    failures.push(format!(
                        "{} {case} (argument {i} batched): {m}",
                        entry.name()
                    ));
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
    let mut failures = Vec::new();
    let (mut ops, mut cases, mut error_cases) = (0, 0, 0);
    for (entry, info) in ops_with_inputs() {
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
