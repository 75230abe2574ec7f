//! Issue 43, classes 2, 3 and 5, outside the loaders and the op library:
//! errors of the `*_with_aux` transforms name the function called, forward
//! mode refuses integer and bool primals (as `jacfwd` and `torch.func.jvp`
//! do), `Tensor::allclose` compares integers exactly and refuses a negative
//! or NaN tolerance, `Display` of extreme magnitudes and of empty tensors, and
//! `conv1d`/`conv2d` with no input or output channels (PyTorch's result: the
//! bias). Every call runs under `no_panic`.

use crate::common::no_panic;
use crate::recorded::tensor;
use batchrules::testing::{check_grad, check_jvp, check_vmap};
use batchrules::{
    hvp, jacfwd_with_aux, jacrev_with_aux, jvp, jvp_with_aux, linearize, ops, vjp, vjp_with_aux,
    DType, Result, Tensor,
};

fn f64t(shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).unwrap()
}

fn i64t(shape: &[usize], values: &[i64]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).unwrap()
}

/// Asserts that `r` is an error whose message starts with `name:` (the
/// function the user called), and returns the message.
fn named<T: std::fmt::Debug>(name: &str, r: Result<T>) -> String {
    let err = r.expect_err(name);
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{name}:")),
        "the error should name `{name}`, got: {msg}"
    );
    msg
}

// ---------------------------------------------------------------------------
// Class 3: each `*_with_aux` error names the function called

#[test]
fn with_aux_errors_name_the_with_aux_function() {
    let x = f64t(&[3], &[0.5, 1.0, 2.0]);
    let short = f64t(&[2], &[1.0, 1.0]);
    let f32_tangent = Tensor::from_shape_vec(&[3], vec![1.0f32, 1.0, 1.0]).unwrap();
    let f = |x: Tensor| Ok((ops::sin(&x)?, ops::cos(&x)?));
    no_panic("with_aux errors", || {
        // jvp_with_aux: a tangent of the wrong shape, of the wrong dtype,
        // of the wrong count, an integer primal.
        let msg = named("jvp_with_aux", jvp_with_aux(f, &x, &short));
        assert!(msg.contains("[2]") && msg.contains("[3]"), "{msg}");
        named("jvp_with_aux", jvp_with_aux(f, &x, &f32_tangent));
        let two = vec![x.clone(), x.clone()];
        let one = vec![x.clone()];
        named(
            "jvp_with_aux",
            jvp_with_aux(|xs: Vec<Tensor>| f(xs[0].clone()), &two, &one),
        );
        // The same misuse through plain jvp still says `jvp`.
        named("jvp", jvp(|x: Tensor| ops::sin(&x), &x, &short));

        // jacrev_with_aux / jacfwd_with_aux: an integer output, an integer
        // input, no output, a chunk size of 0.
        let int_out = |x: Tensor| Ok((ops::argmax(&x, None, false)?, ops::sin(&x)?));
        let msg = named("jacrev_with_aux", jacrev_with_aux(int_out).call(&x));
        assert!(msg.contains("i64"), "{msg}");
        let msg = named("jacfwd_with_aux", jacfwd_with_aux(int_out).call(&x));
        assert!(msg.contains("i64"), "{msg}");
        let ints = i64t(&[2], &[1, 2]);
        named("jacrev_with_aux", jacrev_with_aux(f).call(&ints));
        named("jacfwd_with_aux", jacfwd_with_aux(f).call(&ints));
        named(
            "jacrev_with_aux",
            jacrev_with_aux(|x: Tensor| Ok((Vec::<Tensor>::new(), ops::sin(&x)?))).call(&x),
        );
        named("jacfwd_with_aux", jacfwd_with_aux(f).chunk_size(0).call(&x));
        named("jacrev_with_aux", jacrev_with_aux(f).chunk_size(0).call(&x));

        // vjp_with_aux: its pullback called with a wrong cotangent names it;
        // the plain vjp's says `vjp`.
        let (_, pullback, _) = vjp_with_aux(f, &x).unwrap();
        let msg = named("vjp_with_aux", pullback.call(&short));
        assert!(msg.contains("[2]"), "{msg}");
        let (_, pullback) = vjp(|x: Tensor| ops::sin(&x), &x).unwrap();
        named("vjp", pullback.call(&short));
    });
}

// ---------------------------------------------------------------------------
// Class 5: forward mode refuses integer and bool primals

