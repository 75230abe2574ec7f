//! The normalization ops (`batch_norm`, `group_norm`, `rms_norm`) against
//! PyTorch: outputs (batch_norm's running statistics too) and the gradient of
//! every float input, f64 and f32, from
//! `tests/reference/torch_norm_losses.json` (recorded by
//! `scripts/reference/record_norm_losses.py`, which also holds the losses and
//! `embedding`, checked in `losses.rs` with the runner here), and `jvp`
//! against those gradients by transposition. Then: vmap
//! gives batch_norm per-example statistics, and per-sample gradients
//! (`vmap(grad)`) through each op run under `FallbackPolicy::Error` and
//! equal the loop.

use std::collections::BTreeMap;

pub(crate) use crate::recorded::{disagreement, floats, values};
use batchrules::prelude::*;
use batchrules::{jvp, vjp, FallbackPolicy};

/// The recorded cases.
fn reference() -> serde_json::Value {
    serde_json::from_str(include_str!("../reference/torch_norm_losses.json"))
        .expect("tests/reference/torch_norm_losses.json is JSON")
}

/// A recorded tensor (`null`: not given).
fn tensor(v: &serde_json::Value) -> Option<Tensor> {
    if v.is_null() {
        return None;
    }
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap() as usize)
        .collect();
    let values = &v["values"];
    Some(match v["dtype"].as_str().unwrap() {
        "i64" => {
            let ints = values
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap());
            Tensor::from_shape_vec(&shape, ints.collect::<Vec<i64>>()).unwrap()
        }
        "f32" => {
            let v: Vec<f32> = floats(values).into_iter().map(|x| x as f32).collect();
            Tensor::from_shape_vec(&shape, v).unwrap()
        }
        _ => Tensor::from_shape_vec(&shape, floats(values)).unwrap(),
    })
}

/// A case's tensor inputs by name (`None`: not given).
pub(crate) type Inputs = BTreeMap<String, Option<Tensor>>;

/// Calls a recorded op with its tensor inputs and its other arguments; returns
/// its outputs.
pub(crate) type Caller = fn(&Inputs, &serde_json::Value) -> Result<Vec<Tensor>>;

