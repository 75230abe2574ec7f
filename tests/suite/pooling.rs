//! The pooling ops (`max_pool2d`, `max_pool2d_with_indices`, `avg_pool2d`,
//! `adaptive_avg_pool2d`, and `max_pool1d`, `avg_pool1d`,
//! `adaptive_avg_pool1d`) against PyTorch, in f64 and f32: the forward
//! values (and max pooling's indices), the gradient of `sum(out *
//! cotangent)` through `grad`, and the tangent along a fixed input tangent
//! through `jvp`. The cases cover ties (constant inputs, repeated values: the
//! first maximum takes the gradient), NaN and -inf, overlapping windows,
//! padding, dilation, ceil_mode, count_include_pad false, divisor_override,
//! adaptive sizes that do not divide, and a window of padding only. The
//! values were recorded by `scripts/reference/record_pooling.py` into
//! `tests/reference/torch_pooling.json`. Then per-example gradients of a
//! max-pooled loss under `vmap(grad)` with `FallbackPolicy::Error`, and the
//! errors.

use crate::recorded::{disagreement, floats, values};
use batchrules::prelude::*;

/// The recorded values.
fn reference() -> serde_json::Value {
    serde_json::from_str(include_str!("../reference/torch_pooling.json"))
        .expect("tests/reference/torch_pooling.json is JSON")
}

fn ints(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_i64().expect("an int"))
        .collect()
}

fn sizes(v: &serde_json::Value) -> Vec<usize> {
    ints(v).into_iter().map(|v| v as usize).collect()
}

/// A tensor of `shape` holding `values`, in `dtype` (f32 values are exact:
/// they were recorded from f32).
fn tensor(shape: &[usize], values: &[f64], dtype: &str) -> Tensor {
    match dtype {
        "f64" => Tensor::from_shape_vec(shape, values.to_vec()).unwrap(),
        _ => {
            let v: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            Tensor::from_shape_vec(shape, v).unwrap()
        }
    }
}

/// A pooling op with its recorded arguments applied.
type Pool = Box<dyn Fn(&Tensor) -> Result<Tensor>>;

/// The op `name` with the recorded keyword arguments `kw` (PyTorch's
/// defaults for the others).
fn pool(name: &str, kw: &serde_json::Value) -> Pool {
    let list =
        |k: &str, default: &[i64]| -> Vec<i64> { kw.get(k).map_or_else(|| default.to_vec(), ints) };
    let flag = |k: &str, default: bool| kw.get(k).map_or(default, |v| v.as_bool().unwrap());
    let kernel = list("kernel_size", &[]);
    let stride = kw.get("stride").map(ints);
    let padding = list("padding", &[0]);
    let dilation = list("dilation", &[1]);
    let ceil = flag("ceil_mode", false);
    let include_pad = flag("count_include_pad", true);
    let divisor = kw.get("divisor_override").map(|v| v.as_i64().unwrap());
    let output_size = list("output_size", &[]);
    match name {
        "max_pool2d" => Box::new(move |x| {
            ops::max_pool2d(x, &kernel, stride.as_deref(), &padding, &dilation, ceil)
        }),
        "max_pool1d" => Box::new(move |x| {
            ops::max_pool1d(x, &kernel, stride.as_deref(), &padding, &dilation, ceil)
        }),
        "avg_pool2d" => Box::new(move |x| {
            ops::avg_pool2d(
                x,
                &kernel,
                stride.as_deref(),
                &padding,
                ceil,
                include_pad,
                divisor,
            )
        }),
        "avg_pool1d" => Box::new(move |x| {
            ops::avg_pool1d(x, &kernel, stride.as_deref(), &padding, ceil, include_pad)
        }),
        "adaptive_avg_pool2d" => Box::new(move |x| ops::adaptive_avg_pool2d(x, &output_size)),
        "adaptive_avg_pool1d" => Box::new(move |x| ops::adaptive_avg_pool1d(x, &output_size)),
        other => panic!("no pooling op {other}"),
    }
}

