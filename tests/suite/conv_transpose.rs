//! The transposed convolutions (`conv_transpose1d`, `conv_transpose2d`)
//! against PyTorch, in f64 (to 1e-10) and f32 (to 1e-5), relative to the
//! larger of 1 and the value: the forward value and the gradient of
//! `sum(out * c)` for every tensor argument through `grad`, and forward mode
//! against reverse mode. The values were recorded by
//! `scripts/reference/record_conv_transpose.py` into
//! `tests/reference/torch_conv_transpose.json`. Then: each is the adjoint of
//! its convolution (equal to the convolution's input gradient); per-example
//! gradients under `vmap(grad)` with the fallback loop forbidden, equal to
//! the loop; hostile arguments are errors naming the op and the argument,
//! plain, under vmap and under grad, never a panic.
use crate::recorded::{assert_error, tensor, values};
use batchrules::prelude::*;
use serde_json::Value;

fn reference() -> Value {
    serde_json::from_str(include_str!("../reference/torch_conv_transpose.json"))
        .expect("tests/reference/torch_conv_transpose.json is JSON")
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

/// The case's op applied to `ts` (input, weight, then bias if the case has
/// one), with the recorded arguments.
fn apply(op: &str, args: &Value, ts: &[Tensor]) -> Result<Tensor> {
    let stride = ints(args, "stride", &[1]);
    let padding = ints(args, "padding", &[0]);
    let output_padding = ints(args, "output_padding", &[0]);
    let dilation = ints(args, "dilation", &[1]);
    let groups = args.get("groups").map_or(1, |g| g.as_i64().unwrap());
    let f = match op {
        "conv_transpose2d" => ops::conv_transpose2d,
        "conv_transpose1d" => ops::conv_transpose1d,
        _ => panic!("no op {op}"),
    };
    f(
        &ts[0],
        &ts[1],
        ts.get(2),
        &stride,
        &padding,
        &output_padding,
        groups,
        &dilation,
    )
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

fn t64(shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i * 7 + seed * 13) % 17) as f64 / 8.0 - 1.0)
        .collect();
    Tensor::from_shape_vec(shape, v).unwrap()
}

fn dot(a: &Tensor, b: &Tensor) -> f64 {
    values(a).iter().zip(values(b)).map(|(x, y)| x * y).sum()
}

#[test]
fn conv_transpose_matches_torch_forward_and_every_gradient() {
    let r = reference();
    assert_eq!(r["torch_version"].as_str().unwrap(), "2.15.0+cu132");
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 24);
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
        // The method form applies PyTorch's defaults.
        if args.as_object().unwrap().is_empty() && ts.len() == 2 {
            let m = match op {
                "conv_transpose2d" => ts[0].conv_transpose2d(&ts[1]),
                _ => ts[0].conv_transpose1d(&ts[1]),
            };
            check(&format!("{what} method"), &m.unwrap(), &y, 0.0);
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
        let lhs = dot(&ty, &c);
        let rhs: f64 = tangents.iter().zip(&grads).map(|(t, g)| dot(t, g)).sum();
        assert!(
            (lhs - rhs).abs() <= tol * 10.0 * rhs.abs().max(1.0),
            "{what}: jvp {lhs} against vjp {rhs}"
        );
    }
}

