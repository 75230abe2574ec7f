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

use crate::recorded::values;
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
    (
        shape,
        v["values"].as_array().unwrap().iter().map(number).collect(),
    )
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
            ops::vector_norm(
                &inputs[0],
                float(0),
                dim.as_deref(),
                args[2].as_bool().unwrap(),
            )
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
        assert_close(
            &format!("{what}, forward"),
            &y,
            &recorded(&case["forward"]),
            tol,
        );

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
        let want: Vec<_> = case["grads"]
            .as_array()
            .unwrap()
            .iter()
            .map(recorded)
            .collect();
        assert_eq!(
            want.len(),
            floats.len(),
            "{what}: one gradient per float input"
        );
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
            .map(|x| {
                ops::mul(
                    x,
                    &ops::to_dtype(&Tensor::scalar(0.5f64), x.dtype()).unwrap(),
                )
                .unwrap()
            })
            .collect();
        let stacked: Vec<Tensor> = floats
            .iter()
            .zip(&halved)
            .map(|(a, b)| ops::stack(&[a.clone(), b.clone()], 0).unwrap())
            .collect();
        let per_example: Vec<Tensor> =
            vmap(|xs: Vec<Tensor>| grad(|xs: Vec<Tensor>| loss(xs, &inputs, &w)).call(&xs))
                .fallback(FallbackPolicy::Error)
                .call(stacked)
                .unwrap_or_else(|e| panic!("{what}, vmap(grad): {e}"));
        let halved_grads: Vec<Tensor> = grad(|xs: Vec<Tensor>| loss(xs, &inputs, &w))
            .call(&halved)
            .unwrap();
        for (j, g) in per_example.iter().enumerate() {
            let first = g.select(0, 0).unwrap();
            assert_close(
                &format!("{what}, vmap(grad) example 0, input {j}"),
                &first,
                &want[j],
                tol,
            );
            let second = g.select(0, 1).unwrap();
            let direct = (halved_grads[j].shape().to_vec(), values(&halved_grads[j]));
            assert_close(
                &format!("{what}, vmap(grad) example 1, input {j}"),
                &second,
                &direct,
                tol,
            );
        }

        // Forward mode: <w, J t> = sum_i <grad_i, t_i>, for the tangents
        // t_i = the inputs' signs flipped alternately (finite, nonzero).
        let tangents: Vec<Tensor> = floats
            .iter()
            .map(|x| {
                let k = x.shape().iter().product::<usize>();
                let t: Vec<f64> = (0..k)
                    .map(|i| if i % 3 == 0 { -0.5 } else { 1.0 })
                    .collect();
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
            .flat_map(|((_, g), t)| {
                g.iter()
                    .zip(values(t))
                    .map(|(a, b)| a * b)
                    .collect::<Vec<_>>()
            })
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
        [
            ("baddbmm", 6),
            ("cumsum", 10),
            ("einsum", 26),
            ("sdpa", 16),
            ("vector_norm", 60)
        ]
    );
}

/// `err` is an error of `op` whose message holds each of `words`.
fn rejects(op: &str, result: Result<Tensor>, words: &[&str]) {
    let err = result.expect_err(op).to_string();
    assert!(err.contains(op), "{op}: {err}");
    for w in words {
        assert!(err.contains(w), "{op}: {err:?} lacks {w:?}");
    }
}

fn f64s(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_shape_vec(shape, (0..n).map(|i| (i as f64 * 0.37).sin()).collect()).unwrap()
}

