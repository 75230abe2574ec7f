//! The convolution ops (`conv1d`, `conv2d`, their `_padding` forms taking
//! "same"/"valid", `unfold`, `fold`) against PyTorch, in f64 (to 1e-10) and
//! f32 (to 1e-5): the forward value and the gradient of `sum(out * c)` for
//! every tensor argument, through `grad` and through `vjp`'s transpose
//! check by `jvp`. The values were recorded by
//! `scripts/reference/record_conv.py` into `tests/reference/torch_conv.json`.
//! Then: per-example weight gradients under `vmap(grad)` with the fallback
//! loop forbidden, equal to the loop of single-example gradients;
//! `unfold`/`fold` as each other's transpose; errors naming the op.

use crate::recorded::{tensor, values};
use batchrules::prelude::*;
use serde_json::Value;

fn reference() -> Value {
    serde_json::from_str(include_str!("../reference/torch_conv.json"))
        .expect("tests/reference/torch_conv.json is JSON")
}

/// A recorded int-list argument, `default` if absent.
fn ints(args: &Value, name: &str, default: &[i64]) -> Vec<i64> {
    match args.get(name) {
        Some(v) => v
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_i64().unwrap())
            .collect(),
        None => default.to_vec(),
    }
}

/// The case's op applied to `ts` (input, then weight and bias if the case
/// has them), with the recorded arguments; a padding word goes to the
/// `_padding` op.
fn apply(op: &str, args: &Value, ts: &[Tensor]) -> Result<Tensor> {
    let stride = ints(args, "stride", &[1]);
    let dilation = ints(args, "dilation", &[1]);
    let groups = args.get("groups").map_or(1, |g| g.as_i64().unwrap());
    let word = args.get("padding").and_then(Value::as_str);
    let padding = if word.is_some() {
        vec![]
    } else {
        ints(args, "padding", &[0])
    };
    let bias = ts.get(2);
    match (op, word) {
        ("conv2d", None) => ops::conv2d(&ts[0], &ts[1], bias, &stride, &padding, &dilation, groups),
        ("conv2d", Some(w)) => {
            ops::conv2d_padding(&ts[0], &ts[1], bias, &stride, w, &dilation, groups)
        }
        ("conv1d", None) => ops::conv1d(&ts[0], &ts[1], bias, &stride, &padding, &dilation, groups),
        ("conv1d", Some(w)) => {
            ops::conv1d_padding(&ts[0], &ts[1], bias, &stride, w, &dilation, groups)
        }
        ("unfold", _) => ops::unfold(
            &ts[0],
            &ints(args, "kernel_size", &[]),
            &dilation,
            &padding,
            &stride,
        ),
        ("fold", _) => ops::fold(
            &ts[0],
            &ints(args, "output_size", &[]),
            &ints(args, "kernel_size", &[]),
            &dilation,
            &padding,
            &stride,
        ),
        _ => panic!("no op {op}"),
    }
}

fn check(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let (g, w) = (values(got), values(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * b.abs().max(1.0),
            "{what}: element {i}: got {a}, PyTorch {b}"
        );
    }
}