#[test]
fn forward_mode_refuses_integer_and_bool_primals() {
    let ints = i64t(&[2], &[1, 2]);
    let bools = Tensor::from_shape_vec(&[2], vec![true, false]).unwrap();
    let x = f64t(&[2], &[0.5, 1.0]);
    no_panic("integer primals", || {
        for p in [&ints, &bools] {
            let dtype = p.dtype().to_string();
            let msg = named("jvp", jvp(|t: Tensor| Ok(t), p, p));
            assert!(
                msg.contains(&dtype) && msg.contains("floating-point"),
                "{msg}"
            );
            named(
                "jvp_with_aux",
                jvp_with_aux(|t: Tensor| Ok((t.clone(), t)), p, p),
            );
            named("linearize", linearize(|t: Tensor| Ok(t), p).map(|_| ()));
            named(
                "hvp",
                hvp(|t: Tensor| ops::sum(&ops::mul(&t, &t)?, None, false), p, p),
            );
        }
        // An integer leaf beside a float one: the error names its path.
        let msg = named(
            "jvp",
            jvp(
                |(a, b): (Tensor, Tensor)| ops::mul(&a, &ops::to_dtype(&b, DType::F64)?),
                (&x, &ints),
                (&x, &ints),
            ),
        );
        assert!(msg.contains("leaf 1") && msg.contains("i64"), "{msg}");
    });
    // Float primals still work: jvp of sin is cos * v.
    let (_, dy) = jvp(|t: Tensor| ops::sin(&t), &x, &x).unwrap();
    let want = ops::mul(&ops::cos(&x).unwrap(), &x).unwrap();
    assert!(dy.allclose(&want, 0.0, 0.0).unwrap());
}

// ---------------------------------------------------------------------------
// Class 2: allclose

#[test]
fn allclose_compares_integers_exactly() {
    let max = i64t(&[1], &[i64::MAX]);
    let below = i64t(&[1], &[i64::MAX - 1]);
    let p53 = i64t(&[1], &[1 << 53]);
    let p53_1 = i64t(&[1], &[(1 << 53) + 1]);
    let min = i64t(&[1], &[i64::MIN]);
    assert!(!max.allclose(&below, 0.0, 0.0).unwrap());
    assert!(!p53.allclose(&p53_1, 0.0, 0.0).unwrap());
    assert!(!p53_1.allclose(&p53, 0.0, 0.0).unwrap());
    assert!(max.allclose(&max, 0.0, 0.0).unwrap());
    // A difference of one is within an atol of 1, not of 0.999.
    assert!(max.allclose(&below, 0.0, 1.0).unwrap());
    assert!(!max.allclose(&below, 0.0, 0.999).unwrap());
    // The widest difference (2^64 - 1) does not overflow, and an infinite
    // tolerance admits it.
    assert!(!min.allclose(&max, 0.0, 1e18).unwrap());
    assert!(min.allclose(&max, 0.0, f64::INFINITY).unwrap());
    // rtol scales |other|: |2^53+1 - 2^53| = 1 <= 1e-15 * 2^53 ≈ 9.007.
    assert!(p53_1.allclose(&p53, 1e-15, 0.0).unwrap());
    assert!(!p53_1.allclose(&p53, 1e-17, 0.0).unwrap());
    // Bool against bool and against i64, exactly; broadcasting holds.
    let tf = Tensor::from_shape_vec(&[2], vec![true, false]).unwrap();
    assert!(tf.allclose(&i64t(&[2], &[1, 0]), 0.0, 0.0).unwrap());
    assert!(!tf.allclose(&i64t(&[1], &[1]), 0.0, 0.0).unwrap());
    assert!(i64t(&[2, 2], &[3; 4])
        .allclose(&i64t(&[1], &[3]), 0.0, 0.0)
        .unwrap());
    // Mixed with a float: through f64, as before.
    assert!(i64t(&[1], &[2])
        .allclose(&f64t(&[1], &[2.0]), 0.0, 0.0)
        .unwrap());
    assert!(!i64t(&[1], &[2])
        .allclose(&f64t(&[1], &[2.5]), 0.0, 0.0)
        .unwrap());
}

#[test]
fn allclose_refuses_negative_and_nan_tolerances() {
    let a = f64t(&[2], &[1.0, 2.0]);
    let i = i64t(&[2], &[1, 2]);
    for (rtol, atol, bad) in [
        (-1e-5, 1e-8, "rtol"),
        (1e-5, -1e-8, "atol"),
        (f64::NAN, 1e-8, "rtol"),
        (1e-5, f64::NAN, "atol"),
        (f64::NEG_INFINITY, 0.0, "rtol"),
    ] {
        for (x, y) in [(&a, &a), (&i, &i), (&a, &i)] {
            let msg = named(
                "Tensor::allclose",
                no_panic("allclose", || x.allclose(y, rtol, atol)),
            );
            assert!(msg.contains(bad), "{msg}");
        }
    }
    // Zero and infinite tolerances are fine.
    assert!(a.allclose(&a, 0.0, 0.0).unwrap());
    assert!(a
        .allclose(&f64t(&[2], &[5.0, -5.0]), 0.0, f64::INFINITY)
        .unwrap());
}

