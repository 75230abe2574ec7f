//! Each vjp against central finite differences in f64, on its op's sample
//! inputs, and each gradient's shape and dtype against its input's.

use std::collections::{BTreeMap, BTreeSet};

use super::{vjps, ErasedVjp};
use crate::core::cast::cast;
use crate::dispatch::call_op;
use crate::registry::registry;
use crate::schema::OpKind;
use crate::testing::{describe, op_infos, sample_tensors, with_tensors, Sample};
use crate::{DType, Data, Tensor};

const TABLE: &str = "batchrules::ops";

fn table() -> BTreeMap<&'static str, ErasedVjp> {
    let mut seen = BTreeMap::new();
    for (op, f) in vjps() {
        assert!(seen.insert(op, f).is_none(), "two vjps for {op}");
    }
    seen
}

#[test]
fn every_differentiable_primitive_has_one_vjp_and_no_other_op_has_one() {
    let table = table();
    let reg = registry().unwrap();
    let mut missing = Vec::new();
    let mut names = BTreeSet::new();
    for e in reg.ops().iter().filter(|e| e.table.path == TABLE) {
        names.insert(e.name());
        let differentiable = e.schema.kind == OpKind::Primitive && e.schema.differentiable;
        match (differentiable, table.contains_key(e.name())) {
            (true, false) => missing.push(e.name()),
            (false, true) => panic!(
                "{} has a vjp but is not a differentiable primitive",
                e.name()
            ),
            _ => {}
        }
    }
    assert!(
        missing.is_empty(),
        "differentiable primitives without a vjp: {missing:?}"
    );
    for op in table.keys() {
        assert!(
            names.contains(op),
            "a vjp for {op}, which the table does not declare"
        );
    }
}

/// Deterministic values that are not symmetric around anything special.
fn wave(i: usize, phase: f64) -> f64 {
    ((i as f64) * 1.37 + phase).cos() + 0.05 * i as f64
}

/// A tensor of `shape` and `dtype` holding `wave(i, phase)`.
fn filled(shape: &[usize], dtype: DType, phase: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let t = Tensor::from_shape_vec(shape, (0..n).map(|i| wave(i, phase)).collect::<Vec<f64>>())
        .unwrap();
    Tensor::from_data(cast(&t, dtype).unwrap().into_owned())
}

fn f64s(t: &Tensor) -> Vec<f64> {
    match &*cast(t, DType::F64).unwrap() {
        Data::F64(a) => a.iter().copied().collect(),
        _ => unreachable!("cast to f64"),
    }
}

/// `<g, f(sample with tensor k moved by s * v)>`, or `None` if the call fails.
fn projected(
    entry: &'static crate::registry::OpEntry,
    sample: &Sample,
    k: usize,
    v: &[f64],
    s: f64,
    g: &[f64],
) -> Option<f64> {
    let mut tensors = sample_tensors(sample);
    let x = f64s(&tensors[k]);
    let moved: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + s * b).collect();
    tensors[k] = Tensor::from_shape_vec(tensors[k].shape(), moved).ok()?;
    let y = call_op(entry, &with_tensors(sample, &tensors).ok()?)
        .ok()?
        .into_vec();
    Some(f64s(&y[0]).iter().zip(g).map(|(a, b)| a * b).sum())
}

