//! `embedding` and the losses (`nll_loss`, `binary_cross_entropy_with_logits`,
//! `smooth_l1_loss`, `huber_loss`) against PyTorch: outputs and the gradient
//! of every float input, f64 and f32, including `padding_idx` (negative too),
//! `ignore_index`, the all-ignored mean (NaN, with zero gradients) and
//! extreme logits, from `tests/reference/torch_norm_losses.json` (the runner
//! is in `normalization.rs`). Then per-sample gradients under
//! `FallbackPolicy::Error`, the methods, and the errors.

use batchrules::prelude::*;

use super::normalization::{
    assert_close, check_against_torch, disagreement, input, per_sample_grads_match_loop, t64,
    values, Inputs,
};

fn reduction(a: &serde_json::Value) -> Reduction {
    match a["reduction"].as_str().unwrap() {
        "none" => Reduction::None,
        "sum" => Reduction::Sum,
        _ => Reduction::Mean,
    }
}

fn call_embedding(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    Ok(vec![ops::embedding(
        input(i, "input").unwrap(),
        input(i, "weight").unwrap(),
        a["padding_idx"].as_i64(),
    )?])
}

fn call_nll_loss(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    Ok(vec![ops::nll_loss(
        input(i, "input").unwrap(),
        input(i, "target").unwrap(),
        input(i, "weight"),
        a["ignore_index"].as_i64().unwrap(),
        reduction(a),
    )?])
}

fn call_bce(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    Ok(vec![ops::binary_cross_entropy_with_logits(
        input(i, "input").unwrap(),
        input(i, "target").unwrap(),
        input(i, "weight"),
        reduction(a),
        input(i, "pos_weight"),
    )?])
}

fn call_smooth_l1(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    Ok(vec![ops::smooth_l1_loss(
        input(i, "input").unwrap(),
        input(i, "target").unwrap(),
        reduction(a),
        a["beta"].as_f64().unwrap(),
    )?])
}

fn call_huber(i: &Inputs, a: &serde_json::Value) -> Result<Vec<Tensor>> {
    Ok(vec![ops::huber_loss(
        input(i, "input").unwrap(),
        input(i, "target").unwrap(),
        reduction(a),
        a["delta"].as_f64().unwrap(),
    )?])
}

#[test]
fn embedding_and_losses_match_torch_outputs_and_gradients() {
    let counts = check_against_torch(&[
        ("embedding", call_embedding),
        ("nll_loss", call_nll_loss),
        ("binary_cross_entropy_with_logits", call_bce),
        ("smooth_l1_loss", call_smooth_l1),
        ("huber_loss", call_huber),
    ]);
    // Each setting in f64 and f32.
    assert_eq!(counts["embedding"], 8);
    assert_eq!(counts["nll_loss"], 16);
    assert_eq!(counts["binary_cross_entropy_with_logits"], 8);
    assert_eq!(counts["smooth_l1_loss"], 8);
    assert_eq!(counts["huber_loss"], 6);
}

#[test]
fn nll_loss_all_ignored_mean_is_nan_with_zero_gradient() {
    let x = t64(&[3, 4], 0);
    let t = Tensor::from_shape_vec(&[3], vec![-100i64; 3]).unwrap();
    let w = ops::exp(&t64(&[4], 5)).unwrap();
    let loss = ops::nll_loss(&x, &t, Some(&w), -100, Reduction::Mean).unwrap();
    assert!(values(&loss)[0].is_nan());
    assert!(values(&x.nll_loss(&t).unwrap())[0].is_nan());
    let g = grad(|x: Tensor| ops::nll_loss(&x, &t, Some(&w), -100, Reduction::Mean))
        .call(&x)
        .unwrap();
    assert!(values(&g).iter().all(|&v| v == 0.0));
    let sum = ops::nll_loss(&x, &t, None, -100, Reduction::Sum).unwrap();
    assert_eq!(values(&sum), [0.0]);
}

#[test]
fn per_sample_gradients_through_embedding_and_the_losses_need_no_loop() {
    // Embedding: each example's indices [3] pick rows of the shared table;
    // row 1 is padding (no gradient).
    let idx = Tensor::from_shape_vec(&[4, 3], vec![0i64, 1, 2, 2, 2, 3, 1, 1, 0, 3, 0, 3]).unwrap();
    let table = t64(&[4, 2], 1);
    let f = |(w, i): (Tensor, Tensor)| {
        let rows = ops::embedding(&i, &w, Some(1))?;
        ops::sum(&ops::mul(&rows, &ops::tanh(&rows)?)?, None, false)
    };
    let batched = vmap(|(w, i): (Tensor, Tensor)| grad(f).call((&w, &i)))
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&table, &idx))
        .unwrap();
    for e in 0..4 {
        let one = grad(f).call((&table, &idx.select(0, e).unwrap())).unwrap();
        assert_close(&batched.select(0, e).unwrap(), &one, 1e-12);
        // The padding row's gradient is 0.
        assert_eq!(&values(&one)[2..4], [0.0, 0.0]);
    }
    // The weight of a linear layer under each loss, per sample [1, 3].
    per_sample_grads_match_loop(&t64(&[4, 3], 2), &t64(&[5, 1, 3], 7), |w, x| {
        let logp = ops::log_softmax(&ops::linear(x, w, None)?, -1)?;
        let t = Tensor::from_shape_vec(&[1], vec![2i64]).unwrap();
        ops::nll_loss(&logp, &t, Some(&t64(&[4], 30)), -100, Reduction::Mean)
    });
    per_sample_grads_match_loop(&t64(&[4, 3], 3), &t64(&[5, 1, 3], 8), |w, x| {
        let z = ops::linear(x, w, None)?;
        let p = ops::sigmoid(&t64(&[1, 4], 40))?;
        ops::binary_cross_entropy_with_logits(&z, &p, None, Reduction::Sum, Some(&t64(&[4], 9)))
    });
    per_sample_grads_match_loop(&t64(&[4, 3], 4), &t64(&[5, 1, 3], 9), |w, x| {
        ops::smooth_l1_loss(
            &ops::linear(x, w, None)?,
            &t64(&[4], 60),
            Reduction::Mean,
            0.7,
        )
    });
    per_sample_grads_match_loop(&t64(&[4, 3], 5), &t64(&[5, 1, 3], 10), |w, x| {
        ops::huber_loss(
            &ops::linear(x, w, None)?,
            &t64(&[4], 61),
            Reduction::Sum,
            0.7,
        )
    });
}