#[test]
fn einsum_names_the_position_of_a_bad_subscript() {
    let (a, b) = (f64s(&[2, 3]), f64s(&[3, 4]));
    let two = [a.clone(), b.clone()];
    let one = [a.clone()];
    let cases: Vec<(&str, &[Tensor], &[&str])> = vec![
        ("ij,1k", &two, &["position 3", "invalid subscript '1'"]),
        ("ij,jk->i$", &two, &["position 8"]),
        ("i.j", &one, &["position 1", "ellipsis"]),
        ("ij-k", &one, &["position 2", "'-'"]),
        ("ij->k", &one, &["position 4", "'k' appears in no input"]),
        ("ij->ii", &one, &["position 5", "twice"]),
        ("ij->i->j", &one, &["position 5", "second '->'"]),
        ("i...j...", &one, &["position 5", "second '...'"]),
        ("ij,jk->i,k", &two, &["position 8", "','"]),
        ("é,jk", &two, &["position 0"]),
        ("ij,jk", &one, &["2 operand terms", "1 operands"]),
        ("ijk,jk", &two, &["operand 0 has 2 dims"]),
        ("ij,ik", &two, &["\"i\" has sizes 2 and 3"]),
    ];
    for (equation, operands, words) in cases {
        rejects("einsum", ops::einsum(equation, operands), words);
    }
    // A diagonal of unequal dims, mixed dtypes, no operand.
    rejects("einsum", ops::einsum("ii", &one), &["repeated", "diagonal"]);
    let ints = Tensor::from_shape_vec(&[3, 4], vec![1i64; 12]).unwrap();
    rejects(
        "einsum",
        ops::einsum("ij,jk", &[a.clone(), ints]),
        &["one dtype"],
    );
    rejects("einsum", ops::einsum("", &[] as &[Tensor]), &["operand"]);
    // The same errors under vmap (the meta sees logical shapes).
    let batch = f64s(&[5, 2, 3]);
    let err = vmap(|x: Tensor| ops::einsum("ij,1k", &[x, b.clone()]))
        .call(&batch)
        .unwrap_err();
    assert!(err.to_string().contains("position 3"), "{err}");
    // A 0-d result, an identity, spaces, and an i64 product.
    let dot = ops::einsum(" i , i ", &[f64s(&[3]), f64s(&[3])]).unwrap();
    assert_eq!(dot.shape(), &[] as &[usize]);
    let same = ops::einsum("...", &one).unwrap();
    assert_eq!(values(&same), values(&a));
    let m = Tensor::from_shape_vec(&[2, 2], vec![1i64, 2, 3, 4]).unwrap();
    let p = ops::einsum("ij,jk->ik", &[m.clone(), m]).unwrap();
    assert_eq!(
        p.to_array::<i64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [7, 10, 15, 22]
    );
}