#[test]
fn pooling_matches_pytorch_forward_grad_and_jvp() {
    let reference = reference();
    let cases = reference["cases"].as_array().unwrap();
    let (mut indices_checked, mut jvps_checked, mut ties) = (0, 0, 0);
    for case in cases {
        let name = case["op"].as_str().unwrap();
        let dtype = case["dtype"].as_str().unwrap();
        let tol = if dtype == "f64" { 1e-10 } else { 1e-5 };
        let shape = sizes(&case["shape"]);
        let out_shape = sizes(&case["out_shape"]);
        let x = tensor(&shape, &floats(&case["input"]), dtype);
        let what = format!(
            "{name} {:?} {} {} {dtype}",
            shape, case["input_kind"], case["args"]
        );
        let check = |how: &str, got: &Tensor, want_shape: &[usize], want: &[f64]| {
            assert_eq!(got.dtype(), x.dtype(), "{what}, {how}");
            assert_eq!(got.shape(), want_shape, "{what}, {how}");
            let got = values(got);
            if let Some(i) = disagreement(&got, want, tol) {
                panic!("{what}, {how}: at {i}, got {}, torch {}", got[i], want[i]);
            }
        };
        let f = pool(name, &case["args"]);
        check(
            "forward",
            &f(&x).unwrap(),
            &out_shape,
            &floats(&case["forward"]),
        );

        let cot = tensor(&out_shape, &floats(&case["cotangent"]), dtype);
        let g = grad(|x: Tensor| ops::sum(&ops::mul(&f(&x)?, &cot)?, None, false))
            .call(&x)
            .unwrap();
        check("grad", &g, &shape, &floats(&case["grad"]));

        let tangent = tensor(&shape, &floats(&case["tangent"]), dtype);
        if !case["jvp"].is_null() {
            let (y, t) = jvp(|x: Tensor| f(&x), &x, &tangent).unwrap();
            check("jvp primal", &y, &out_shape, &floats(&case["forward"]));
            check("jvp tangent", &t, &out_shape, &floats(&case["jvp"]));
            jvps_checked += 1;
        }

        if let Some(want) = case.get("indices") {
            let kw = &case["args"];
            let list = |k: &str, d: &[i64]| kw.get(k).map_or_else(|| d.to_vec(), ints);
            let (_, i) = ops::max_pool2d_with_indices(
                &x,
                &list("kernel_size", &[]),
                kw.get("stride").map(ints).as_deref(),
                &list("padding", &[0]),
                &list("dilation", &[1]),
                kw.get("ceil_mode").is_some_and(|v| v.as_bool().unwrap()),
            )
            .unwrap();
            assert_eq!(i.dtype(), DType::I64, "{what}");
            let got = i.to_array::<i64>().unwrap().into_raw_vec_and_offset().0;
            assert_eq!(got, ints(want), "{what}: indices");
            indices_checked += 1;
            let kind = case["input_kind"].as_str().unwrap();
            if kind == "constant" || kind == "repeated" {
                ties += 1;
            }
        }
    }
    // Every case in both dtypes; PyTorch has no jvp for the window of
    // padding only (its own index there is out of range).
    assert_eq!(cases.len(), 2 * 34);
    assert_eq!(indices_checked, 2 * 14);
    assert_eq!(ties, 2 * 5);
    assert_eq!(jvps_checked, cases.len() - 2);
}

#[test]
fn max_pool_ties_take_the_first_maximum_and_nan_the_last_nan() -> Result<()> {
    // One row, windows of 2 with stride 1 over [2, 2, 1, nan, 3, nan].
    let x = Tensor::from_shape_vec(&[1, 1, 6], vec![2.0f64, 2.0, 1.0, f64::NAN, 3.0, f64::NAN])?;
    let (v, i) = ops::max_pool2d_with_indices(&x, &[1, 2], Some(&[1]), &[0], &[1], false)?;
    assert_eq!(
        i.to_array::<i64>()?.into_raw_vec_and_offset().0,
        [0, 1, 3, 3, 5]
    );
    let v = values(&v);
    assert_eq!(v[..2], [2.0, 2.0]);
    assert!(v[2..].iter().all(|v| v.is_nan()));
    // The gradient: each window's 1 at its index, overlaps summed.
    let g = grad(|x: Tensor| {
        ops::sum(
            &ops::max_pool2d(&x, &[1, 2], Some(&[1]), &[0], &[1], false)?,
            None,
            false,
        )
    })
    .call(&x)?;
    assert_eq!(values(&g), [1.0, 1.0, 0.0, 2.0, 0.0, 1.0]);
    Ok(())
}

/// `sum(tanh(max_pool2d(x * w))^2)`: a loss with a max pooling between a
/// parameter and a (per-example) input.
fn pooled_loss(w: &Tensor, x: &Tensor) -> Result<Tensor> {
    let h = ops::max_pool2d(&ops::mul(x, w)?, &[2], Some(&[1]), &[1], &[1], true)?;
    let h = ops::tanh(&h)?;
    ops::sum(&ops::mul(&h, &h)?, None, false)
}