#[test]
fn conv_ops_match_torch_forward_and_every_gradient() {
    let r = reference();
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 42);
    let mut seen_same_even = false;
    for case in cases {
        let op = case["op"].as_str().unwrap();
        let (dtype, tol) = match case["dtype"].as_str().unwrap() {
            "f64" => (DType::F64, 1e-10),
            _ => (DType::F32, 1e-5),
        };
        let args = &case["args"];
        let what = format!("{op} {} {args}", case["dtype"]);
        let names: Vec<&str> = ["input", "weight", "bias"]
            .into_iter()
            .filter(|n| case["inputs"].get(n).is_some())
            .collect();
        let ts: Vec<Tensor> = names
            .iter()
            .map(|n| tensor(&case["inputs"][n], dtype))
            .collect();
        let c = tensor(&case["cotangent"], dtype);
        let y = apply(op, args, &ts).unwrap();
        check(
            &format!("{what} forward"),
            &y,
            &tensor(&case["forward"], dtype),
            tol,
        );
        // The method forms with PyTorch's defaults agree with the function.
        if args.as_object().unwrap().is_empty() && op == "conv2d" {
            let m = ts[0].conv2d(&ts[1]).unwrap();
            let m = if ts.len() == 3 {
                ops::add(&m, &ops::reshape(&ts[2], &[-1, 1, 1]).unwrap()).unwrap()
            } else {
                m
            };
            check(&format!("{what} method"), &m, &y, tol);
        }
        if args.get("padding").and_then(Value::as_str) == Some("same") {
            let w = &ts[1];
            seen_same_even |= w.shape()[2..].iter().any(|k| k % 2 == 0);
            assert_eq!(
                &y.shape()[y.ndim() - (w.ndim() - 2)..],
                &ts[0].shape()[ts[0].ndim() - (w.ndim() - 2)..]
            );
        }
        let loss = |ts: Vec<Tensor>| -> Result<Tensor> {
            ops::sum(&ops::mul(&apply(op, args, &ts)?, &c)?, None, false)
        };
        let grads = grad(loss).call(&ts).unwrap();
        for (name, g) in names.iter().zip(&grads) {
            check(
                &format!("{what} grad {name}"),
                g,
                &tensor(&case["grads"][name], dtype),
                tol,
            );
        }
        // Forward mode agrees with reverse mode: <jvp(t), c> = <t, grad>.
        let tangents: Vec<Tensor> = ts
            .iter()
            .enumerate()
            .map(|(i, t)| ops::to_dtype(&t64(t.shape(), 20 + i), dtype).unwrap())
            .collect();
        let (_, ty) = jvp(|ts: Vec<Tensor>| apply(op, args, &ts), &ts, &tangents).unwrap();
        let lhs: f64 = values(&ty).iter().zip(values(&c)).map(|(a, b)| a * b).sum();
        let rhs: f64 = tangents
            .iter()
            .zip(&grads)
            .map(|(t, g)| {
                values(t)
                    .iter()
                    .zip(values(g))
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
            })
            .sum();
        assert!(
            (lhs - rhs).abs() <= tol * 10.0 * rhs.abs().max(1.0),
            "{what}: jvp {lhs} against vjp {rhs}"
        );
    }
    assert!(seen_same_even, "a \"same\" case with an even kernel");
}

fn t64(shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i * 7 + seed * 13) % 17) as f64 / 8.0 - 1.0)
        .collect();
    Tensor::from_shape_vec(shape, v).unwrap()
}

#[test]
fn per_example_weight_gradients_are_batched_and_equal_the_loop() -> Result<()> {
    // Batched examples [1, C, H, W] and unbatched [C, H, W], with groups,
    // stride, padding and a bias; the fallback loop is an error.
    let w = t64(&[4, 2, 3, 2], 1);
    let b = t64(&[4], 2);
    for xs in [t64(&[3, 1, 4, 5, 4], 3), t64(&[3, 4, 5, 4], 4)] {
        let f = |((w, b), x): ((Tensor, Tensor), Tensor)| -> Result<Tensor> {
            let y = ops::conv2d(&x, &w, Some(&b), &[2, 1], &[1], &[1], 2)?;
            ops::sum(&ops::tanh(&y)?, None, false)
        };
        let per: (Tensor, Tensor) =
            vmap(|(w, b, x): (Tensor, Tensor, Tensor)| grad(f).call((&(w, b), &x)))
                .in_dims([None, None, Some(0)])
                .fallback(FallbackPolicy::Error)
                .call((&w, &b, &xs))?;
        assert_eq!(per.0.shape(), &[3, 4, 2, 3, 2]);
        for i in 0..3 {
            let x = xs.select(0, i)?;
            let (gw, gb) = grad(f).call((&(w.clone(), b.clone()), &x))?;
            check("per-example weight grad", &per.0.select(0, i)?, &gw, 1e-12);
            check("per-example bias grad", &per.1.select(0, i)?, &gb, 1e-12);
        }
    }
    Ok(())
}