/// `conv_transpose2d(g, w)` is the input gradient of `conv2d(x, w)` for the
/// cotangent `g`, with the output size `output_padding` picks to be `x`'s.
#[test]
fn conv_transpose_is_the_input_gradient_of_conv() -> Result<()> {
    // (input [N, C_in, H, W] of the conv, weight [C_out, C_in / g, kh, kw],
    // stride, padding, dilation, groups)
    type Case<'a> = (
        &'a [usize],
        &'a [usize],
        &'a [i64],
        &'a [i64],
        &'a [i64],
        i64,
    );
    let cases: [Case; 5] = [
        (&[2, 3, 6, 5], &[4, 3, 3, 2], &[1], &[0], &[1], 1),
        (&[1, 4, 7, 8], &[6, 2, 3, 3], &[2, 3], &[1, 2], &[1, 2], 2),
        (&[2, 2, 9, 6], &[2, 1, 2, 2], &[3, 2], &[1, 0], &[2, 1], 2),
        (&[3, 5, 5], &[2, 3, 3, 3], &[2], &[1], &[1], 1),
        (&[1, 3, 8, 8], &[3, 1, 3, 3], &[2], &[1], &[3], 3),
    ];
    for (i, (xs, ws, s, p, d, g)) in cases.into_iter().enumerate() {
        let x = t64(xs, 3 * i);
        let w = t64(ws, 3 * i + 1);
        let y = ops::conv2d(&x, &w, None, s, p, d, g)?;
        let c = t64(y.shape(), 3 * i + 2);
        let gx = grad(|x: Tensor| {
            ops::sum(
                &ops::mul(&ops::conv2d(&x, &w, None, s, p, d, g)?, &c)?,
                None,
                false,
            )
        })
        .call(&x)?;
        // The output_padding that gives back x's size: what the stride left over.
        let r = xs.len();
        let mut op = vec![];
        for k in 0..2 {
            let (size, out) = (xs[r - 2 + k] as i64, y.shape()[y.ndim() - 2 + k] as i64);
            let (sk, pk, dk) = (pick(s, k), pick(p, k), pick(d, k));
            let span = dk * (ws[2 + k] as i64 - 1) + 1;
            op.push(size + 2 * pk - span - (out - 1) * sk);
        }
        let t = ops::conv_transpose2d(&c, &w, None, s, p, &op, g, d)?;
        check(&format!("case {i}: adjoint"), &t, &gx, 1e-12);
    }
    // conv_transpose1d against conv1d the same way.
    let x = t64(&[2, 4, 11], 1);
    let w = t64(&[6, 2, 3], 2);
    let y = ops::conv1d(&x, &w, None, &[3], &[1], &[2], 2)?;
    let c = t64(y.shape(), 3);
    let gx = grad(|x: Tensor| {
        ops::sum(
            &ops::mul(&ops::conv1d(&x, &w, None, &[3], &[1], &[2], 2)?, &c)?,
            None,
            false,
        )
    })
    .call(&x)?;
    // 11 + 2 - 5 - 2 * 3 = 2 left over.
    let t = ops::conv_transpose1d(&c, &w, None, &[3], &[1], &[2], 2, &[2])?;
    check("conv_transpose1d adjoint", &t, &gx, 1e-12);
    Ok(())
}

fn pick(v: &[i64], k: usize) -> i64 {
    if v.len() == 1 {
        v[0]
    } else {
        v[k]
    }
}

#[test]
fn per_example_gradients_are_batched_and_equal_the_loop() -> Result<()> {
    // Batched examples [1, C, H, W] and unbatched [C, H, W], with groups,
    // stride, padding, output_padding, dilation and a bias; the fallback
    // loop is an error.
    let w = t64(&[4, 3, 2, 3], 1);
    let b = t64(&[6], 2);
    for xs in [t64(&[3, 1, 4, 3, 2], 3), t64(&[3, 4, 3, 2], 4)] {
        let f = |((w, b), x): ((Tensor, Tensor), Tensor)| -> Result<Tensor> {
            let y = ops::conv_transpose2d(&x, &w, Some(&b), &[2, 1], &[1], &[1, 0], 2, &[1, 2])?;
            ops::sum(&ops::tanh(&y)?, None, false)
        };
        let per: (Tensor, Tensor) =
            vmap(|(w, b, x): (Tensor, Tensor, Tensor)| grad(f).call((&(w, b), &x)))
                .in_dims([None, None, Some(0)])
                .fallback(FallbackPolicy::Error)
                .call((&w, &b, &xs))?;
        assert_eq!(per.0.shape(), &[3, 4, 3, 2, 3]);
        for i in 0..3 {
            let x = xs.select(0, i)?;
            let (gw, gb) = grad(f).call((&(w.clone(), b.clone()), &x))?;
            check("per-example weight grad", &per.0.select(0, i)?, &gw, 1e-12);
            check("per-example bias grad", &per.1.select(0, i)?, &gb, 1e-12);
        }
    }
    // conv_transpose1d, the weight batched too (an ensemble), input gradient.
    let ws = t64(&[2, 2, 3, 2], 5);
    let xs = t64(&[2, 5, 2, 4], 6);
    let f = |(w, x): (Tensor, Tensor)| -> Result<Tensor> {
        let y = ops::conv_transpose1d(&x, &w, None, &[2], &[1], &[1], 1, &[1])?;
        ops::sum(&ops::mul(&y, &y)?, None, false)
    };
    let per: Tensor = vmap(|(w, x): (Tensor, Tensor)| grad(f).argnums::<1>().call((&w, &x)))
        .fallback(FallbackPolicy::Error)
        .call((&ws, &xs))?;
    for i in 0..2 {
        let one = grad(f)
            .argnums::<1>()
            .call((&ws.select(0, i)?, &xs.select(0, i)?))?;
        check(
            "conv_transpose1d per-example",
            &per.select(0, i)?,
            &one,
            1e-12,
        );
    }
    Ok(())
}

