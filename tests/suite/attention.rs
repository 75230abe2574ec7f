//! The attention family (`baddbmm`, `scaled_dot_product_attention`, `einsum`,
//! `cumsum`, `vector_norm`) against PyTorch, in f64 (to 1e-10) and f32 (to
//! 1e-5): the forward value, the gradient of `sum(out * w)` for a recorded
//! cotangent `w` with respect to every float input (reverse mode), the same
//! gradients per example under `vmap(grad)` with `FallbackPolicy::Error`
//! (two examples, the recorded inputs and the inputs halved, so nothing may
//! loop), and forward mode (`<w, jvp(f)(t)>` equals `sum <grad_i, t_i>`).
//! The cases include causal masks (L = S, L < S, L > S), a boolean mask and
//! an additive one each hiding a whole row (output and gradient 0, as
//! PyTorch's CPU attention), a custom scale, einsum with several operands,
//! batch dims, ellipses, diagonals and implicit outputs, and the norm of the
//! zero vector for each `ord`. The values were recorded by
//! `scripts/reference/record_attention.py` into
//! `tests/reference/torch_attention.json`.

use batchrules::prelude::*;
use batchrules::FallbackPolicy;

/// The recorded values.
fn reference() -> serde_json::Value {
    serde_json::from_str(include_str!("../reference/torch_attention.json"))
        .expect("tests/reference/torch_attention.json is JSON")
}

/// A recorded number: a JSON number or "nan", "inf", "-inf".
fn number(x: &serde_json::Value) -> f64 {
    match x.as_str() {
        Some("nan") => f64::NAN,
        Some("inf") => f64::INFINITY,
        Some("-inf") => f64::NEG_INFINITY,
        Some(other) => panic!("unexpected string {other:?}"),
        None => x.as_f64().expect("a number"),
    }
}

/// A recorded tensor: its shape and values (as f64).
fn recorded(v: &serde_json::Value) -> (Vec<usize>, Vec<f64>) {
    let shape = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    (shape, v["values"].as_array().unwrap().iter().map(number).collect())
}

/// A recorded tensor in its dtype (bool, or the case's float dtype).
fn tensor(v: &serde_json::Value, dtype: &str) -> Tensor {
    let (shape, values) = recorded(v);
    if v["dtype"] == "bool" {
        let b: Vec<bool> = values.iter().map(|&x| x != 0.0).collect();
        return Tensor::from_shape_vec(&shape, b).unwrap();
    }
    match dtype {
        "f64" => Tensor::from_shape_vec(&shape, values).unwrap(),
        _ => {
            let v: Vec<f32> = values.iter().map(|&x| x as f32).collect();
            Tensor::from_shape_vec(&shape, v).unwrap()
        }
    }
}

/// The values of `t` as f64 (exact for f32).
fn values(t: &Tensor) -> Vec<f64> {
    let t = ops::to_dtype(t, DType::F64).unwrap();
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

/// `got` agrees with `want` to `tol`, relative where `|want| > 1`; NaN only
/// with NaN, an infinity only with the same infinity.
fn assert_close(what: &str, got: &Tensor, want: &(Vec<usize>, Vec<f64>), tol: f64) {
    assert_eq!(got.shape(), want.0.as_slice(), "{what}: shape");
    let got = values(got);
    for (i, (&g, &w)) in got.iter().zip(&want.1).enumerate() {
        let ok = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if w.is_infinite() || g.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= tol * w.abs().max(1.0)
        };
        assert!(ok, "{what}: element {i}: got {g}, torch {w}");
    }
}

/// The op of a recorded case, applied to all its inputs (floats and masks).
fn apply(op: &str, args: &serde_json::Value, inputs: &[Tensor]) -> Result<Tensor> {
    let float = |i: usize| number(&args[i]);
    match op {
        "baddbmm" => ops::baddbmm(&inputs[0], &inputs[1], &inputs[2], float(0), float(1)),
        "sdpa" => {
            let is_causal = args["is_causal"].as_bool().unwrap();
            let scale = args.get("scale").map(number);
            ops::scaled_dot_product_attention(
                &inputs[0],
                &inputs[1],
                &inputs[2],
                inputs.get(3),
                0.0,
                is_causal,
                scale,
                0,
            )
        }
        "einsum" => ops::einsum(args[0].as_str().unwrap(), inputs),
        "cumsum" => ops::cumsum(&inputs[0], args[0].as_i64().unwrap()),
        "vector_norm" => {
            let dim: Option<Vec<i64>> = args[1]
                .as_array()
                .map(|d| d.iter().map(|v| v.as_i64().unwrap()).collect());
            ops::vector_norm(&inputs[0], float(0), dim.as_deref(), args[2].as_bool().unwrap())
        }
        other => panic!("no op {other}"),
    }
}

