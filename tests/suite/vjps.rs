//! The vjps of the built-in library, called directly (no grad transform):
//! each against central finite differences in f64 on its op's sample inputs,
//! each gradient's shape and dtype against its input's, one vjp for every
//! differentiable primitive and none elsewhere, and every vjp under vmap
//! against the loop with the fallback loop forbidden.
//!
//! `tests/suite/grad_library.rs` checks the same vjps through `grad` (check_grad and
//! the composition matrix); this suite pins each formula on its own, so a
//! wrong derivative is reported at its op, not at the first function using it.

use std::collections::BTreeMap;

use batchrules::dispatch::call_op;
use batchrules::registry::{registry, OpEntry};
use batchrules::schema::OpKind;
use batchrules::testing::{check_vmap, describe, sample_tensors, with_tensors, Sample};
use batchrules::transform::{vjps, VjpRuleFn};
use batchrules::{ops, DType, FallbackPolicy, Tensor};
use batchrules_samples::op_infos;

const TABLE: &str = "batchrules::ops";

/// The ops of the built-in table with a vjp, with it.
fn vjps() -> BTreeMap<&'static str, (&'static OpEntry, VjpRuleFn)> {
    registry()
        .unwrap()
        .ops()
        .iter()
        .filter(|e| e.table.path == TABLE)
        .filter_map(|e| Some((e.name(), (e, vjps::TABLE.get(e).unwrap()?))))
        .collect()
}