#[test]
fn bad_arguments_are_errors_naming_the_op_and_argument() {
    let x = t64(&[1, 2, 3, 3], 1);
    let w = t64(&[2, 3, 2, 2], 2);
    let x1 = t64(&[1, 2, 3], 1);
    let w1 = t64(&[2, 3, 2], 2);
    let ct2 = "conv_transpose2d";
    let ct1 = "conv_transpose1d";
    let f = |x: &Tensor, w: &Tensor, s: &[i64], p: &[i64], op: &[i64], g: i64, d: &[i64]| {
        ops::conv_transpose2d(x, w, None, s, p, op, g, d)
    };
    // output_padding not below the stride or the dilation.
    assert_error(ct2, "output_padding", f(&x, &w, &[2], &[0], &[2], 1, &[1]));
    assert_error(
        ct2,
        "output_padding",
        f(&x, &w, &[1], &[0], &[0, 1], 1, &[1]),
    );
    assert_error(ct2, "output_padding", f(&x, &w, &[1], &[0], &[-1], 1, &[1]));
    assert_error(
        ct2,
        "output_padding",
        f(&x, &w, &[1], &[0], &[0, 0, 0], 1, &[1]),
    );
    // A negative or zero stride, a negative padding, a zero dilation.
    assert_error(ct2, "stride", f(&x, &w, &[-1], &[0], &[0], 1, &[1]));
    assert_error(ct2, "stride", f(&x, &w, &[0, 1], &[0], &[0], 1, &[1]));
    assert_error(ct2, "padding", f(&x, &w, &[1], &[-1], &[0], 1, &[1]));
    assert_error(ct2, "dilation", f(&x, &w, &[1], &[0], &[0], 1, &[0]));
    // A padding that leaves no output, a huge one.
    assert_error(ct2, "padding", f(&x, &w, &[1], &[2], &[0], 1, &[1]));
    assert_error(ct2, "padding", f(&x, &w, &[1], &[i64::MAX], &[0], 1, &[1]));
    // Zero channels, in the weight or the input.
    assert_error(
        ct2,
        "weight",
        f(&x, &t64(&[2, 0, 2, 2], 1), &[1], &[0], &[0], 1, &[1]),
    );
    let empty = ops::zeros(&[1, 0, 3, 3], DType::F64).unwrap();
    assert_error(
        ct2,
        "weight",
        f(&empty, &t64(&[0, 3, 2, 2], 1), &[1], &[0], &[0], 1, &[1]),
    );
    assert_error(
        ct2,
        "input channels",
        f(&empty, &w, &[1], &[0], &[0], 1, &[1]),
    );
    // Groups: not dividing the input channels, zero, negative.
    assert_error(ct2, "groups", f(&x, &w, &[1], &[0], &[0], 4, &[1]));
    assert_error(ct2, "groups", f(&x, &w, &[1], &[0], &[0], 0, &[1]));
    assert_error(ct2, "groups", f(&x, &w, &[1], &[0], &[0], i64::MIN, &[1]));
    // Weight channels against the input's; the bias's shape; dtypes.
    assert_error(
        ct2,
        "input channels",
        f(&x, &t64(&[3, 2, 2, 2], 1), &[1], &[0], &[0], 1, &[1]),
    );
    assert_error(
        ct2,
        "bias",
        ops::conv_transpose2d(&x, &w, Some(&t64(&[2], 1)), &[1], &[0], &[0], 1, &[1]),
    );
    let w32 = ops::to_dtype(&w, DType::F32).unwrap();
    assert_error(ct2, "dtype", f(&x, &w32, &[1], &[0], &[0], 1, &[1]));
    let xi = ops::to_dtype(&x, DType::I64).unwrap();
    let wi = ops::to_dtype(&w, DType::I64).unwrap();
    assert_error(
        ct2,
        "floating-point",
        f(&xi, &wi, &[1], &[0], &[0], 1, &[1]),
    );
    // Ranks.
    assert_error(ct2, "weight", f(&x, &w1, &[1], &[0], &[0], 1, &[1]));
    assert_error(ct2, "input", f(&x1, &w, &[1], &[0], &[0], 1, &[1]));
    // conv_transpose1d names itself.
    let f1 = |s: &[i64], p: &[i64], op: &[i64], g: i64, d: &[i64]| {
        ops::conv_transpose1d(&x1, &w1, None, s, p, op, g, d)
    };
    assert_error(ct1, "output_padding", f1(&[2], &[0], &[3], 1, &[2]));
    assert_error(ct1, "stride", f1(&[1, 1], &[0], &[0], 1, &[1]));
    assert_error(ct1, "padding", f1(&[1], &[3], &[0], 1, &[1]));
    assert_error(ct1, "groups", f1(&[1], &[0], &[0], 3, &[1]));
    // What PyTorch allows: output_padding at or past the stride, below the dilation.
    assert_eq!(f1(&[1], &[0], &[1], 1, &[2]).unwrap().shape(), &[1, 3, 6]);
}