#[test]
fn attention_family_matches_torch_forward_grad_vmap_grad_and_jvp() {
    let reference = reference();
    let cases = reference["cases"].as_array().unwrap();
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for (n, case) in cases.iter().enumerate() {
        let op = case["op"].as_str().unwrap();
        let dtype = case["dtype"].as_str().unwrap();
        let args = &case["args"];
        let tol = if dtype == "f64" { 1e-10 } else { 1e-5 };
        let what = format!("case {n}: {op} {args} {dtype} {}", case["note"]);
        *seen.entry(op).or_default() += 1;
        let inputs: Vec<Tensor> = case["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| tensor(v, dtype))
            .collect();
        let float_at: Vec<usize> = (0..inputs.len())
            .filter(|&i| inputs[i].dtype().is_float())
            .collect();
        let floats: Vec<Tensor> = float_at.iter().map(|&i| inputs[i].clone()).collect();
        let w = tensor(&case["cotangent"], dtype);

        // Forward.
        let y = apply(op, args, &inputs).unwrap();
        assert_close(&format!("{what}, forward"), &y, &recorded(&case["forward"]), tol);

        // The loss as a function of the float inputs, the others held.
        let with_floats = |xs: &[Tensor], held: &[Tensor]| -> Vec<Tensor> {
            let mut all = held.to_vec();
            for (j, &i) in float_at.iter().enumerate() {
                all[i] = xs[j].clone();
            }
            all
        };
        let loss = |xs: Vec<Tensor>, held: &[Tensor], w: &Tensor| -> Result<Tensor> {
            let y = apply(op, args, &with_floats(&xs, held))?;
            ops::sum(&ops::mul(&y, w)?, None, false)
        };

        // Reverse mode.
        let want: Vec<_> = case["grads"].as_array().unwrap().iter().map(recorded).collect();
        assert_eq!(want.len(), floats.len(), "{what}: one gradient per float input");
        let grads: Vec<Tensor> = grad(|xs: Vec<Tensor>| loss(xs, &inputs, &w))
            .call(&floats)
            .unwrap();
        for (j, g) in grads.iter().enumerate() {
            assert_close(&format!("{what}, grad {j}"), g, &want[j], tol);
        }

        // vmap(grad) over two examples: the recorded inputs and the inputs
        // halved (held inputs, a bool mask, shared), with no fallback loop.
        let halved: Vec<Tensor> = floats
            .iter()
            .map(|x| ops::mul(x, &ops::to_dtype(&Tensor::scalar(0.5f64), x.dtype()).unwrap()).unwrap())
            .collect();
        let stacked: Vec<Tensor> = floats
            .iter()
            .zip(&halved)
            .map(|(a, b)| ops::stack(&[a.clone(), b.clone()], 0).unwrap())
            .collect();
        let per_example: Vec<Tensor> = vmap(|xs: Vec<Tensor>| {
            grad(|xs: Vec<Tensor>| loss(xs, &inputs, &w)).call(&xs)
        })
        .fallback(FallbackPolicy::Error)
        .call(stacked)
        .unwrap_or_else(|e| panic!("{what}, vmap(grad): {e}"));
        let halved_grads: Vec<Tensor> = grad(|xs: Vec<Tensor>| loss(xs, &inputs, &w))
            .call(&halved)
            .unwrap();
        for (j, g) in per_example.iter().enumerate() {
            let first = g.select(0, 0).unwrap();
            assert_close(&format!("{what}, vmap(grad) example 0, input {j}"), &first, &want[j], tol);
            let second = g.select(0, 1).unwrap();
            let direct = (halved_grads[j].shape().to_vec(), values(&halved_grads[j]));
            assert_close(&format!("{what}, vmap(grad) example 1, input {j}"), &second, &direct, tol);
        }

        // Forward mode: <w, J t> = sum_i <grad_i, t_i>, for the tangents
        // t_i = the inputs' signs flipped alternately (finite, nonzero).
        let tangents: Vec<Tensor> = floats
            .iter()
            .map(|x| {
                let k = x.shape().iter().product::<usize>();
                let t: Vec<f64> = (0..k).map(|i| if i % 3 == 0 { -0.5 } else { 1.0 }).collect();
                ops::to_dtype(&Tensor::from_shape_vec(x.shape(), t).unwrap(), x.dtype()).unwrap()
            })
            .collect();
        let (_, dy) = jvp(
            |xs: Vec<Tensor>| apply(op, args, &with_floats(&xs, &inputs)),
            &floats,
            &tangents,
        )
        .unwrap_or_else(|e| panic!("{what}, jvp: {e}"));
        let pushed: f64 = values(&dy)
            .iter()
            .zip(values(&w))
            .map(|(a, b)| a * b)
            .filter(|v| !v.is_nan())
            .sum();
        let pulled: f64 = want
            .iter()
            .zip(&tangents)
            .flat_map(|((_, g), t)| g.iter().zip(values(t)).map(|(a, b)| a * b).collect::<Vec<_>>())
            .filter(|v| !v.is_nan())
            .sum();
        let scale = pulled.abs().max(1.0);
        assert!(
            (pushed - pulled).abs() <= 100.0 * tol * scale,
            "{what}, jvp: <w, J t> = {pushed}, <J^T w, t> = {pulled}"
        );
    }
    let counts: Vec<(&str, usize)> = seen.into_iter().collect();
    assert_eq!(
        counts,
        [("baddbmm", 6), ("cumsum", 10), ("einsum", 26), ("sdpa", 16), ("vector_norm", 60)]
    );
}
