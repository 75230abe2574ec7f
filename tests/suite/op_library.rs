//! Every op of the built-in table, exhaustively under vmap: each sample input
//! against the per-example loop for every in_dims combination, batch sizes 1 and
//! 3, and nested vmap; each error input must error under every in_dims
//! combination; and no op may reach the fallback loop. Also: every op declares
//! sample and error inputs, and batches an empty batch.

use std::collections::BTreeMap;

use batchrules::coverage::{vmap_strategy, VmapStrategy};
use batchrules::dispatch::call_op;
use batchrules::registry::{registry, OpEntry};
use batchrules::rules::Arg;
use batchrules::schema::OpKind;
use batchrules::testing::{
    check_op, check_op_errors, describe, sample_tensors, with_tensors, OpInfo,
};
use batchrules::transform::batching_rules;
use batchrules::{vmap, FallbackPolicy, Randomness, Tensor};

const TABLE: &str = "batchrules::ops";

/// The ops that accept every input, so they have no error inputs to declare:
/// `detach` is the identity on any tensor, and every i64 is a seed of
/// `random_key`.
const ACCEPTS_EVERY_INPUT: &[&str] = &["detach", "random_key"];

/// The OpInfos of the table's ops, by op name: the `batchrules-samples`
/// crate's, which calling its `op_infos` links in (without it, no op would
/// have inputs, and `every_op_has_sample_and_error_inputs` would fail).
fn infos() -> BTreeMap<&'static str, &'static OpInfo> {
    let mut infos = BTreeMap::new();
    for info in batchrules_samples::op_infos().filter(|i| i.table.path == TABLE) {
        // One source of inputs per op: its own `op_samples!`, or the sample
        // set its table entry names, never both.
        let before = infos.insert(info.op, info);
        assert!(
            before.is_none(),
            "`{}` has inputs twice: an op_samples! and a sample set?",
            info.op
        );
    }
    infos
}