#[test]
fn attention_rejects_bad_arguments_naming_them() {
    let (q, k, v) = (f64s(&[2, 3]), f64s(&[4, 3]), f64s(&[4, 2]));
    let sdpa = |q: &Tensor, k: &Tensor, v: &Tensor, m: Option<&Tensor>, p: f64, causal: bool| {
        ops::scaled_dot_product_attention(q, k, v, m, p, causal, None, 0)
    };
    let op = "scaled_dot_product_attention";
    let mask = Tensor::from_shape_vec(&[2, 4], vec![true; 8]).unwrap();
    rejects(op, sdpa(&q, &k, &v, Some(&mask), 0.0, true), &["is_causal"]);
    rejects(op, sdpa(&f64s(&[3]), &k, &v, None, 0.0, false), &["query"]);
    rejects(
        op,
        sdpa(&q, &f64s(&[4, 2]), &v, None, 0.0, false),
        &["embedding"],
    );
    rejects(
        op,
        sdpa(&q, &k, &f64s(&[3, 2]), None, 0.0, false),
        &["source length"],
    );
    rejects(
        op,
        sdpa(&q, &k, &v, Some(&f64s(&[3, 4])), 0.0, false),
        &["attn_mask"],
    );
    let int_mask = Tensor::from_shape_vec(&[2, 4], vec![1i64; 8]).unwrap();
    rejects(
        op,
        sdpa(&q, &k, &v, Some(&int_mask), 0.0, false),
        &["attn_mask"],
    );
    rejects(op, sdpa(&q, &k, &v, None, -0.1, false), &["dropout_p"]);
    let k2 = f64s(&[3, 4, 3]);
    rejects(
        op,
        sdpa(&f64s(&[2, 2, 3]), &k2, &f64s(&[3, 4, 2]), None, 0.0, false),
        &["broadcast"],
    );

    rejects(
        "baddbmm",
        ops::baddbmm(&f64s(&[2]), &f64s(&[2, 3]), &f64s(&[3, 2]), 1.0, 1.0),
        &["3-D"],
    );
    let ints = Tensor::from_shape_vec(&[1, 1, 1], vec![2i64]).unwrap();
    rejects(
        "baddbmm",
        ops::baddbmm(&ints, &ints, &ints, 0.5, 1.0),
        &["beta"],
    );
    let i = ops::baddbmm(&ints, &ints, &ints, 3.0, -1.0).unwrap();
    assert_eq!(i.to_array::<i64>().unwrap()[[0, 0, 0]], 2);

    let x = f64s(&[2, 3]);
    rejects(
        "vector_norm",
        ops::vector_norm(&x, f64::NAN, None, false),
        &["ord"],
    );
    rejects(
        "vector_norm",
        ops::vector_norm(&x, 2.0, Some(&[0, -2]), false),
        &["more than once"],
    );
    rejects(
        "vector_norm",
        ops::vector_norm(&x, 2.0, Some(&[2]), false),
        &["out of range"],
    );
    let ints = Tensor::from_shape_vec(&[2], vec![1i64, 2]).unwrap();
    rejects(
        "vector_norm",
        ops::vector_norm(&ints, 2.0, None, false),
        &["floating-point"],
    );
    let empty = f64s(&[2, 0]);
    rejects(
        "vector_norm",
        ops::vector_norm(&empty, f64::INFINITY, Some(&[1]), false),
        &["zero elements"],
    );
    // Over zero elements the other ords are 0; over no dims (a 0-d tensor) |x|.
    let zeros = ops::vector_norm(&empty, 2.0, Some(&[1]), true).unwrap();
    assert_eq!(
        (zeros.shape(), values(&zeros)),
        (&[2usize, 1][..], vec![0.0, 0.0])
    );
    let s = ops::vector_norm(&Tensor::scalar(-3.0f64), 3.0, Some(&[-1]), false).unwrap();
    assert!((values(&s)[0] - 3.0).abs() < 1e-12);
    // The methods.
    let m = x.norm_keepdim(1.0, &[1]).unwrap();
    assert_eq!(m.shape(), &[2, 1]);
    assert_eq!(
        values(&x.norm().unwrap()),
        values(&x.vector_norm().unwrap())
    );

    rejects("cumsum", ops::cumsum(&x, 2), &["out of range"]);
}

#[test]
fn cumsum_dtypes_and_accumulation_as_pytorch() {
    // f32 is accumulated in f64 (each partial sum rounded to f32), as
    // PyTorch's CPU kernel: torch.cumsum([2^24, 1, 1]) = [2^24, 2^24, 2^24 + 2].
    let x = Tensor::from_shape_vec(&[3], vec![16_777_216.0f32, 1.0, 1.0]).unwrap();
    let y = x.cumsum(0).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(values(&y), [16_777_216.0, 16_777_216.0, 16_777_218.0]);
    // i64 wraps on overflow, as PyTorch; bool counts in i64.
    let big = Tensor::from_shape_vec(&[3], vec![1i64 << 62; 3]).unwrap();
    let y = big.cumsum(0).unwrap().to_array::<i64>().unwrap();
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        [1 << 62, i64::MIN, -(1 << 62)]
    );
    let flags = Tensor::from_shape_vec(&[2, 2], vec![true, true, false, true]).unwrap();
    let y = flags.cumsum(0).unwrap();
    assert_eq!(y.dtype(), DType::I64);
    assert_eq!(
        y.to_array::<i64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [1, 1, 1, 2]
    );
    // A 0-d tensor is its own cumulative sum; under vmap too, with the batch
    // dim anywhere and the dtype rule kept.
    assert_eq!(
        values(&ops::cumsum(&Tensor::scalar(2.5f64), -1).unwrap()),
        [2.5]
    );
    let rows = f64s(&[3, 2]);
    let y = vmap(|x: Tensor| ops::cumsum(&x, 0))
        .in_dims(1)
        .fallback(FallbackPolicy::Error)
        .call(&rows)
        .unwrap();
    let direct = ops::transpose(&ops::cumsum(&rows, 0).unwrap(), 0, 1).unwrap();
    assert_eq!(values(&y), values(&direct));
    let y = vmap(|x: Tensor| ops::cumsum(&x, 0))
        .fallback(FallbackPolicy::Error)
        .call(&flags)
        .unwrap();
    assert_eq!(
        y.to_array::<i64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [1, 2, 0, 1]
    );
    // Second derivative of a cumsum-based loss: sum(cumsum(x)^2) has Hessian
    // 2 L^T L (L lower triangular of ones); its diagonal is 2 * (n - i).
    let x = f64s(&[4]);
    let h = grad(|x: Tensor| {
        let g = grad(|x: Tensor| {
            let c = ops::cumsum(&x, 0)?;
            ops::sum(&ops::mul(&c, &c)?, None, false)
        })
        .call(&x)?;
        ops::sum(&g, None, false)
    })
    .call(&x)
    .unwrap();
    // The gradient of 2 * 1^T L^T L x: 2 L^T (L 1), L 1 = [1, 2, 3, 4].
    let want: Vec<f64> = (0..4)
        .map(|j| (j as usize..4).map(|k| 2.0 * (k as f64 + 1.0)).sum::<f64>())
        .collect();
    assert_eq!(values(&h), want);
}