#[test]
fn every_differentiable_primitive_has_a_vjp_and_no_other_op_has_one() {
    let reg = registry().unwrap();
    let mut missing = Vec::new();
    for e in reg.ops().iter().filter(|e| e.table.path == TABLE) {
        let differentiable = e.schema.kind == OpKind::Primitive && e.schema.differentiable;
        match (differentiable, vjps::TABLE.get(e).unwrap().is_some()) {
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
    // The report agrees, for the built-in table (this binary's other suites
    // declare test ops of their own, some with no vjp on purpose).
    let reported: Vec<&str> = batchrules::coverage::missing_vjps()
        .unwrap()
        .iter()
        .filter(|e| e.table.path == TABLE)
        .map(|e| e.name())
        .collect();
    assert!(reported.is_empty(), "missing_vjps reports {reported:?}");
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
    ops::to_dtype(&t, dtype).unwrap()
}

/// The values of a float tensor, as f64.
fn values(t: &Tensor) -> Vec<f64> {
    let t = ops::to_dtype(t, DType::F64).unwrap();
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

/// The cotangents of an op's outputs: `filled` for a float output, zeros
/// for an integer or bool one (as grad gives it: it carries no gradient).
fn cotangents(ys: &[Tensor]) -> Vec<Tensor> {
    ys.iter()
        .map(|y| {
            if y.dtype().is_float() {
                filled(y.shape(), y.dtype(), 0.3)
            } else {
                let shape: Vec<i64> = y.shape().iter().map(|&d| d as i64).collect();
                ops::zeros(&shape, y.dtype()).unwrap()
            }
        })
        .collect()
}

/// `<g, f(sample with tensor k moved by s * v)>` summed over the float
/// outputs (`g` holds their cotangents' values, in order), or `None` if the
/// call fails.
fn projected(
    entry: &'static OpEntry,
    sample: &Sample,
    k: usize,
    v: &[f64],
    s: f64,
    g: &[Vec<f64>],
) -> Option<f64> {
    let mut tensors = sample_tensors(sample);
    let moved: Vec<f64> = values(&tensors[k])
        .iter()
        .zip(v)
        .map(|(a, b)| a + s * b)
        .collect();
    tensors[k] = Tensor::from_shape_vec(tensors[k].shape(), moved).ok()?;
    let y = call_op(entry, &with_tensors(sample, &tensors).ok()?)
        .ok()?
        .into_vec();
    let floats = y.iter().filter(|y| y.dtype().is_float());
    Some(
        floats
            .zip(g)
            .map(|(y, g)| values(y).iter().zip(g).map(|(a, b)| a * b).sum::<f64>())
            .sum(),
    )
}

/// Checks the vjp of `entry` on one sample: every float input gets a
/// gradient of its own shape and dtype (others get `None`), and each f64
/// input's gradient agrees with central differences of `<g, f(x + s v)>`.
/// Returns how many gradients were compared with finite differences, and
/// how many were skipped at a kink or a non-finite value.
fn check_sample(
    entry: &'static OpEntry,
    vjp: VjpRuleFn,
    sample: &Sample,
) -> Result<(usize, usize), String> {
    let case = format!("{} {}", entry.name(), describe(sample));
    let ys = call_op(entry, sample).unwrap().into_vec();
    if !ys.iter().any(|y| y.dtype().is_float()) {
        return Ok((0, 0));
    }
    let gs = cotangents(&ys);
    let grads = vjp(sample, &ys, &gs).map_err(|e| format!("{case}: the vjp failed: {e}"))?;
    let y = &ys[0];
    let tensors = sample_tensors(sample);
    if grads.len() != tensors.len() {
        return Err(format!(
            "{case}: {} gradients for {} tensors",
            grads.len(),
            tensors.len()
        ));
    }
    let g: Vec<Vec<f64>> = gs
        .iter()
        .filter(|g| g.dtype().is_float())
        .map(values)
        .collect();
    let (mut compared, mut skipped) = (0, 0);
    for (k, (x, grad)) in tensors.iter().zip(&grads).enumerate() {
        let Some(grad) = grad else {
            if x.dtype().is_float() {
                return Err(format!("{case}: no gradient for float tensor {k}"));
            }
            continue;
        };
        if !x.dtype().is_float() || grad.shape() != x.shape() || grad.dtype() != x.dtype() {
            return Err(format!(
                "{case}: the gradient of tensor {k} ({}{:?}) is {}{:?}",
                x.dtype(),
                x.shape(),
                grad.dtype(),
                grad.shape()
            ));
        }
        if x.dtype() != DType::F64 || y.dtype() != DType::F64 || x.shape().contains(&0) {
            continue;
        }
        let v = values(&filled(x.shape(), DType::F64, 1.1));
        let h = 1e-6;
        let at = |s: f64| projected(entry, sample, k, &v, s, &g);
        let (Some(f0), Some(fp), Some(fm)) = (at(0.0), at(h), at(-h)) else {
            skipped += 1;
            continue;
        };
        let central = (fp - fm) / (2.0 * h);
        let (forward, backward) = ((fp - f0) / h, (f0 - fm) / h);
        // A kink (abs at 0, a tie of maximum, ...) or a non-finite value: no
        // derivative to compare with.
        if !central.is_finite() || (forward - backward).abs() > 1e-3 * (1.0 + central.abs()) {
            skipped += 1;
            continue;
        }
        let expected: f64 = values(grad).iter().zip(&v).map(|(a, b)| a * b).sum();
        if (central - expected).abs() > 1e-5 * (1.0 + expected.abs()) {
            return Err(format!(
                "{case}: tensor {k}: the vjp gives <grad, v> = {expected}, finite differences {central}"
            ));
        }
        compared += 1;
    }
    Ok((compared, skipped))
}

#[test]
fn vjps_match_central_differences_and_fit_their_inputs() {
    let vjps = vjps();
    let mut failures = Vec::new();
    let mut compared: BTreeMap<&str, usize> = vjps.keys().map(|&op| (op, 0)).collect();
    let mut skipped = 0;
    for info in op_infos().filter(|i| i.table.path == TABLE) {
        let Some(&(entry, vjp)) = vjps.get(info.op) else {
            continue;
        };
        for sample in (info.samples)() {
            match check_sample(entry, vjp, &sample) {
                Ok((c, s)) => {
                    *compared.entry(info.op).or_default() += c;
                    skipped += s;
                }
                Err(m) => failures.push(m),
            }
        }
    }
    println!("finite-difference comparisons per op: {compared:?}; {skipped} skipped at kinks or non-finite values");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let unchecked: Vec<&str> = compared
        .iter()
        .filter(|&(_, &n)| n == 0)
        .map(|(op, _)| *op)
        .collect();
    assert!(
        unchecked.is_empty(),
        "vjps that no sample compared with finite differences: {unchecked:?}"
    );
}

/// Every vjp under vmap against the loop over examples (every in_dims
/// combination of the op's inputs, its result and its cotangent, batch sizes
/// 0, 1 and 3, nested), with the fallback loop forbidden: a vjp is written
/// with ops that all have batching rules, so per-sample gradients never loop.
#[test]
fn vjps_batch_under_vmap_without_the_fallback() {
    let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Error);
    let vjps = vjps();
    let mut failures = Vec::new();
    let mut cases = 0;
    for info in op_infos().filter(|i| i.table.path == TABLE) {
        let Some(&(entry, vjp)) = vjps.get(info.op) else {
            continue;
        };
        for sample in (info.samples)() {
            let ys = call_op(entry, &sample).unwrap().into_vec();
            if !ys.iter().any(|y| y.dtype().is_float()) {
                continue;
            }
            let gs = cotangents(&ys);
            let mut inputs = sample_tensors(&sample);
            let (n, m) = (inputs.len(), ys.len());
            inputs.extend(ys);
            inputs.extend(gs);
            let pullback = |ts: &[Tensor]| -> batchrules::Result<Vec<Tensor>> {
                let args = with_tensors(&sample, &ts[..n])?;
                let grads = vjp(&args, &ts[n..n + m], &ts[n + m..])?;
                Ok(grads.into_iter().flatten().collect())
            };
            match check_vmap(pullback, &inputs) {
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