#[test]
fn every_sample_set_an_op_names_is_declared_once() {
    let sets: Vec<_> = batchrules::testing::sample_sets()
        .filter(|s| s.table.path == TABLE)
        .collect();
    for (i, set) in sets.iter().enumerate() {
        assert!(
            sets[..i].iter().all(|s| s.name != set.name),
            "sample set `{}` is declared twice",
            set.name
        );
    }
    let reg = registry().unwrap();
    for e in reg.ops().iter().filter(|e| e.table.path == TABLE) {
        if let Some(name) = e.schema.samples {
            assert!(
                sets.iter().any(|s| s.name == name),
                "`{}` names the sample set `{name}`, which no sample_set! declares",
                e.name()
            );
        }
    }
    // The built-in float and numeric unary ops share their sets.
    assert_eq!(
        reg.find(TABLE, "tanh").unwrap().schema.samples,
        Some("float")
    );
    assert_eq!(
        reg.find(TABLE, "relu").unwrap().schema.samples,
        Some("numeric")
    );
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
/// output's shape after a leading 0. A random op runs under
/// `Randomness::Different` (each example would draw its own stream).
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
        .randomness(if entry.schema.random {
            Randomness::Different
        } else {
            Randomness::Error
        })
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
    let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Error);
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
        .filter(|e| e.table.path == TABLE && vmap_strategy(e).unwrap() == VmapStrategy::Fallback)
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
    let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Error);
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
            && vmap_strategy(entry).unwrap() != VmapStrategy::NeverBatched
        {
            assert!(
                batching_rules::TABLE.get(entry).unwrap().is_some(),
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

// ---------------------------------------------------------------------------
// The primitives the vjps are built from: their values (the sweep above only
// compares vmap with the loop) and their errors.

mod reverse_ops {
    use batchrules::{ops, DType, Tensor};
    use ndarray::{array, ArrayD};

    fn t(a: ArrayD<f64>) -> Tensor {
        Tensor::from(a)
    }

    fn values(x: &Tensor) -> ArrayD<f64> {
        x.to_array::<f64>().unwrap()
    }

    fn index(v: &[i64]) -> Tensor {
        Tensor::from_shape_vec(&[v.len()], v.to_vec()).unwrap()
    }

    #[test]
    fn sum_to_size_sums_what_expand_copied() {
        let x = t(array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]].into_dyn());
        let rows = ops::sum_to_size(&x, &[3]).unwrap();
        assert_eq!(values(&rows), array![5.0, 7.0, 9.0].into_dyn());
        let cols = ops::sum_to_size(&x, &[2, 1]).unwrap();
        assert_eq!(values(&cols), array![[6.0], [15.0]].into_dyn());
        let all = ops::sum_to_size(&x, &[]).unwrap();
        assert_eq!(values(&all), ArrayD::from_elem(vec![], 21.0));
        // sum_to_size(expand(v)) is v times the number of copies.
        let v = t(array![[1.0], [2.0]].into_dyn());
        let e = ops::expand(&v, &[3, 2, 4]).unwrap();
        let back = ops::sum_to_size(&e, &[2, 1]).unwrap();
        assert_eq!(values(&back), array![[12.0], [24.0]].into_dyn());
        // bool is counted in i64.
        let b = Tensor::from(array![[true, false], [true, true]].into_dyn());
        let counted = ops::sum_to_size(&b, &[2]).unwrap();
        assert_eq!(
            counted.to_array::<i64>().unwrap(),
            array![2i64, 1].into_dyn()
        );
    }

    #[test]
    fn sum_to_size_rejects_a_size_that_does_not_broadcast() {
        let x = t(ArrayD::zeros(vec![2, 3]));
        for size in [&[2i64][..], &[1, 2, 3], &[-1], &[0, 3]] {
            let err = ops::sum_to_size(&x, size).unwrap_err().to_string();
            assert!(err.starts_with("sum_to_size:"), "{err}");
        }
    }

    #[test]
    fn index_add_accumulates_repeated_indices() {
        let x = t(ArrayD::zeros(vec![3, 2]));
        let source = t(array![[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]].into_dyn());
        let out = ops::index_add(&x, 0, &index(&[2, 0, 2]), &source).unwrap();
        assert_eq!(
            values(&out),
            array![[10.0, 20.0], [0.0, 0.0], [101.0, 202.0]].into_dyn()
        );
        // The reverse of index_select: <index_select(x), g> = <x, index_add(0, g)>.
        let x = t(array![[1.0, -2.0], [0.5, 3.0], [4.0, 1.5]].into_dyn());
        let i = index(&[1, 1, 0, 2]);
        let g = t(array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]].into_dyn());
        let selected = ops::index_select(&x, 0, &i).unwrap();
        let lhs = (values(&selected) * values(&g)).sum();
        let zeros = t(ArrayD::zeros(vec![3, 2]));
        let rhs = (values(&x) * values(&ops::index_add(&zeros, 0, &i, &g).unwrap())).sum();
        assert_eq!(lhs, rhs);
    }

    #[test]
    fn scatter_add_is_the_reverse_of_gather() {
        let x = t(ArrayD::zeros(vec![2, 3]));
        let i = Tensor::from(array![[1i64, 0, 1], [1, 1, 0]].into_dyn());
        let src = t(array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]].into_dyn());
        let out = ops::scatter_add(&x, 0, &i, &src).unwrap();
        assert_eq!(
            values(&out),
            array![[0.0, 2.0, 6.0], [5.0, 5.0, 3.0]].into_dyn()
        );
        // <gather(y), g> = <y, scatter_add(0, g)>.
        let y = t(array![[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]].into_dyn());
        let lhs = (values(&ops::gather(&y, 0, &i).unwrap()) * values(&src)).sum();
        let rhs = (values(&y) * values(&out)).sum();
        assert_eq!(lhs, rhs);
    }

    #[test]
    fn accumulating_ops_check_every_index_and_dtype() {
        let x = t(ArrayD::zeros(vec![3]));
        let err = ops::index_add(&x, 0, &index(&[3]), &t(array![1.0].into_dyn()))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("index_add:") && err.contains("out of range"),
            "{err}"
        );
        let err = ops::scatter_add(&x, 0, &index(&[-1]), &t(array![1.0].into_dyn()))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("scatter_add:") && err.contains("out of range"),
            "{err}"
        );
        let f32s = Tensor::from(array![1.0f32].into_dyn());
        let err = ops::index_add(&x, 0, &index(&[0]), &f32s)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("index_add:") && err.contains("dtype"),
            "{err}"
        );
    }

    #[test]
    fn pad_dim_is_the_reverse_of_narrow() {
        let x = t(array![[1.0, 2.0], [3.0, 4.0]].into_dyn());
        let padded = ops::pad_dim(&x, 1, 1, 2).unwrap();
        assert_eq!(
            values(&padded),
            array![[0.0, 1.0, 2.0, 0.0, 0.0], [0.0, 3.0, 4.0, 0.0, 0.0]].into_dyn()
        );
        let back = ops::narrow(&padded, 1, 1, 2).unwrap();
        assert_eq!(values(&back), values(&x));
        for (before, after) in [(-1, 0), (0, -1), (i64::MAX, 0)] {
            let err = ops::pad_dim(&x, 0, before, after).unwrap_err().to_string();
            assert!(err.starts_with("pad_dim:"), "{err}");
        }
        let err = ops::pad_dim(&t(ArrayD::zeros(vec![])), 0, 1, 1)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("pad_dim:") && err.contains("0-d"), "{err}");
    }

    #[test]
    fn detach_is_the_identity_and_to_dtype_converts() {
        let x = t(array![1.5, -2.5, 0.0].into_dyn());
        assert_eq!(values(&ops::detach(&x).unwrap()), values(&x));
        let ints = ops::to_dtype(&x, DType::I64).unwrap();
        assert_eq!(
            ints.to_array::<i64>().unwrap(),
            array![1i64, -2, 0].into_dyn()
        );
        let bools = ops::to_dtype(&x, DType::Bool).unwrap();
        assert_eq!(
            bools.to_array::<bool>().unwrap(),
            array![true, true, false].into_dyn()
        );
        let f32s = ops::to_dtype(&t(array![1e300].into_dyn()), DType::F32).unwrap();
        assert_eq!(f32s.to_array::<f32>().unwrap()[[0]], f32::INFINITY);
        for bad in [f64::NAN, f64::INFINITY, 1e19, -1e19] {
            let err = ops::to_dtype(&t(array![bad].into_dyn()), DType::I64)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("to_dtype:") && err.contains("i64"), "{err}");
        }
    }
}