// ---------------------------------------------------------------------------
// Class 5: Display

#[test]
fn display_writes_extreme_magnitudes_in_scientific_notation() {
    let cases: [(f64, &str); 6] = [
        (1e-300, "1e-300"),
        (-2.5e-7, "-2.5e-7"),
        (1e300, "1e300"),
        (f64::MAX, "1.7976931348623157e308"),
        (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
        (1e20, "1e20"),
    ];
    for (v, want) in cases {
        let shown = f64t(&[1], &[v]).to_string();
        assert!(shown.contains(want), "{v:e} shows as {shown}");
        assert!(
            shown.len() < 60,
            "{v:e} shows as {} characters",
            shown.len()
        );
        // What is shown parses back to the value.
        let inner = shown
            .trim_start_matches("tensor([")
            .split(']')
            .next()
            .unwrap();
        assert_eq!(inner.parse::<f64>().unwrap(), v, "{shown}");
    }
    // f32 too, and ordinary magnitudes as before.
    let f = Tensor::from_shape_vec(&[2], vec![1e-30f32, 3e25]).unwrap();
    assert_eq!(f.to_string(), "tensor([1e-30, 3e25], dtype=f32)");
    assert_eq!(
        f64t(&[3], &[2.0, 0.5, 0.0]).to_string(),
        "tensor([2., 0.5, 0.], dtype=f64)"
    );
    assert_eq!(
        f64t(&[2], &[1e-4, 123456.0]).to_string(),
        "tensor([0.0001, 123456.], dtype=f64)"
    );
}

#[test]
fn display_of_empty_tensors_shows_the_shape() {
    for shape in [[0usize, 3], [3, 0], [0, 0]] {
        let t = ops::zeros(&[shape[0] as i64, shape[1] as i64], DType::F32).unwrap();
        assert_eq!(
            t.to_string(),
            format!("tensor([], shape={shape:?}, dtype=f32)")
        );
    }
    let t = ops::zeros(&[2, 0, 4], DType::I64).unwrap();
    assert_eq!(t.to_string(), "tensor([], shape=[2, 0, 4], dtype=i64)");
    // A 1-d empty tensor needs no shape to be unambiguous.
    let t = ops::zeros(&[0], DType::F64).unwrap();
    assert_eq!(t.to_string(), "tensor([], dtype=f64)");
}

// ---------------------------------------------------------------------------
// Class 5: convolutions with no input or output channels

#[test]
fn conv_without_input_channels_gives_the_bias() {
    let b = f64t(&[3], &[0.5, -1.0, 2.0]);
    // Batched and unbatched conv2d, and conv1d; output spatial 3 x 3 (3).
    let cases: [(Vec<usize>, Vec<usize>, Vec<usize>); 3] = [
        (vec![2, 0, 4, 4], vec![3, 0, 2, 2], vec![2, 3, 3, 3]),
        (vec![0, 4, 4], vec![3, 0, 2, 2], vec![3, 3, 3]),
        (vec![2, 0, 4], vec![3, 0, 2], vec![2, 3, 3]),
    ];
    for (xs, ws, out) in cases {
        let x = Tensor::from_shape_vec(&xs, Vec::<f64>::new()).unwrap();
        let w = Tensor::from_shape_vec(&ws, Vec::<f64>::new()).unwrap();
        let conv = |x: &Tensor, w: &Tensor, b: Option<&Tensor>| {
            if ws.len() == 4 {
                ops::conv2d(x, w, b, &[1], &[0], &[1], 1)
            } else {
                ops::conv1d(x, w, b, &[1], &[0], &[1], 1)
            }
        };
        let y = no_panic("conv, no input channels", || conv(&x, &w, Some(&b))).unwrap();
        assert_eq!(y.shape(), out.as_slice());
        // Every element of output channel c is b[c] (PyTorch's result).
        let c_dim = out.len() + 1 - ws.len();
        let per_channel = out[c_dim + 1..].iter().product::<usize>();
        let values = y.to_array::<f64>().unwrap();
        for (k, v) in values.iter().enumerate() {
            let c = (k / per_channel) % 3;
            assert_eq!(*v, [0.5, -1.0, 2.0][c], "element {k} of {out:?}");
        }
        let y = conv(&x, &w, None).unwrap();
        assert_eq!(y.shape(), out.as_slice());
        assert!(y.to_array::<f64>().unwrap().iter().all(|&v| v == 0.0));
        // The bias's gradient counts the output elements of its channel;
        // vmap equals the loop.
        let n = check_grad(
            |t| Ok(vec![conv(&t[0], &t[1], Some(&t[2]))?]),
            &[x.clone(), w.clone(), b.clone()],
        )
        .unwrap();
        assert!(n > 0);
        check_jvp(
            |t| Ok(vec![conv(&t[0], &t[1], Some(&t[2]))?]),
            &[x.clone(), w.clone(), b.clone()],
        )
        .unwrap();
        check_vmap(|t| conv(&t[0], &t[1], Some(&t[2])), &[x, w, b.clone()]).unwrap();
    }
}

#[test]
fn conv_without_output_channels_is_empty() {
    let x = Tensor::from_shape_vec(&[2, 3, 4, 4], (0..96).map(f64::from).collect()).unwrap();
    let w = Tensor::from_shape_vec(&[0, 3, 2, 2], Vec::<f64>::new()).unwrap();
    let b = Tensor::from_shape_vec(&[0], Vec::<f64>::new()).unwrap();
    let y = ops::conv2d(&x, &w, Some(&b), &[1], &[0], &[1], 1).unwrap();
    assert_eq!(y.shape(), &[2, 0, 3, 3]);
    check_vmap(
        |t| ops::conv2d(&t[0], &t[1], None, &[1], &[0], &[1], 1),
        &[x, w],
    )
    .unwrap();
}

#[test]
fn conv_still_refuses_empty_spatial_dims_and_kernels() {
    let x = Tensor::from_shape_vec(&[1, 2, 0, 4], Vec::<f64>::new()).unwrap();
    let w = ops::zeros(&[3, 2, 1, 1], DType::F64).unwrap();
    named("conv2d", ops::conv2d(&x, &w, None, &[1], &[0], &[1], 1));
    let x = ops::zeros(&[1, 2, 4, 4], DType::F64).unwrap();
    let w = ops::zeros(&[3, 2, 0, 1], DType::F64).unwrap();
    named("conv2d", ops::conv2d(&x, &w, None, &[1], &[0], &[1], 1));
    // Zero input channels must still match the weight's.
    let x = Tensor::from_shape_vec(&[1, 0, 4, 4], Vec::<f64>::new()).unwrap();
    let w = ops::zeros(&[3, 1, 2, 2], DType::F64).unwrap();
    named("conv2d", ops::conv2d(&x, &w, None, &[1], &[0], &[1], 1));
}

/// JAX's values (`scripts/reference/record_conv_channels.py`; PyTorch 2.15
/// gives a tensor with the wrong channel count here, see the script): the
/// output with its bias, and the bias's gradient of `sum(out * c)`.
#[test]
fn conv_without_channels_matches_jax() {
    let r: serde_json::Value =
        serde_json::from_str(include_str!("../reference/jax_conv_channels.json")).unwrap();
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        let x = tensor(&case["input"], DType::F64);
        let w = tensor(&case["weight"], DType::F64);
        let b = case.get("bias").map(|b| tensor(b, DType::F64));
        let stride: Vec<i64> = case["stride"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_i64().unwrap())
            .collect();
        let conv = |x: &Tensor, w: &Tensor, b: Option<&Tensor>| {
            if w.ndim() == 4 {
                ops::conv2d(x, w, b, &stride, &[0], &[1], 1)
            } else {
                ops::conv1d(x, w, b, &stride, &[0], &[1], 1)
            }
        };
        let want = tensor(&case["forward"], DType::F64);
        let y = conv(&x, &w, b.as_ref()).unwrap();
        assert_eq!(y.shape(), want.shape(), "{:?}", x.shape());
        assert!(
            y.allclose(&want, 0.0, 0.0).unwrap(),
            "{y} against JAX {want}"
        );
        if let Some(b) = &b {
            let c = tensor(&case["cotangent"], DType::F64);
            let gb = batchrules::grad(|b: Tensor| {
                ops::sum(&ops::mul(&conv(&x, &w, Some(&b))?, &c)?, None, false)
            })
            .call(b)
            .unwrap();
            let want = tensor(&case["bias_grad"], DType::F64);
            assert!(
                gb.allclose(&want, 1e-12, 1e-12).unwrap(),
                "{gb} against JAX {want}"
            );
        }
    }
}