/// Checks every recorded case of the ops `callers` names against PyTorch: the
/// outputs and, through `vjp` with the recorded cotangents, the gradient of
/// each float input, to 1e-10 in f64 and 1e-5 in f32. Returns how many cases
/// each op had.
pub(crate) fn check_against_torch(callers: &[(&str, Caller)]) -> BTreeMap<String, usize> {
    let reference = reference();
    let mut counts = BTreeMap::new();
    for case in reference["cases"].as_array().unwrap() {
        let op = case["op"].as_str().unwrap();
        let Some(&(_, call)) = callers.iter().find(|(name, _)| *name == op) else {
            continue;
        };
        *counts.entry(op.to_string()).or_insert(0) += 1;
        let what = format!("{op} ({}, {})", case["note"], case["dtype"]);
        let tol = if case["dtype"] == "f64" { 1e-10 } else { 1e-5 };
        let args = &case["args"];
        let inputs: Inputs = case["inputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), tensor(v)))
            .collect();
        let check = |how: &str, got: &Tensor, want: &serde_json::Value| {
            let want_t = tensor(want).unwrap();
            assert_eq!(got.shape(), want_t.shape(), "{what}: {how} shape");
            assert_eq!(got.dtype(), want_t.dtype(), "{what}: {how} dtype");
            let (g, w) = (values(got), floats(&want["values"]));
            if let Some(i) = disagreement(&g, &w, tol) {
                panic!("{what}: {how}[{i}]: got {}, torch {}", g[i], w[i]);
            }
        };
        let outs = call(&inputs, args).unwrap_or_else(|e| panic!("{what}: {e}"));
        let recorded = case["outputs"].as_array().unwrap();
        assert_eq!(outs.len(), recorded.len(), "{what}: outputs");
        for (k, (o, r)) in outs.iter().zip(recorded).enumerate() {
            check(&format!("output {k}"), o, r);
        }

        // The gradients: vjp over the float inputs, the others held.
        let grads = case["grads"].as_object().unwrap();
        let names: Vec<&String> = grads.keys().collect();
        let primals: Vec<Tensor> = names.iter().map(|n| inputs[*n].clone().unwrap()).collect();
        let cotangents: Vec<Tensor> = case["cotangents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| tensor(c).unwrap())
            .collect();
        let (_, pullback) = vjp(
            |xs: Vec<Tensor>| {
                let mut with = inputs.clone();
                for (n, x) in names.iter().zip(xs) {
                    with.insert((*n).clone(), Some(x));
                }
                call(&with, args)
            },
            &primals,
        )
        .unwrap_or_else(|e| panic!("{what}: vjp: {e}"));
        let got = pullback.call(&cotangents).unwrap();
        for (n, g) in names.iter().zip(&got) {
            check(&format!("grad of {n}"), g, &grads[*n]);
        }

        // Forward mode against the same gradients, by transposition: with
        // the tangents v (each input's own values), <cotangent, J v> from
        // jvp equals the sum of <torch's gradient, v>. Skipped where an
        // output is NaN (the all-ignored mean).
        if outs.iter().any(|o| values(o).iter().any(|v| v.is_nan())) {
            continue;
        }
        let (_, tangents_out) = jvp(
            |xs: Vec<Tensor>| {
                let mut with = inputs.clone();
                for (n, x) in names.iter().zip(xs) {
                    with.insert((*n).clone(), Some(x));
                }
                call(&with, args)
            },
            &primals,
            &primals,
        )
        .unwrap_or_else(|e| panic!("{what}: jvp: {e}"));
        let dot = |a: &[f64], b: &[f64]| -> (f64, f64) {
            let terms = a.iter().zip(b).map(|(x, y)| x * y);
            (terms.clone().sum(), terms.map(f64::abs).sum())
        };
        let (mut forward, mut reverse, mut scale) = (0.0, 0.0, 0.0);
        for (t, c) in tangents_out.iter().zip(&cotangents) {
            let (d, s) = dot(&values(t), &values(c));
            forward += d;
            scale += s;
        }
        for (n, p) in names.iter().zip(&primals) {
            let (d, s) = dot(&floats(&grads[*n]["values"]), &values(p));
            reverse += d;
            scale += s;
        }
        assert!(
            (forward - reverse).abs() <= 4.0 * tol * scale.max(1.0),
            "{what}: jvp gives <u, J v> = {forward}, torch's gradients {reverse}"
        );
    }
    counts
}

/// The tensor input `name`, if given.
pub(crate) fn input<'a>(inputs: &'a Inputs, name: &str) -> Option<&'a Tensor> {
    inputs[name].as_ref()
}

fn call_batch_norm(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    let (y, m, v) = ops::batch_norm(
        input(i, "input").unwrap(),
        input(i, "running_mean"),
        input(i, "running_var"),
        input(i, "weight"),
        input(i, "bias"),
        a["training"].as_bool().unwrap(),
        a["momentum"].as_f64().unwrap(),
        a["eps"].as_f64().unwrap(),
    )?;
    Ok(vec![y, m, v])
}

fn call_group_norm(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    Ok(vec![ops::group_norm(
        input(i, "input").unwrap(),
        a["num_groups"].as_i64().unwrap(),
        input(i, "weight"),
        input(i, "bias"),
        a["eps"].as_f64().unwrap(),
    )?])
}

fn call_rms_norm(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    let shape: Vec<i64> = a["normalized_shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    Ok(vec![ops::rms_norm(
        input(i, "input").unwrap(),
        &shape,
        input(i, "weight"),
        a["eps"].as_f64(),
    )?])
}

#[test]
fn normalization_matches_torch_outputs_running_stats_and_gradients() {
    let counts = check_against_torch(&[
        ("batch_norm", call_batch_norm),
        ("group_norm", call_group_norm),
        ("rms_norm", call_rms_norm),
    ]);
    // Each setting in f64 and f32.
    assert_eq!(counts["batch_norm"], 8);
    assert_eq!(counts["group_norm"], 8);
    assert_eq!(counts["rms_norm"], 6);
}