const HUGE: [i64; 5] = [1 << 40, 1 << 62, i64::MAX / 2, i64::MAX / 2 + 1, i64::MAX];

/// Each size argument at huge values: a result, or an error naming the op
/// and the argument (never an internal shape, an overflow, or a panic),
/// plain, under vmap and under grad.
#[test]
fn huge_size_arguments_are_results_or_errors_naming_the_argument() {
    type Call = fn(&Tensor, i64) -> Result<Tensor>;
    let x2 = ops::ones(&[1, 1, 3, 3], DType::F64).unwrap();
    let x1 = ops::ones(&[1, 1, 3], DType::F64).unwrap();
    let cases: Vec<(&str, &str, Call, &Tensor)> = vec![
        (
            "conv_transpose2d",
            "stride",
            |x, v| {
                let w = ops::ones(&[1, 1, 2, 2], DType::F64)?;
                ops::conv_transpose2d(x, &w, None, &[1, v], &[0], &[0], 1, &[1])
            },
            &x2,
        ),
        (
            "conv_transpose2d",
            "padding",
            |x, v| {
                let w = ops::ones(&[1, 1, 2, 2], DType::F64)?;
                ops::conv_transpose2d(x, &w, None, &[1], &[v], &[0], 1, &[1])
            },
            &x2,
        ),
        (
            "conv_transpose2d",
            "dilation",
            |x, v| {
                let w = ops::ones(&[1, 1, 2, 2], DType::F64)?;
                ops::conv_transpose2d(x, &w, None, &[1], &[0], &[0], 1, &[v, 1])
            },
            &x2,
        ),
        // output_padding just under a huge stride, or a huge dilation.
        (
            "conv_transpose2d",
            "output_padding",
            |x, v| {
                let w = ops::ones(&[1, 1, 2, 2], DType::F64)?;
                ops::conv_transpose2d(x, &w, None, &[v], &[0], &[v - 1], 1, &[1])
            },
            &x2,
        ),
        (
            "conv_transpose2d",
            "output_padding",
            |x, v| {
                let w = ops::ones(&[1, 1, 2, 2], DType::F64)?;
                ops::conv_transpose2d(x, &w, None, &[1], &[0], &[v - 1], 1, &[v])
            },
            &x2,
        ),
        (
            "conv_transpose2d",
            "output_padding",
            |x, v| {
                let w = ops::ones(&[1, 1, 2, 2], DType::F64)?;
                ops::conv_transpose2d(x, &w, None, &[1], &[0], &[v], 1, &[1])
            },
            &x2,
        ),
        // A huge padding that a huge stride makes up for.
        (
            "conv_transpose2d",
            "padding",
            |x, v| {
                let w = ops::ones(&[1, 1, 2, 2], DType::F64)?;
                ops::conv_transpose2d(x, &w, None, &[v], &[v / 2], &[0], 1, &[1])
            },
            &x2,
        ),
        (
            "conv_transpose1d",
            "stride",
            |x, v| {
                let w = ops::ones(&[1, 1, 2], DType::F64)?;
                ops::conv_transpose1d(x, &w, None, &[v], &[0], &[0], 1, &[1])
            },
            &x1,
        ),
        (
            "conv_transpose1d",
            "padding",
            |x, v| {
                let w = ops::ones(&[1, 1, 2], DType::F64)?;
                ops::conv_transpose1d(x, &w, None, &[1], &[v], &[0], 1, &[1])
            },
            &x1,
        ),
        (
            "conv_transpose1d",
            "output_padding",
            |x, v| {
                let w = ops::ones(&[1, 1, 2], DType::F64)?;
                ops::conv_transpose1d(x, &w, None, &[1], &[0], &[v - 1], 1, &[v])
            },
            &x1,
        ),
    ];
    let mut errors = 0;
    for (op, arg, call, x) in cases {
        for v in HUGE {
            let what = format!("{op} with {arg} at {v}");
            let check = |how: &str, r: Result<Tensor>| {
                let Err(e) = r else { return 0 };
                let msg = e.to_string();
                assert!(msg.starts_with(&format!("{op}: ")), "{what} ({how}): {msg}");
                assert!(msg.contains(arg), "{what} ({how}): {msg}");
                assert!(
                    !msg.contains(&usize::MAX.to_string()),
                    "{what} ({how}): {msg}"
                );
                assert!(!msg.contains("tensor of shape"), "{what} ({how}): {msg}");
                assert!(!msg.contains("overflows"), "{what} ({how}): {msg}");
                1
            };
            errors += check("plain", call(x, v));
            let batch = ops::stack(&[x.clone(), x.clone()], 0).unwrap();
            check("vmap", vmap(|x: Tensor| call(&x, v)).call(&batch));
            check(
                "grad",
                grad(|x: Tensor| ops::sum(&call(&x, v)?, None, false)).call(x),
            );
        }
    }
    assert!(errors > 30, "{errors}");
}