#[test]
fn loss_methods_take_pytorchs_defaults() {
    let x = t64(&[3, 4], 0);
    let y = t64(&[3, 4], 12);
    let t = Tensor::from_shape_vec(&[3], vec![0i64, -100, 3]).unwrap();
    let same = |a: Result<Tensor>, b: Result<Tensor>| {
        let (a, b) = (values(&a.unwrap()), values(&b.unwrap()));
        assert!(disagreement(&a, &b, 0.0).is_none(), "{a:?} vs {b:?}");
    };
    same(
        x.nll_loss(&t),
        ops::nll_loss(&x, &t, None, -100, Reduction::Mean),
    );
    let p = ops::sigmoid(&y).unwrap();
    same(
        x.binary_cross_entropy_with_logits(&p),
        ops::binary_cross_entropy_with_logits(&x, &p, None, Reduction::Mean, None),
    );
    same(
        x.smooth_l1_loss(&y),
        ops::smooth_l1_loss(&x, &y, Reduction::Mean, 1.0),
    );
    same(
        x.huber_loss(&y),
        ops::huber_loss(&x, &y, Reduction::Mean, 1.0),
    );
}

#[test]
fn embedding_and_losses_reject_bad_arguments_naming_the_op() {
    let w = t64(&[3, 2], 0);
    let x = t64(&[2, 3], 0);
    let idx = |v: Vec<i64>| Tensor::from_shape_vec(&[v.len()], v).unwrap();
    let calls: Vec<(&str, &str, Result<Tensor>)> = vec![
        (
            "embedding",
            "out of range",
            ops::embedding(&idx(vec![0, 3]), &w, None),
        ),
        (
            "embedding",
            "out of range",
            ops::embedding(&idx(vec![-1]), &w, None),
        ),
        (
            "embedding",
            "padding_idx",
            ops::embedding(&idx(vec![0]), &w, Some(3)),
        ),
        (
            "embedding",
            "padding_idx",
            ops::embedding(&idx(vec![0]), &w, Some(-4)),
        ),
        ("embedding", "i64", ops::embedding(&x, &w, None)),
        (
            "embedding",
            "2-d",
            ops::embedding(&idx(vec![0]), &t64(&[3], 0), None),
        ),
        (
            "nll_loss",
            "out of range",
            ops::nll_loss(&x, &idx(vec![0, 3]), None, -100, Reduction::Mean),
        ),
        (
            "nll_loss",
            "out of range",
            ops::nll_loss(&x, &idx(vec![-1, 0]), None, -100, Reduction::Sum),
        ),
        (
            "nll_loss",
            "target",
            ops::nll_loss(&x, &idx(vec![0, 1, 2]), None, -100, Reduction::Mean),
        ),
        (
            "nll_loss",
            "weight",
            ops::nll_loss(
                &x,
                &idx(vec![0, 1]),
                Some(&t64(&[2], 0)),
                -100,
                Reduction::Mean,
            ),
        ),
        (
            "binary_cross_entropy_with_logits",
            "target",
            ops::binary_cross_entropy_with_logits(&x, &t64(&[3], 0), None, Reduction::Mean, None),
        ),
        (
            "binary_cross_entropy_with_logits",
            "pos_weight",
            ops::binary_cross_entropy_with_logits(
                &x,
                &x,
                None,
                Reduction::Mean,
                Some(&t64(&[2], 0)),
            ),
        ),
        (
            "smooth_l1_loss",
            "beta",
            ops::smooth_l1_loss(&x, &x, Reduction::Mean, -0.5),
        ),
        (
            "smooth_l1_loss",
            "beta",
            ops::smooth_l1_loss(&x, &x, Reduction::Mean, f64::NAN),
        ),
        (
            "huber_loss",
            "delta",
            ops::huber_loss(&x, &x, Reduction::Mean, 0.0),
        ),
    ];
    for (op, word, result) in calls {
        let e = result.expect_err(op).to_string();
        assert!(e.starts_with(op) && e.contains(word), "{op}: {e}");
    }
}