/// Deterministic distinct values of `shape`, from `start` on.
pub(crate) fn t64(shape: &[usize], start: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (start..start + n)
        .map(|i| ((i as f64) * 0.7373 + 0.2).sin() * 2.0 + 0.01 * i as f64)
        .collect();
    Tensor::from_shape_vec(shape, v).unwrap()
}

/// `max |a - b|` is at most `tol`, and the shapes agree.
pub(crate) fn assert_close(a: &Tensor, b: &Tensor, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (values(a), values(b));
    if let Some(i) = disagreement(&a, &b, tol) {
        panic!("at {i}: {} vs {}", a[i], b[i]);
    }
}

/// Per-sample gradients of `loss(w, x)` with respect to `w`, one per example
/// of `xs` (dim 0), under `vmap(grad)` with `FallbackPolicy::Error` (nothing
/// may loop over examples), against the loop.
pub(crate) fn per_sample_grads_match_loop(
    w: &Tensor,
    xs: &Tensor,
    loss: fn(&Tensor, &Tensor) -> Result<Tensor>,
) {
    let f = |(w, x): (Tensor, Tensor)| loss(&w, &x);
    let batched = vmap(|(w, x): (Tensor, Tensor)| grad(f).call((&w, &x)))
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((w, xs))
        .unwrap();
    let n = xs.shape()[0];
    let mut shape = vec![n];
    shape.extend_from_slice(w.shape());
    assert_eq!(batched.shape(), shape);
    for i in 0..n {
        let one = grad(f).call((w, &xs.select(0, i).unwrap())).unwrap();
        assert_close(&batched.select(0, i).unwrap(), &one, 1e-12);
        assert!(
            values(&one).iter().any(|&v| v != 0.0),
            "a zero gradient tests nothing"
        );
    }
}

#[test]
fn per_sample_gradients_through_the_norms_need_no_loop() {
    // group_norm's weight, per sample [1, C, L] (each example its own).
    per_sample_grads_match_loop(&t64(&[4], 1), &t64(&[3, 1, 4, 2], 7), |w, x| {
        let y = ops::group_norm(x, 2, Some(w), None, 1e-5)?;
        ops::sum(&ops::mul(&y, &ops::tanh(&y)?)?, None, false)
    });
    // rms_norm's weight.
    per_sample_grads_match_loop(&t64(&[3], 2), &t64(&[3, 2, 3], 9), |w, x| {
        let y = ops::rms_norm(x, &[3], Some(w), None)?;
        ops::sum(&ops::mul(&y, &t64(&[2, 3], 40))?, None, false)
    });
    // batch_norm in training mode: each example's batch [2, C] has its own
    // statistics; the gradient reaches the weight and the running stats.
    per_sample_grads_match_loop(&t64(&[3], 3), &t64(&[4, 2, 3], 11), |w, x| {
        let rm = t64(&[3], 30);
        let (y, m, _) = ops::batch_norm(
            x,
            Some(&rm),
            Some(&ops::exp(&rm)?),
            Some(w),
            None,
            true,
            0.1,
            1e-5,
        )?;
        let y = ops::sum(&ops::mul(&y, &t64(&[2, 3], 50))?, None, false)?;
        ops::add(&y, &ops::sum(&ops::mul(&m, w)?, None, false)?)
    });
    // batch_norm in evaluation mode, gradient of the running mean.
    per_sample_grads_match_loop(&t64(&[3], 5), &t64(&[4, 1, 3], 13), |rm, x| {
        let rv = ops::exp(&t64(&[3], 31))?;
        let (y, _, _) = ops::batch_norm(x, Some(rm), Some(&rv), None, None, false, 0.1, 1e-5)?;
        ops::sum(&ops::mul(&y, &y)?, None, false)
    });
}