/// A huge padding with a huge stride leaves a small output: a result, and
/// cheap (the columns are the input's positions, not the stride's gaps).
#[test]
fn a_huge_stride_with_padding_is_a_small_result() -> Result<()> {
    let x = t64(&[1, 1, 2], 1);
    let w = t64(&[1, 1, 3], 2);
    let big = 1i64 << 40;
    // (2 - 1) * big - 2 * (big / 2 - 1) + 2 + 0 + 1 = 5 positions, in the
    // stride's gap between the two inputs' kernels.
    let y = ops::conv_transpose1d(&x, &w, None, &[big], &[big / 2 - 1], &[0], 1, &[1])?;
    assert_eq!(y.shape(), &[1, 1, 5]);
    // Direct: out[o] = sum_{i, j: i * s + j - p = o} x[i] w[j].
    let (xv, wv) = (values(&x), values(&w));
    let (s, p) = (big as i128, (big / 2 - 1) as i128);
    let mut want = [0.0f64; 5];
    for (i, a) in xv.iter().enumerate() {
        for (j, b) in wv.iter().enumerate() {
            let o = i as i128 * s + j as i128 - p;
            if (0..5).contains(&o) {
                want[o as usize] += a * b;
            }
        }
    }
    assert_eq!(values(&y), want);
    Ok(())
}

/// An empty batch with huge spatial dims is a tensor of no elements: the
/// decomposition's columns and `fold` stay bounded (a result or an error
/// naming the op, plain and under vmap).
#[test]
fn an_empty_batch_with_huge_spatial_dims_is_bounded() {
    let x2 = ops::zeros(&[0, 1, 1 << 40, 1], DType::F64).unwrap();
    let w2 = ops::ones(&[1, 2, 1, 1], DType::F64).unwrap();
    let x1 = ops::zeros(&[0, 1, 1 << 40], DType::F64).unwrap();
    let w1 = ops::ones(&[1, 2, 2], DType::F64).unwrap();
    type Call<'a> = Box<dyn Fn(&Tensor) -> Result<Tensor> + 'a>;
    let calls: [(&str, Call, &Tensor); 3] = [
        (
            "conv_transpose2d",
            Box::new(|x| ops::conv_transpose2d(x, &w2, None, &[1], &[0], &[0], 1, &[1])),
            &x2,
        ),
        (
            "conv_transpose2d",
            Box::new(|x| ops::conv_transpose2d(x, &w2, None, &[1, 2], &[0], &[0, 1], 1, &[1])),
            &x2,
        ),
        (
            "conv_transpose1d",
            Box::new(|x| ops::conv_transpose1d(x, &w1, None, &[2], &[1], &[1], 1, &[1])),
            &x1,
        ),
    ];
    for (op, call, x) in calls {
        let check = |how: &str, r: Result<Tensor>| match r {
            Ok(y) => assert_eq!(y.shape()[..2], [0, 2], "{op} ({how})"),
            Err(e) => assert!(
                e.to_string().starts_with(&format!("{op}: ")),
                "{op} ({how}): {e}"
            ),
        };
        check("plain", call(x));
        let batch = ops::stack(&[x.clone(), x.clone()], 0).unwrap();
        let r = vmap(|x: Tensor| call(&x)).call(&batch);
        if let Err(e) = &r {
            assert!(
                e.to_string().starts_with(&format!("{op}: ")),
                "{op} (vmap): {e}"
            );
        }
    }
}