#[test]
fn per_example_gradients_of_a_max_pooled_loss_need_no_loop() -> Result<()> {
    let values = |n: usize, seed: usize| -> Vec<f64> {
        (0..n)
            .map(|i| ((i * 7 + seed) as f64 * 0.731).sin())
            .collect()
    };
    let w = Tensor::from_shape_vec(&[2, 4, 5], values(40, 1))?;
    // Examples of shape [C, H, W] (unbatched inputs of the op) and of shape
    // [N, C, H, W] (batched ones): both fold the vmap dim into N.
    for example in [vec![2, 4, 5], vec![3, 2, 4, 5]] {
        let mut shape = vec![4];
        shape.extend(&example);
        let n: usize = shape.iter().product();
        let xs = Tensor::from_shape_vec(&shape, values(n, 2))?;
        let f = |(w, x): (Tensor, Tensor)| pooled_loss(&w, &x);
        let per_example = vmap(|(w, x): (Tensor, Tensor)| grad(f).call((&w, &x)))
            .in_dims([None, Some(0)])
            .fallback(FallbackPolicy::Error)
            .call((&w, &xs))?;
        assert_eq!(per_example.shape(), &[4, 2, 4, 5]);
        for i in 0..4 {
            let one = grad(f).call((&w, &xs.select(0, i)?))?;
            let (a, b) = (self::values(&per_example.select(0, i)?), self::values(&one));
            assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() < 1e-12));
            assert!(
                b.iter().any(|v| v.abs() > 1e-3),
                "a gradient that is not zero"
            );
        }
        // And the per-example jvp (forward mode under vmap), no loop either.
        let tangents = Tensor::from_shape_vec(&shape, values(n, 3))?;
        let pooled = |x: Tensor| ops::max_pool2d(&x, &[3], Some(&[2]), &[1], &[1], false);
        let tangent_out = vmap(|(x, t): (Tensor, Tensor)| Ok(jvp(pooled, &x, &t)?.1))
            .fallback(FallbackPolicy::Error)
            .call((&xs, &tangents))?;
        let one = jvp(pooled, &xs.select(0, 1)?, &tangents.select(0, 1)?)?.1;
        assert_eq!(self::values(&tangent_out.select(0, 1)?), self::values(&one));
    }
    Ok(())
}