#[test]
fn conv1d_and_padding_words_batch_without_the_fallback() -> Result<()> {
    let w = t64(&[2, 3, 2], 5);
    let xs = t64(&[4, 3, 6], 6);
    let f = |(w, x): (Tensor, Tensor)| -> Result<Tensor> {
        let y = ops::conv1d_padding(&x, &w, None, &[1], "same", &[1], 1)?;
        ops::sum(&ops::mul(&y, &y)?, None, false)
    };
    let per: Tensor = vmap(|(w, x): (Tensor, Tensor)| grad(f).call((&w, &x)))
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&w, &xs))?;
    for i in 0..4 {
        let one = grad(f).call((&w, &xs.select(0, i)?))?;
        check("conv1d same per-example", &per.select(0, i)?, &one, 1e-12);
    }
    Ok(())
}

#[test]
fn fold_is_the_transpose_of_unfold() -> Result<()> {
    let dot = |a: &Tensor, b: &Tensor| -> f64 {
        values(a).iter().zip(values(b)).map(|(x, y)| x * y).sum()
    };
    // (kernel, dilation, padding, stride) over a [2, 3, 7, 6] batch.
    let windows: [[&[i64]; 4]; 4] = [
        [&[3], &[1], &[1], &[1]],
        [&[2, 3], &[2, 1], &[0, 2], &[3, 2]],
        [&[1], &[1], &[0], &[2]],
        [&[7, 6], &[1], &[0], &[1]],
    ];
    let x = t64(&[2, 3, 7, 6], 7);
    for [k, d, p, s] in windows {
        let cols = ops::unfold(&x, k, d, p, s)?;
        let y = t64(cols.shape(), 8);
        let back = ops::fold(&y, &[7, 6], k, d, p, s)?;
        assert_eq!(back.shape(), x.shape());
        let (l, r) = (dot(&cols, &y), dot(&x, &back));
        assert!(
            (l - r).abs() < 1e-9 * l.abs().max(1.0),
            "{k:?} {d:?} {p:?} {s:?}: {l} {r}"
        );
        // Unbatched input: the same blocks as its batch of one.
        let one = ops::unfold(&x.select(0, 0)?, k, d, p, s)?;
        check("unbatched unfold", &one, &cols.select(0, 0)?, 0.0);
    }
    Ok(())
}

#[test]
fn bad_arguments_are_errors_naming_the_op() {
    let x = t64(&[1, 2, 5, 5], 1);
    let w = t64(&[4, 2, 3, 3], 2);
    let err = |r: Result<Tensor>| r.unwrap_err().to_string();
    let e = err(ops::conv2d(&x, &w, None, &[1], &[0], &[1], 2));
    assert!(e.starts_with("conv2d:") && e.contains("groups"), "{e}");
    let e = err(ops::conv2d(&x, &w, None, &[1, 1, 1], &[0], &[1], 1));
    assert!(e.starts_with("conv2d:") && e.contains("stride"), "{e}");
    let e = err(ops::conv2d(
        &x,
        &t64(&[4, 2, 7, 7], 2),
        None,
        &[1],
        &[0],
        &[1],
        1,
    ));
    assert!(
        e.starts_with("conv2d:") && e.contains("no block fits"),
        "{e}"
    );
    let e = err(ops::conv2d_padding(&x, &w, None, &[2], "same", &[1], 1));
    assert!(
        e.starts_with("conv2d_padding:") && e.contains("stride 1"),
        "{e}"
    );
    let e = err(ops::conv2d_padding(&x, &w, None, &[1], "full", &[1], 1));
    assert!(e.contains("\"full\""), "{e}");
    let e = err(ops::unfold(&x, &[2], &[1], &[i64::MAX], &[1]));
    assert!(e.starts_with("unfold:"), "{e}");
    let e = err(ops::unfold(
        &x,
        &[i64::MAX],
        &[i64::MAX],
        &[i64::MAX],
        &[i64::MAX],
    ));
    assert!(e.starts_with("unfold:"), "{e}");
    let e = err(ops::fold(
        &t64(&[1, 8, 5], 1),
        &[3, 3],
        &[2],
        &[1],
        &[0],
        &[1],
    ));
    assert!(
        e.starts_with("fold:") && e.contains("number of blocks"),
        "{e}"
    );
    let e = err(ops::conv1d(
        &t64(&[1, 2, 5], 1),
        &t64(&[2, 2, 2], 1),
        None,
        &[1],
        &[-1],
        &[1],
        1,
    ));
    assert!(e.starts_with("conv1d:") && e.contains("padding"), "{e}");
}