#[test]
fn vjps_match_central_differences_and_fit_their_inputs() {
    let table = table();
    let reg = registry().unwrap();
    let mut failures = Vec::new();
    let mut checked: BTreeMap<&str, usize> = BTreeMap::new();
    let mut skipped = 0;
    for info in op_infos().filter(|i| i.table.path == TABLE) {
        let Some(vjp) = table.get(info.op) else {
            continue;
        };
        let entry = reg.find(TABLE, info.op).unwrap();
        checked.entry(info.op).or_default();
        for sample in (info.samples)() {
            let case = format!("{} {}", info.op, describe(&sample));
            let y = call_op(entry, &sample).unwrap().into_vec().remove(0);
            if !y.dtype().is_float() {
                continue;
            }
            let g = filled(y.shape(), y.dtype(), 0.3);
            let grads = match vjp(&sample, std::slice::from_ref(&y), std::slice::from_ref(&g)) {
                Ok(grads) => grads,
                Err(e) => {
                    failures.push(format!("{case}: the vjp failed: {e}"));
                    continue;
                }
            };
            let tensors = sample_tensors(&sample);
            if grads.len() != tensors.len() {
                failures.push(format!(
                    "{case}: {} gradients for {} tensors",
                    grads.len(),
                    tensors.len()
                ));
                continue;
            }
            let g = f64s(&g);
            for (k, (x, grad)) in tensors.iter().zip(&grads).enumerate() {
                let Some(grad) = grad else {
                    if x.dtype().is_float() {
                        failures.push(format!("{case}: no gradient for float tensor {k}"));
                    }
                    continue;
                };
                if !x.dtype().is_float() || grad.shape() != x.shape() || grad.dtype() != x.dtype() {
                    failures.push(format!(
                        "{case}: the gradient of tensor {k} ({}{:?}) is {}{:?}",
                        x.dtype(),
                        x.shape(),
                        grad.dtype(),
                        grad.shape()
                    ));
                    continue;
                }
                if x.dtype() != DType::F64 || y.dtype() != DType::F64 || x.shape().contains(&0) {
                    continue;
                }
                let v = f64s(&filled(x.shape(), DType::F64, 1.1));
                let h = 1e-6;
                let at = |s: f64| projected(entry, &sample, k, &v, s, &g);
                let (Some(f0), Some(fp), Some(fm)) = (at(0.0), at(h), at(-h)) else {
                    skipped += 1;
                    continue;
                };
                let central = (fp - fm) / (2.0 * h);
                let (forward, backward) = ((fp - f0) / h, (f0 - fm) / h);
                // A kink (abs at 0, ties of maximum, ...) or a non-finite value:
                // no derivative to compare with.
                if !central.is_finite() || (forward - backward).abs() > 1e-3 * (1.0 + central.abs())
                {
                    skipped += 1;
                    continue;
                }
                let expected: f64 = f64s(grad).iter().zip(&v).map(|(a, b)| a * b).sum();
                if (central - expected).abs() > 1e-5 * (1.0 + expected.abs()) {
                    failures.push(format!(
                        "{case}: tensor {k}: the vjp gives <grad, v> = {expected}, finite differences {central}"
                    ));
                    continue;
                }
                *checked.entry(info.op).or_default() += 1;
            }
        }
    }
    let unchecked: Vec<&str> = checked
        .iter()
        .filter(|(_, &n)| n == 0)
        .map(|(op, _)| *op)
        .collect();
    println!("finite-difference cases per op: {checked:?}; {skipped} skipped at kinks or non-finite values");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        unchecked.is_empty(),
        "vjps no sample checked against finite differences: {unchecked:?}"
    );
    assert_eq!(checked.len(), table.len(), "ops with a vjp but no samples");
}

/// Every vjp under vmap against the loop over examples (every in_dims
/// combination of the op's inputs, its result and its cotangent, batch sizes
/// 0, 1 and 3, nested), with the fallback loop forbidden: a vjp is written
/// with ops that all have batching rules, so per-sample gradients never loop.
#[test]
fn vjps_batch_under_vmap_without_the_fallback() {
    crate::set_fallback_policy(crate::FallbackPolicy::Error);
    let table = table();
    let reg = registry().unwrap();
    let mut failures = Vec::new();
    let mut cases = 0;
    for info in op_infos().filter(|i| i.table.path == TABLE) {
        let Some(&vjp) = table.get(info.op) else {
            continue;
        };
        let entry = reg.find(TABLE, info.op).unwrap();
        for sample in (info.samples)() {
            let y = call_op(entry, &sample).unwrap().into_vec().remove(0);
            if !y.dtype().is_float() {
                continue;
            }
            let g = filled(y.shape(), y.dtype(), 0.3);
            let mut inputs = sample_tensors(&sample);
            let n = inputs.len();
            inputs.extend([y, g]);
            let pullback = |ts: &[Tensor]| -> crate::Result<Vec<Tensor>> {
                let grads = vjp(
                    &with_tensors(&sample, &ts[..n])?,
                    &ts[n..n + 1],
                    &ts[n + 1..],
                )?;
                Ok(grads.into_iter().flatten().collect())
            };
            match crate::testing::check_vmap(pullback, &inputs) {
                Ok(k) => cases += k,
                Err(m) => failures.push(format!("{} {}: {m}", info.op, describe(&sample))),
            }
        }
    }
    println!("{cases} vmap(vjp) cases");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