#[test]
fn pooling_rejects_bad_arguments_naming_the_op_and_the_argument() {
    let x = Tensor::from_shape_vec(&[1, 1, 3, 3], vec![0.5f64; 9]).unwrap();
    let ints = Tensor::from_shape_vec(&[1, 2, 2], vec![1i64; 4]).unwrap();
    let flat = Tensor::from_shape_vec(&[3, 3], vec![0.5f64; 9]).unwrap();
    let no_channels = Tensor::from_shape_vec::<f64>(&[1, 0, 3, 3], vec![]).unwrap();
    let big = i64::MAX;
    let calls: Vec<(&str, &str, Result<Tensor>)> = vec![
        (
            "max_pool2d",
            "floating-point",
            ops::max_pool2d(&ints, &[2], None, &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "input",
            ops::max_pool2d(&flat, &[2], None, &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "input",
            ops::max_pool2d(&no_channels, &[2], None, &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "kernel_size",
            ops::max_pool2d(&x, &[0], None, &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "kernel_size",
            ops::max_pool2d(&x, &[1, 2, 3], None, &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "kernel_size",
            ops::max_pool2d(&x, &[], None, &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "stride",
            ops::max_pool2d(&x, &[2], Some(&[0]), &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "padding",
            ops::max_pool2d(&x, &[2], None, &[2], &[1], false),
        ),
        (
            "max_pool2d",
            "padding",
            ops::max_pool2d(&x, &[2], None, &[-1], &[1], false),
        ),
        (
            "max_pool2d",
            "dilation",
            ops::max_pool2d(&x, &[2], None, &[0], &[-3], false),
        ),
        (
            "max_pool2d",
            "output",
            ops::max_pool2d(&x, &[4], None, &[0], &[1], false),
        ),
        (
            "max_pool2d",
            "output",
            ops::max_pool2d(&x, &[2], None, &[0], &[big], false),
        ),
        (
            "max_pool2d",
            "output",
            ops::max_pool2d(&x, &[big], Some(&[big]), &[big / 2], &[big], true),
        ),
        (
            "max_pool2d_with_indices",
            "kernel_size",
            ops::max_pool2d_with_indices(&x, &[-1], None, &[0], &[1], false).map(|r| r.0),
        ),
        (
            "max_pool1d",
            "kernel_size",
            ops::max_pool1d(&flat, &[2, 2], None, &[0], &[1], false),
        ),
        (
            "max_pool1d",
            "input",
            ops::max_pool1d(&x, &[2], None, &[0], &[1], false),
        ),
        (
            "avg_pool2d",
            "divisor_override",
            ops::avg_pool2d(&x, &[2], None, &[0], false, true, Some(0)),
        ),
        (
            "avg_pool2d",
            "padding",
            ops::avg_pool2d(&x, &[3], None, &[2], false, true, None),
        ),
        (
            "avg_pool2d",
            "floating-point",
            ops::avg_pool2d(&ints, &[2], None, &[0], false, true, None),
        ),
        (
            "avg_pool1d",
            "stride",
            ops::avg_pool1d(&flat, &[2], Some(&[-1]), &[0], false, true),
        ),
        (
            "adaptive_avg_pool2d",
            "output_size",
            ops::adaptive_avg_pool2d(&x, &[-1]),
        ),
        (
            "adaptive_avg_pool2d",
            "output_size",
            ops::adaptive_avg_pool2d(&x, &[1, 2, 3]),
        ),
        (
            "adaptive_avg_pool2d",
            "output_size",
            ops::adaptive_avg_pool2d(&x, &[big, big]),
        ),
        // Not overflowing, but its window matrix is over the allocation limit.
        (
            "adaptive_avg_pool2d",
            "output_size",
            ops::adaptive_avg_pool2d(&x, &[1 << 40, 1]),
        ),
        (
            "adaptive_avg_pool2d",
            "input",
            ops::adaptive_avg_pool2d(&flat, &[1]),
        ),
        (
            "adaptive_avg_pool1d",
            "output_size",
            ops::adaptive_avg_pool1d(&flat, &[1, 1]),
        ),
    ];
    for (op, word, result) in calls {
        let err = result.expect_err(op).to_string();
        assert!(err.starts_with(&format!("{op}:")), "{err}");
        assert!(err.contains(word), "{op}: {err} lacks {word}");
    }
}

#[test]
fn huge_kernels_with_matching_padding_cost_what_the_input_does() -> Result<()> {
    // A kernel of 2^62 with padding 2^61 and stride 2^62: one window, the
    // whole input; the kernel visits only the input's positions.
    let x = Tensor::from_shape_vec(&[1, 2, 3], vec![1.0f64, 7.0, 3.0, 4.0, 5.0, 6.0])?;
    let k = 1i64 << 62;
    let (v, i) = ops::max_pool2d_with_indices(&x, &[k], Some(&[k]), &[k / 2], &[1], false)?;
    assert_eq!(values(&v), [7.0]);
    assert_eq!(i.to_array::<i64>()?.into_raw_vec_and_offset().0, [1]);
    let a = ops::avg_pool2d(&x, &[k], Some(&[k]), &[k / 2], false, false, None)?;
    assert_eq!(values(&a), [26.0 / 6.0]);
    Ok(())
}

/// The poolings' kernels split large calls over rayon's pool (by planes,
/// or by rows of a window sum): the split changes no value, so one thread
/// and two give the same bits, forward and for per-example gradients (W12's
/// pooling, a max pooling of 2 at stride 1 after tanh, and average and
/// adaptive poolings over the same activations).
#[cfg(feature = "rayon")]
#[test]
fn pooling_gives_the_same_bits_on_one_thread_and_two() -> Result<()> {
    use crate::common::bits;
    let shape = [64, 8, 14, 14];
    let n: usize = shape.iter().product();
    let values: Vec<f32> = (0..n)
        .map(|i| match i % 97 {
            0 => f32::NAN,
            1 => f32::NEG_INFINITY,
            k => ((k * 31 % 89) as f32 * 0.05).sin().max(-0.5),
        })
        .collect();
    let x = Tensor::from_shape_vec(&shape, values)?;
    let loss = |x: Tensor| -> Result<Tensor> {
        let h = ops::max_pool2d(&ops::tanh(&x)?, &[2], Some(&[1]), &[0], &[1], false)?;
        let a = ops::avg_pool2d(&h, &[3], Some(&[1]), &[1], false, true, None)?;
        let b = ops::adaptive_avg_pool2d(&h, &[5, 3])?;
        ops::add(
            &ops::sum(&ops::mul(&a, &a)?, None, false)?,
            &ops::sum(&b, None, false)?,
        )
    };
    let run = || -> Result<Vec<Vec<u64>>> {
        let (v, i) = ops::max_pool2d_with_indices(&x, &[3, 2], Some(&[1, 2]), &[1], &[1], true)?;
        let a = ops::avg_pool2d(&x, &[3], Some(&[1]), &[1], false, true, None)?;
        let ad = ops::adaptive_avg_pool2d(&x, &[5, 3])?;
        let g = vmap(|x: Tensor| grad(loss).call(&x)).call(&x)?;
        Ok(vec![bits(&v), bits(&i), bits(&a), bits(&ad), bits(&g)])
    };
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool")
            .install(run)
    };
    let (one, two) = (on(1)?, on(2)?);
    assert!(one == two, "one thread and two disagree");
    Ok(())
}