#[test]
fn batch_norm_under_vmap_uses_each_examples_own_statistics() {
    // An ensemble of 3 batches [4, 2]: vmap normalizes each with its own mean
    // and variance and updates its own running statistics.
    let xs = t64(&[3, 4, 2], 0);
    let (rm, rv) = (t64(&[2], 20), ops::exp(&t64(&[2], 22)).unwrap());
    let (ys, ms, vs) =
        vmap(|x: Tensor| ops::batch_norm(&x, Some(&rm), Some(&rv), None, None, true, 0.1, 1e-5))
            .fallback(FallbackPolicy::Error)
            .call(&xs)
            .unwrap();
    assert_eq!(
        (ys.shape(), ms.shape(), vs.shape()),
        (&[3, 4, 2][..], &[3, 2][..], &[3, 2][..])
    );
    for i in 0..3 {
        let x = xs.select(0, i).unwrap();
        let (y, m, v) =
            ops::batch_norm(&x, Some(&rm), Some(&rv), None, None, true, 0.1, 1e-5).unwrap();
        assert_close(&ys.select(0, i).unwrap(), &y, 1e-12);
        assert_close(&ms.select(0, i).unwrap(), &m, 1e-12);
        assert_close(&vs.select(0, i).unwrap(), &v, 1e-12);
        // Each example's normalized channels have mean 0.
        let mean = values(&ops::mean(&y, Some(0), false).unwrap());
        assert!(mean.iter().all(|m| m.abs() < 1e-12));
    }
    // Not the statistics of all 12 rows together: the examples differ.
    let whole = ops::reshape(&xs, &[12, 2]).unwrap();
    let (_, m_all, _) =
        ops::batch_norm(&whole, Some(&rm), Some(&rv), None, None, true, 0.1, 1e-5).unwrap();
    assert!(disagreement(&values(&ms.select(0, 0).unwrap()), &values(&m_all), 1e-6).is_some());
}

#[test]
fn norms_reject_bad_arguments_naming_the_op() {
    let x = t64(&[3, 4], 0);
    let one_row = t64(&[1, 4], 0);
    let c4 = t64(&[4], 1);
    let calls: Vec<(&str, &str, Result<Tensor>)> = vec![
        (
            "batch_norm",
            "more than 1 value per channel",
            ops::batch_norm(&one_row, None, None, None, None, true, 0.1, 1e-5).map(|o| o.0),
        ),
        (
            "batch_norm",
            "required when training is false",
            ops::batch_norm(&x, None, None, None, None, false, 0.1, 1e-5).map(|o| o.0),
        ),
        (
            "batch_norm",
            "weight",
            ops::batch_norm(
                &x,
                Some(&c4),
                Some(&c4),
                Some(&t64(&[3], 0)),
                None,
                false,
                0.1,
                1e-5,
            )
            .map(|o| o.0),
        ),
        (
            "batch_norm",
            "at least 2 dims",
            ops::batch_norm(&c4, None, None, None, None, true, 0.1, 1e-5).map(|o| o.0),
        ),
        (
            "group_norm",
            "num_groups",
            ops::group_norm(&x, 3, None, None, 1e-5),
        ),
        (
            "group_norm",
            "num_groups",
            ops::group_norm(&x, 0, None, None, 1e-5),
        ),
        (
            "group_norm",
            "bias",
            ops::group_norm(&x, 2, None, Some(&t64(&[2], 0)), 1e-5),
        ),
        (
            "rms_norm",
            "normalized_shape",
            ops::rms_norm(&x, &[3], None, None),
        ),
        (
            "rms_norm",
            "weight",
            ops::rms_norm(&x, &[4], Some(&t64(&[3], 0)), None),
        ),
        (
            "rms_norm",
            "normalized_shape",
            ops::rms_norm(&x, &[i64::MAX, 4], None, None),
        ),
    ];
    for (op, word, result) in calls {
        let e = result.expect_err(op).to_string();
        assert!(e.starts_with(op) && e.contains(word), "{op}: {e}");
    }
}