#[test]
fn attention_dropout_follows_the_randomness_policy() {
    let q = f64s(&[2, 3, 2]);
    let (k, v) = (f64s(&[2, 4, 2]), f64s(&[2, 4, 3]));
    let attend =
        |q: &Tensor, p: f64| ops::scaled_dot_product_attention(q, &k, &v, None, p, false, None, 7);
    // Outside vmap: deterministic in the seed, and the dropout op applied to
    // the softmax weights.
    let y = attend(&q, 0.5).unwrap();
    assert_eq!(values(&y), values(&attend(&q, 0.5).unwrap()));
    let scores = ops::matmul(&q, &ops::transpose(&k, -2, -1).unwrap()).unwrap();
    let scores = ops::mul(&scores, &Tensor::scalar(1.0 / 2f64.sqrt())).unwrap();
    let weights = ops::dropout(&ops::softmax(&scores, -1).unwrap(), 0.5, 7).unwrap();
    let by_hand = ops::matmul(&weights, &v).unwrap();
    for (a, b) in values(&y).iter().zip(values(&by_hand)) {
        assert!((a - b).abs() < 1e-12);
    }
    assert_ne!(values(&y), values(&attend(&q, 0.0).unwrap()));
    // Under vmap: p = 0 draws nothing, so the default policy is fine; p > 0
    // is refused by default, naming dropout; Same gives every example the
    // unbatched call's mask.
    let batch = ops::stack(&[q.clone(), q.clone()], 0).unwrap();
    vmap(|q: Tensor| attend(&q, 0.0))
        .fallback(FallbackPolicy::Error)
        .call(&batch)
        .unwrap();
    let err = vmap(|q: Tensor| attend(&q, 0.5)).call(&batch).unwrap_err();
    assert!(err.to_string().contains("dropout"), "{err}");
    let same = vmap(|q: Tensor| attend(&q, 0.5))
        .randomness(Randomness::Same)
        .fallback(FallbackPolicy::Error)
        .call(&batch)
        .unwrap();
    assert_eq!(values(&same.select(0, 1).unwrap()), values(&y));
    let different = vmap(|q: Tensor| attend(&q, 0.5))
        .randomness(Randomness::Different)
        .fallback(FallbackPolicy::Error)
        .call(&batch)
        .unwrap();
    assert_ne!(
        values(&different.select(0, 0).unwrap()),
        values(&different.select(0, 1).unwrap())
    );
    // The gradient flows through the kept weights.
    let g = grad(|q: Tensor| ops::sum(&attend(&q, 0.5)?, None, false))
        .call(&q)
        .unwrap();
    assert!(values(&g).iter().all(|v| v.is_finite()));
}
