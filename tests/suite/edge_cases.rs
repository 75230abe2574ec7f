//! Edge cases of the op library (issue 10, classes 1, 3 and 4): integer
//! arguments at the i64 limits, empty dims, infinities and NaN, and integers
//! above 2^53. Each result is compared with PyTorch's documented semantics
//! (named in a comment where it matters) and, under vmap, with the loop over
//! the examples ([`check_vmap`], batch sizes 0, 1 and 3 and every in_dims
//! combination). An error must name the op the user called. Nothing may panic:
//! the calls run under `catch_unwind`, so a panic is reported as a failure
//! with the call that caused it.

use crate::common::no_panic;
use batchrules::batching::{
    align_to_front, logical_rank, physical_dim, physical_new_dim, reduce_dim, shape_arg,
    unsqueeze_logical,
};
use batchrules::testing::check_vmap;
use batchrules::Reduction;
use batchrules::{ops, vmap, DType, Error, Result, Tensor, VmapOutputs};
use ndarray::{ArrayD, IxDyn};

// ---------------------------------------------------------------------------
// Helpers

fn f64t(shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).unwrap()
}

fn i64t(shape: &[usize], values: &[i64]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).unwrap()
}

/// A `shape` tensor of distinct finite f64 values.
fn ramp(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_shape_vec(shape, (0..n).map(|i| i as f64 * 0.5 - 1.0).collect()).unwrap()
}

fn f64s_of(t: &Tensor) -> Vec<f64> {
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

fn i64s_of(t: &Tensor) -> Vec<i64> {
    t.to_array::<i64>().unwrap().iter().copied().collect()
}

/// `a` and `b` agree: equal lengths, NaN where the other is NaN, infinities
/// equal only themselves, finite values within a relative 1e-12.
fn same_floats(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(&p, &q)| {
            if p.is_nan() || q.is_nan() {
                p.is_nan() && q.is_nan()
            } else if p.is_infinite() || q.is_infinite() {
                p == q
            } else {
                (p - q).abs() <= 1e-12 * p.abs().max(q.abs()).max(1.0)
            }
        })
}

/// `err` names `op` first, as the user called it.
fn names(err: &Error, op: &str) {
    assert_eq!(err.op(), Some(op), "{err}");
    assert!(err.to_string().starts_with(&format!("{op}: ")), "{err}");
}

/// `f` on `inputs` matches the loop over examples under vmap (panics are failures).
fn matches_loop<O: VmapOutputs>(what: &str, f: impl Fn(&[Tensor]) -> Result<O>, inputs: &[Tensor]) {
    let cases = no_panic(what, || check_vmap(f, inputs)).unwrap_or_else(|m| panic!("{what}: {m}"));
    assert!(cases > 0, "{what}: no case ran");
}

/// `f(x)` fails naming `op`, dense and under vmap over a batch of 2 copies of
/// `x`, without panicking.
fn errs_naming(op: &str, what: &str, x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) {
    let err = no_panic(what, || f(x)).expect_err(what);
    names(&err, op);
    let batch = x.broadcast_new_dim(0, 2).unwrap();
    let err = no_panic(what, || vmap(|t: Tensor| f(&t)).call(&batch)).expect_err(what);
    names(&err, op);
}

// ---------------------------------------------------------------------------
// Class 1: integer arithmetic on user arguments never overflows

/// PyTorch's `triu`/`tril`: keep the entries with `col - row >= diagonal`
/// (triu) or `col - row <= diagonal` (tril), for any diagonal; computed here
/// in i128 as the reference.
fn triangle_reference(x: &Tensor, diagonal: i64, upper: bool) -> Vec<f64> {
    let shape = x.shape();
    let cols = shape[shape.len() - 1];
    let rows = shape[shape.len() - 2];
    f64s_of(x)
        .into_iter()
        .enumerate()
        .map(|(flat, v)| {
            let (row, col) = ((flat / cols) % rows, flat % cols);
            let offset = col as i128 - row as i128;
            let keep = if upper {
                offset >= i128::from(diagonal)
            } else {
                offset <= i128::from(diagonal)
            };
            if keep {
                v
            } else {
                0.0
            }
        })
        .collect()
}

#[test]
fn triu_and_tril_take_any_diagonal() {
    // Before the fix: `row + diagonal` overflowed (a panic in debug builds; in
    // release `triu(x, i64::MAX)` kept every entry instead of none).
    let x = ramp(&[2, 3, 4]);
    for diagonal in [
        i64::MAX,
        i64::MAX - 1,
        i64::MAX - 2,
        i64::MIN,
        i64::MIN + 1,
        1 << 62,
        -(1 << 62),
        3,
        -2,
    ] {
        for upper in [true, false] {
            let op = if upper { ops::triu } else { ops::tril };
            let what = format!("{}(x, {diagonal})", if upper { "triu" } else { "tril" });
            let got = no_panic(&what, || op(&x, diagonal)).unwrap();
            assert_eq!(
                f64s_of(&got),
                triangle_reference(&x, diagonal, upper),
                "{what}"
            );
            matches_loop(&what, |xs| op(&xs[0], diagonal), std::slice::from_ref(&x));
        }
    }
    // The extremes keep everything or nothing.
    let all = f64s_of(&x);
    let none = vec![0.0; all.len()];
    assert_eq!(f64s_of(&ops::triu(&x, i64::MAX).unwrap()), none);
    assert_eq!(f64s_of(&ops::triu(&x, i64::MIN).unwrap()), all);
    assert_eq!(f64s_of(&ops::tril(&x, i64::MAX).unwrap()), all);
    assert_eq!(f64s_of(&ops::tril(&x, i64::MIN).unwrap()), none);
}

#[test]
fn var_divides_by_max_0_n_minus_correction() {
    // PyTorch (`torch.var`, `correction`): the divisor is max(0, N - correction).
    // [1, 2, 3, 4]: the squares about the mean sum to 5.
    let x = f64t(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let cases: [(i64, f64); 8] = [
        (0, 5.0 / 4.0),
        (1, 5.0 / 3.0),
        (3, 5.0),
        (-1, 1.0),
        // Before the fix, N - correction overflowed here (a panic in debug).
        (i64::MIN, 5.0 / (4.0 + 9_223_372_036_854_775_808.0)),
        (i64::MIN + 1, 5.0 / (4.0 + 9_223_372_036_854_775_807.0)),
        // Before the fix, the divisor was negative here: a negative variance.
        (i64::MAX, f64::INFINITY),
        (7, f64::INFINITY),
    ];
    for (correction, want) in cases {
        let what = format!("var([1, 2, 3, 4], correction={correction})");
        let got = no_panic(&what, || ops::var(&x, None, correction, false)).unwrap();
        assert!(same_floats(&f64s_of(&got), &[want]), "{what}: {got:?}");
        matches_loop(
            &what,
            |xs| ops::var(&xs[0], Some(0), correction, true),
            std::slice::from_ref(&x),
        );
    }
    // N - correction = 0: 5 / 0 = inf; where every value is the mean, 0 / 0 = NaN.
    let got = ops::var(&x, None, 4, false).unwrap();
    assert_eq!(f64s_of(&got), [f64::INFINITY]);
    let flat = f64t(&[3], &[2.0, 2.0, 2.0]);
    assert!(f64s_of(&ops::var(&flat, None, 3, false).unwrap())[0].is_nan());
    // An empty reduction is NaN (PyTorch), whatever the correction.
    let empty = ramp(&[2, 0]);
    for correction in [i64::MIN, 0, 1, i64::MAX] {
        let got = ops::var(&empty, Some(1), correction, false).unwrap();
        assert!(f64s_of(&got).iter().all(|v| v.is_nan()), "{got:?}");
        matches_loop(
            "var of an empty dim",
            |xs| ops::var(&xs[0], Some(1), correction, false),
            std::slice::from_ref(&empty),
        );
    }
}

#[test]
fn integer_arguments_at_the_limits_are_errors_naming_the_op() {
    let x = ramp(&[4, 3]);
    let index = i64t(&[2], &[0, 1]);
    const LIMITS: [i64; 4] = [i64::MIN, i64::MIN + 1, i64::MAX - 1, i64::MAX];
    for v in LIMITS {
        let w = format!("{v}");
        errs_naming("narrow", &w, &x, |t| ops::narrow(t, v, 0, 1));
        errs_naming("narrow", &w, &x, |t| ops::narrow(t, 0, v, 1));
        errs_naming("narrow", &w, &x, |t| ops::narrow(t, 0, 1, v));
        errs_naming("narrow", &w, &x, |t| ops::narrow(t, 0, -1, v));
        errs_naming("reshape", &w, &x, |t| ops::reshape(t, &[v, -1]));
        errs_naming("reshape", &w, &x, |t| ops::reshape(t, &[v, v, 0]));
        errs_naming("expand", &w, &x, |t| ops::expand(t, &[v, 4, 3]));
        errs_naming("expand", &w, &x, |t| ops::expand(t, &[4, v]));
        errs_naming("flatten", &w, &x, |t| ops::flatten(t, v, -1));
        errs_naming("flatten", &w, &x, |t| ops::flatten(t, 0, v));
        errs_naming("permute", &w, &x, |t| ops::permute(t, &[v, 0]));
        errs_naming("transpose", &w, &x, |t| ops::transpose(t, v, 0));
        errs_naming("transpose", &w, &x, |t| ops::transpose(t, 0, v));
        errs_naming("unsqueeze", &w, &x, |t| ops::unsqueeze(t, v));
        errs_naming("squeeze", &w, &x, |t| ops::squeeze(t, Some(v)));
        errs_naming("index_select", &w, &x, |t| ops::index_select(t, v, &index));
        errs_naming("index_select", &w, &x, |t| {
            ops::index_select(t, 0, &i64t(&[2], &[0, v]))
        });
        errs_naming("gather", &w, &x, |t| {
            ops::gather(t, v, &i64t(&[1, 1], &[0]))
        });
        errs_naming("gather", &w, &x, |t| {
            ops::gather(t, 1, &i64t(&[1, 2], &[v, 0]))
        });
        errs_naming("sum", &w, &x, |t| ops::sum(t, Some(v), false));
        errs_naming("argmax", &w, &x, |t| ops::argmax(t, Some(v), true));
        errs_naming("softmax", &w, &x, |t| ops::softmax(t, v));
        errs_naming("logsumexp", &w, &x, |t| ops::logsumexp(t, v, false));
        errs_naming("var", &w, &x, |t| ops::var(t, Some(v), 1, false));
        errs_naming("stack", &w, &x, |t| ops::stack(&[t.clone(), t.clone()], v));
        errs_naming("cat", &w, &x, |t| ops::cat(&[t.clone(), t.clone()], v));
        errs_naming("layer_norm", &w, &x, |t| {
            ops::layer_norm(t, &[v], None, None, 1e-5)
        });
        errs_naming("layer_norm", &w, &x, |t| {
            ops::layer_norm(t, &[v, 3], None, None, 1e-5)
        });
        errs_naming("cross_entropy", &w, &x, |t| {
            ops::cross_entropy(t, &i64t(&[4], &[0, v, 2, 0]), Reduction::Mean)
        });
        for (op, f) in [
            ("zeros", ops::zeros as fn(&[i64], DType) -> Result<Tensor>),
            ("ones", ops::ones),
        ] {
            let err = no_panic(op, || f(&[2, v], DType::F32)).unwrap_err();
            names(&err, op);
        }
        let err = no_panic("full", || ops::full(&[v, 2], 1.0, DType::I64)).unwrap_err();
        names(&err, "full");
    }
    // Sizes whose product overflows, with or without a -1 to infer.
    for shape in [
        &[1i64 << 32, 1 << 32, 1 << 32][..],
        &[1 << 32, 1 << 32, -1],
        &[-1, i64::MAX, 2],
        &[i64::MAX, i64::MAX, 0],
        &[0, -1],
    ] {
        errs_naming("reshape", &format!("{shape:?}"), &x, |t| {
            ops::reshape(t, shape)
        });
    }
}

#[test]
fn arange_rejects_bounds_and_steps_it_cannot_count() {
    for (start, end, step) in [
        (0.0, 5.0, 0.0),
        (0.0, 5.0, -0.0),
        (0.0, 5.0, -1.0),
        (5.0, 0.0, 1.0),
        (f64::NAN, 5.0, 1.0),
        (0.0, f64::NAN, 1.0),
        (0.0, 5.0, f64::NAN),
        (0.0, f64::INFINITY, 1.0),
        (f64::NEG_INFINITY, 0.0, 1.0),
        (0.0, 1.0, f64::INFINITY),
        (-1e308, 1e308, 1.0),
        (0.0, 1.0, 5e-324),
        (0.0, 1e17, 1.0),
        (-1e19, 0.0, 1e18),
    ] {
        let what = format!("arange({start}, {end}, {step})");
        let err = no_panic(&what, || ops::arange(start, end, step, DType::I64)).unwrap_err();
        names(&err, "arange");
    }
    // A step larger than the range gives one element (PyTorch: ceil((end - start) / step)).
    let one = ops::arange(0.0, 1.0, f64::MAX, DType::F64).unwrap();
    assert_eq!(f64s_of(&one), [0.0]);
}

#[test]
fn cat_of_huge_empty_tensors_is_an_error_not_an_overflow() {
    // Tensors with no elements may have huge dims; the sizes along the cat dim
    // sum past usize::MAX here. Before the fix: an overflow panic in debug; in
    // release the size wrapped and cat returned a tensor of shape [0, 0].
    let huge = Tensor::from(ArrayD::<f32>::zeros(IxDyn(&[1 << 62, 0])));
    let four = vec![huge.clone(); 4];
    let err = no_panic("cat", || ops::cat(&four, 0)).unwrap_err();
    names(&err, "cat");
    // The same under vmap: 8 examples of logical shape [2^61, 0] each.
    let batch = Tensor::from(ArrayD::<f32>::zeros(IxDyn(&[2, 1 << 61, 0])));
    let eight = vec![batch; 8];
    let err = no_panic("vmap(cat)", || {
        vmap(|ts: Vec<Tensor>| ops::cat(&ts, 0))
            .in_dims(vec![Some(0i64); 8])
            .call(&eight[..])
    })
    .unwrap_err();
    names(&err, "cat");
}

#[test]
fn batching_helpers_never_underflow_or_wrap() {
    let scalar = Tensor::scalar(1.0f64);
    // A 0-d tensor has no dim to be a batch dim: an error, not a rank of 0.
    let err = no_panic("logical_rank", || logical_rank(&scalar, Some(0))).unwrap_err();
    assert!(
        err.to_string().contains("has no dim to be a batch dim"),
        "{err}"
    );
    assert_eq!(logical_rank(&scalar, None).unwrap(), 0);
    assert!(no_panic("physical_dim", || physical_dim(&scalar, true, 0)).is_err());
    assert!(no_panic("physical_new_dim", || physical_new_dim(&scalar, true, 0)).is_err());
    assert!(no_panic("align_to_front", || align_to_front(&scalar, Some(0), 2)).is_err());
    assert!(no_panic("reduce_dim", || reduce_dim(
        ops::sum,
        &scalar,
        Some(0),
        Some(0),
        false
    ))
    .is_err());
    // A new dim at usize::MAX: an error, not an overflow.
    let v = ramp(&[3, 2]);
    for bdim in [None, Some(1)] {
        assert!(no_panic("unsqueeze_logical", || unsqueeze_logical(
            &v,
            bdim,
            usize::MAX
        ))
        .is_err());
    }
    // Sizes above i64::MAX saturate (an error in any shape op), never wrap to -1.
    assert_eq!(
        shape_arg(Some(usize::MAX), &[2, usize::MAX]),
        vec![i64::MAX, 2, i64::MAX]
    );
    let err = ops::reshape(&v, &shape_arg(None, &[usize::MAX])).unwrap_err();
    names(&err, "reshape");
}

// ---------------------------------------------------------------------------
// Class 3: right answers at the edges

#[test]
fn logsumexp_of_infinities_follows_pytorch() {
    // PyTorch's logsumexp shifts by the maximum unless it is infinite
    // (`maxes.masked_fill_(maxes.abs() == inf, 0)`): all -inf gives -inf, a +inf
    // gives +inf, a NaN gives NaN. Before the fix: NaN for the first two (inf - inf).
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let rows = f64t(
        &[6, 3],
        &[
            -inf, -inf, -inf, // -inf
            inf, 1.0, -2.0, // +inf
            inf, -inf, 0.0, // +inf
            nan, 1.0, inf, // NaN
            -inf, 0.0, -inf, // log(1) = 0
            0.0, 0.0, 0.0, // log(3)
        ],
    );
    let want = [-inf, inf, inf, nan, 0.0, 3f64.ln()];
    for keepdim in [false, true] {
        let got = ops::logsumexp(&rows, -1, keepdim).unwrap();
        let shape: &[usize] = if keepdim { &[6, 1] } else { &[6] };
        assert_eq!(got.shape(), shape);
        assert!(same_floats(&f64s_of(&got), &want), "{got:?}");
        matches_loop(
            "logsumexp over rows of infinities",
            |xs| ops::logsumexp(&xs[0], -1, keepdim),
            std::slice::from_ref(&rows),
        );
    }
    // f32 too.
    let r32 = Tensor::from_shape_vec(&[2], vec![f32::NEG_INFINITY; 2]).unwrap();
    let got = ops::logsumexp(&r32, 0, false)
        .unwrap()
        .to_array::<f32>()
        .unwrap();
    assert_eq!(got[[]], f32::NEG_INFINITY);
    // An empty dim: log of an empty sum = -inf (PyTorch). Before: an error.
    let empty = ramp(&[2, 0]);
    for keepdim in [false, true] {
        let got = ops::logsumexp(&empty, 1, keepdim).unwrap();
        assert_eq!(f64s_of(&got), [-inf, -inf]);
        matches_loop(
            "logsumexp over an empty dim",
            |xs| ops::logsumexp(&xs[0], 1, keepdim),
            std::slice::from_ref(&empty),
        );
    }
    // Reducing the non-empty dim of an empty tensor: an empty result.
    let got = ops::logsumexp(&ramp(&[0, 3]), 1, false).unwrap();
    assert_eq!(got.shape(), &[0]);
}

#[test]
fn clamp_of_i64_compares_exactly() {
    // 2^53 + 1 is not an f64: before the fix it compared equal to 2^53 and was
    // not clamped by max = 2^53.
    let two_53: i64 = 1 << 53;
    let x = i64t(
        &[6],
        &[
            two_53 - 1,
            two_53,
            two_53 + 1,
            i64::MAX,
            i64::MIN,
            (1 << 62) + 1,
        ],
    );
    let b = two_53 as f64;
    let got = ops::clamp(&x, None, Some(b)).unwrap();
    assert_eq!(
        i64s_of(&got),
        [two_53 - 1, two_53, two_53, two_53, i64::MIN, two_53]
    );
    let got = ops::clamp(&x, Some(b), None).unwrap();
    assert_eq!(
        i64s_of(&got),
        [two_53, two_53, two_53 + 1, i64::MAX, two_53, (1 << 62) + 1]
    );
    // Bounds beyond the i64 range saturate: no effect, or everything clamped.
    let got = ops::clamp(&x, Some(-1e19), Some(1e19)).unwrap();
    assert_eq!(i64s_of(&got), i64s_of(&x));
    let got = ops::clamp(&x, Some(1e19), None).unwrap();
    assert_eq!(i64s_of(&got), [i64::MAX; 6]);
    let got = ops::clamp(&x, None, Some(f64::NEG_INFINITY)).unwrap();
    assert_eq!(i64s_of(&got), [i64::MIN; 6]);
    for (lo, hi) in [
        (None, Some(b)),
        (Some(b), None),
        (Some(-1e19), Some(1e19)),
        (Some(2.0f64.powi(62)), Some(2.0f64.powi(62))),
    ] {
        matches_loop(
            "clamp of large i64",
            |xs| ops::clamp(&xs[0], lo, hi),
            std::slice::from_ref(&x),
        );
    }
    // A fractional bound is rounded inward, keeping the dtype: the integers
    // within the bounds. (PyTorch promotes an int tensor clamped by a float to
    // a float tensor instead; here the dtype is kept, as the op table says.)
    let small = i64t(&[5], &[0, 1, 2, 3, 4]);
    let got = ops::clamp(&small, Some(1.5), Some(3.5)).unwrap();
    assert_eq!(i64s_of(&got), [2, 2, 2, 3, 3]);
    let got = ops::clamp(&small, Some(-0.5), Some(2.5)).unwrap();
    assert_eq!(i64s_of(&got), [0, 1, 2, 2, 2]);
    // No integer lies in [-0.5, -0.5]: the rounded bounds cross (0 > -1), and
    // max wins.
    let got = ops::clamp(&small, Some(-0.5), Some(-0.5)).unwrap();
    assert_eq!(i64s_of(&got), [-1; 5]);
    // Crossed bounds: max wins (PyTorch: "If min is greater than max ...
    // sets all elements in input to the value of max").
    let got = ops::clamp(&small, Some(3.0), Some(1.0)).unwrap();
    assert_eq!(i64s_of(&got), [1; 5]);
    // A NaN bound cannot be applied to integers: an error naming clamp.
    for (lo, hi) in [(Some(f64::NAN), None), (Some(0.0), Some(f64::NAN))] {
        errs_naming("clamp", "a NaN bound on i64", &small, |t| {
            ops::clamp(t, lo, hi)
        });
    }
    // For floats a NaN bound gives NaN, as in PyTorch (since 1.12: scalar
    // bounds propagate NaN).
    let got = ops::clamp(&ramp(&[3]), Some(f64::NAN), None).unwrap();
    assert!(f64s_of(&got).iter().all(|v| v.is_nan()));
}

#[test]
fn reductions_over_empty_dims_follow_pytorch() {
    let empty = ramp(&[2, 0]);
    // sum: 0; mean and var: NaN; amax, amin, argmax: an error (PyTorch:
    // "Expected reduction dim 1 to have non-zero size").
    let sum = ops::sum(&empty, Some(1), false).unwrap();
    assert_eq!(f64s_of(&sum), [0.0, 0.0]);
    assert_eq!(f64s_of(&ops::sum(&empty, None, false).unwrap()), [0.0]);
    let mean = ops::mean(&empty, Some(1), true).unwrap();
    assert_eq!(mean.shape(), &[2, 1]);
    assert!(f64s_of(&mean).iter().all(|v| v.is_nan()));
    for (op, r) in [
        ("amax", ops::amax(&empty, Some(1), false)),
        ("amin", ops::amin(&empty, None, false)),
        ("argmax", ops::argmax(&empty, Some(-1), true)),
    ] {
        names(&r.unwrap_err(), op);
    }
    // Reducing the non-empty dim of an empty tensor is fine.
    assert_eq!(ops::amax(&empty, Some(0), false).unwrap().shape(), &[0]);
    assert_eq!(ops::argmax(&empty, Some(0), false).unwrap().shape(), &[0]);
    for dim in [Some(0i64), Some(1), None] {
        matches_loop(
            "sum of empty",
            |xs| ops::sum(&xs[0], dim, false),
            std::slice::from_ref(&empty),
        );
        matches_loop(
            "mean of empty",
            |xs| ops::mean(&xs[0], dim, true),
            std::slice::from_ref(&empty),
        );
    }
    // Losses with no elements: the mean is NaN, the sum 0 (PyTorch).
    let none = ramp(&[0]);
    assert!(f64s_of(&ops::mse_loss(&none, &none, Reduction::Mean).unwrap())[0].is_nan());
    assert_eq!(
        f64s_of(&ops::mse_loss(&none, &none, Reduction::Sum).unwrap()),
        [0.0]
    );
    let logits = ramp(&[0, 3]);
    let target = i64t(&[0], &[]);
    assert!(f64s_of(&ops::cross_entropy(&logits, &target, Reduction::Mean).unwrap())[0].is_nan());
    assert_eq!(
        f64s_of(&ops::cross_entropy(&logits, &target, Reduction::Sum).unwrap()),
        [0.0]
    );
    assert_eq!(
        ops::cross_entropy(&logits, &target, Reduction::None)
            .unwrap()
            .shape(),
        &[0]
    );
    matches_loop(
        "cross_entropy of no rows",
        |xs| ops::cross_entropy(&xs[0], &xs[1], Reduction::Mean),
        &[logits.clone(), target.clone()],
    );
    // layer_norm of no rows.
    let ln = ops::layer_norm(&ramp(&[0, 4]), &[4], None, None, 1e-5).unwrap();
    assert_eq!(ln.shape(), &[0, 4]);
    // Matrix products with an empty inner dim are zeros (PyTorch, NumPy).
    let p = ops::matmul(&ramp(&[2, 0]), &ramp(&[0, 3])).unwrap();
    assert_eq!(p.shape(), &[2, 3]);
    assert_eq!(f64s_of(&p), [0.0; 6]);
    assert_eq!(f64s_of(&ops::dot(&ramp(&[0]), &ramp(&[0])).unwrap()), [0.0]);
    matches_loop(
        "matmul over an empty inner dim",
        |xs| ops::matmul(&xs[0], &xs[1]),
        &[ramp(&[2, 0]), ramp(&[0, 3])],
    );
}

#[test]
fn reductions_of_infinities_nan_and_large_integers_follow_pytorch() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let x = f64t(
        &[4, 3],
        &[
            -inf, -inf, -inf, //
            inf, 1.0, -inf, //
            2.0, nan, inf, //
            1.0, 3.0, 3.0,
        ],
    );
    // sum: inf + -inf = NaN; amax/amin: NaN wins; argmax: the first NaN, else
    // the first maximum (PyTorch treats NaN as the maximum).
    assert!(same_floats(
        &f64s_of(&ops::sum(&x, Some(1), false).unwrap()),
        &[-inf, nan, nan, 7.0]
    ));
    assert!(same_floats(
        &f64s_of(&ops::amax(&x, Some(1), false).unwrap()),
        &[-inf, inf, nan, 3.0]
    ));
    assert!(same_floats(
        &f64s_of(&ops::amin(&x, Some(1), false).unwrap()),
        &[-inf, -inf, nan, 1.0]
    ));
    assert_eq!(
        i64s_of(&ops::argmax(&x, Some(1), false).unwrap()),
        [0, 0, 1, 1]
    );
    assert_eq!(i64s_of(&ops::argmax(&x, None, false).unwrap()), [7]);
    assert!(same_floats(
        &f64s_of(&ops::mean(&x, Some(1), false).unwrap()),
        &[-inf, nan, nan, 7.0 / 3.0]
    ));
    // softmax and log_softmax of a row whose maximum is infinite are NaN in
    // PyTorch too (its kernels compute x - max); a finite row is unaffected.
    let sm = f64s_of(&ops::softmax(&x, 1).unwrap());
    assert!(sm[..9].iter().all(|v| v.is_nan()), "{sm:?}");
    assert!((sm[9..].iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let lsm = f64s_of(&ops::log_softmax(&x, 1).unwrap());
    assert!(lsm[..9].iter().all(|v| v.is_nan()), "{lsm:?}");
    for dim in [None, Some(0i64), Some(1)] {
        for (name, op) in [
            (
                "sum",
                ops::sum as fn(&Tensor, Option<i64>, bool) -> Result<Tensor>,
            ),
            ("amax", ops::amax),
            ("amin", ops::amin),
            ("argmax", ops::argmax),
            ("mean", ops::mean),
        ] {
            matches_loop(name, |xs| op(&xs[0], dim, false), std::slice::from_ref(&x));
        }
    }
    // i64 sums wrap on overflow (two's complement), as PyTorch's do in practice;
    // amax, amin and argmax are exact above 2^53.
    let big = i64t(
        &[2, 3],
        &[i64::MAX, 1, (1 << 53) + 1, i64::MIN, -1, 1 << 53],
    );
    assert_eq!(
        i64s_of(&ops::sum(&big, Some(1), false).unwrap()),
        [
            i64::MIN.wrapping_add((1 << 53) + 1),
            i64::MAX.wrapping_add(1 << 53)
        ]
    );
    assert_eq!(
        i64s_of(&ops::sum(&big, None, false).unwrap()),
        [big_sum(&i64s_of(&big))]
    );
    let near = i64t(&[2], &[(1 << 53) + 1, 1 << 53]);
    assert_eq!(i64s_of(&ops::argmax(&near, None, false).unwrap()), [0]);
    assert_eq!(
        i64s_of(&ops::amax(&near, None, false).unwrap()),
        [(1 << 53) + 1]
    );
    assert_eq!(i64s_of(&ops::amin(&near, None, false).unwrap()), [1 << 53]);
    for dim in [None, Some(0i64), Some(1)] {
        matches_loop(
            "sum of large i64",
            |xs| ops::sum(&xs[0], dim, true),
            std::slice::from_ref(&big),
        );
        matches_loop(
            "argmax of large i64",
            |xs| ops::argmax(&xs[0], dim, true),
            std::slice::from_ref(&big),
        );
    }
}

/// The wrapping sum of `v`.
fn big_sum(v: &[i64]) -> i64 {
    v.iter().fold(0i64, |a, &b| a.wrapping_add(b))
}

#[test]
fn argmax_of_an_empty_batch_is_empty() {
    // The loop over no examples gives no results: an empty batch of indices.
    let xs = ramp(&[0, 2, 3]);
    for dim in [None, Some(0i64), Some(-1)] {
        let got = vmap(|x: Tensor| ops::argmax(&x, dim, false))
            .call(&xs)
            .unwrap();
        let dense = ops::argmax(&ramp(&[2, 3]), dim, false).unwrap();
        assert_eq!(got.shape(), [&[0], dense.shape()].concat().as_slice());
    }
}

// ---------------------------------------------------------------------------
// Class 4: errors name the op called; softmax over an empty dim

#[test]
fn softmax_and_log_softmax_over_an_empty_dim_are_empty() {
    // PyTorch returns an empty tensor of the input's shape. Before the fix:
    // "amax: cannot reduce over dim 1 of size 0".
    for shape in [&[2usize, 0][..], &[0], &[0, 3], &[3, 0, 2]] {
        let x = ramp(shape);
        for dim in (0..shape.len() as i64).chain([-1]) {
            for (name, op) in [
                (
                    "softmax",
                    ops::softmax as fn(&Tensor, i64) -> Result<Tensor>,
                ),
                ("log_softmax", ops::log_softmax),
            ] {
                let what = format!("{name}({shape:?}, {dim})");
                let y = no_panic(&what, || op(&x, dim)).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(y.shape(), shape, "{what}");
                assert_eq!(y.dtype(), DType::F64, "{what}");
                matches_loop(&what, |xs| op(&xs[0], dim), std::slice::from_ref(&x));
            }
        }
    }
    // Under vmap, a batch of examples with an empty dim.
    let xs = ramp(&[4, 2, 0]);
    let y = vmap(|x: Tensor| ops::softmax(&x, -1)).call(&xs).unwrap();
    assert_eq!(y.shape(), &[4, 2, 0]);
    // f32 keeps its dtype.
    let x32 = Tensor::from_shape_vec::<f32>(&[2, 0], Vec::new()).unwrap();
    assert_eq!(ops::log_softmax(&x32, 1).unwrap().dtype(), DType::F32);
}

#[test]
fn errors_raised_inside_library_ops_name_the_op_called() {
    let logits = ramp(&[2, 3]);
    // A class index out of range, found by gather inside cross_entropy.
    for target in [i64t(&[2], &[0, 3]), i64t(&[2], &[i64::MIN, 0])] {
        let err = ops::cross_entropy(&logits, &target, Reduction::Mean).unwrap_err();
        names(&err, "cross_entropy");
        let batch = (
            logits.broadcast_new_dim(0, 2).unwrap(),
            target.broadcast_new_dim(0, 2).unwrap(),
        );
        let err = vmap(|(l, t): (Tensor, Tensor)| ops::cross_entropy(&l, &t, Reduction::Mean))
            .call((&batch.0, &batch.1))
            .unwrap_err();
        names(&err, "cross_entropy");
    }
    // index_select's rule calls gather when both are batched: the error names
    // index_select.
    let x = ramp(&[3, 4]).broadcast_new_dim(0, 2).unwrap();
    let index = i64t(&[2, 2], &[0, 1, 2, 9]);
    let err = vmap(|(x, i): (Tensor, Tensor)| ops::index_select(&x, 0, &i))
        .call((&x, &index))
        .unwrap_err();
    names(&err, "index_select");
    // Once per message: the dispatcher adds the op name, the kernel does not.
    let err = ops::gather(&ramp(&[3]), 0, &i64t(&[1], &[5])).unwrap_err();
    assert!(!err.to_string().starts_with("gather: gather:"), "{err}");
}

/// Values recorded from PyTorch by `scripts/reference/record_torch.py`.
fn torch_reference() -> serde_json::Value {
    serde_json::from_str(include_str!("../reference/torch_edge_values.json"))
        .expect("tests/reference/torch_edge_values.json is JSON")
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

#[test]
fn bernoulli_of_p_outside_zero_one_or_nan_draws_as_documented() {
    // PyTorch raises an error for these (recorded); the op table's doc says
    // what batchrules draws instead: below 0 and NaN draw 0, above 1 draws 1.
    let reference = torch_reference();
    for case in ["nan", "below_zero", "above_one"] {
        let said = reference["bernoulli"][case].as_str().unwrap();
        assert!(
            said.starts_with("error: "),
            "torch's bernoulli, {case}: {said}"
        );
    }
    let p = Tensor::from(ndarray::array![f64::NAN, -0.5, 1.5, f64::NAN, 2.0].into_dyn());
    for seed in 0..20 {
        let got = ops::bernoulli(&p, seed).unwrap().to_array::<f64>().unwrap();
        assert_eq!(
            got.into_raw_vec_and_offset().0,
            [0.0, 0.0, 1.0, 0.0, 1.0],
            "seed {seed}"
        );
    }
    // Under vmap, each example's NaN draws 0 as well.
    let rows = Tensor::from(ndarray::array![[f64::NAN, 1.0], [0.0, f64::NAN]].into_dyn());
    let got = vmap(|p: Tensor| ops::bernoulli(&p, 5))
        .randomness(batchrules::Randomness::Different)
        .call(&rows)
        .unwrap();
    let got = got.to_array::<f64>().unwrap().into_raw_vec_and_offset().0;
    assert_eq!(got, [0.0, 1.0, 0.0, 0.0]);
}

#[test]
fn clamp_derivatives_match_torch_at_and_around_the_bounds() {
    // torch 2.15's derivative of clamp with scalar bounds is 0 at exactly a
    // bound, in grad, jvp and backward alike; with one bound, and crossed.
    let reference = torch_reference();
    let x = Tensor::from(ndarray::Array1::from(floats(&reference["clamp_x"])).into_dyn());
    let ones = ops::ones(&[x.shape()[0] as i64], DType::F64).unwrap();
    let (lo, hi) = (
        reference["clamp_min"].as_f64().unwrap(),
        reference["clamp_max"].as_f64().unwrap(),
    );
    let values = |t: Tensor| t.to_array::<f64>().unwrap().into_raw_vec_and_offset().0;
    for (name, min, max) in [
        ("", Some(lo), Some(hi)),
        ("_min_only", Some(lo), None),
        ("_max_only", None, Some(hi)),
        ("_crossed", Some(hi), Some(lo)),
    ] {
        let (grad_key, jvp_key) = if name.is_empty() {
            ("clamp_grad_func".to_string(), "clamp_jvp_ones".to_string())
        } else {
            (format!("clamp_grad{name}"), format!("clamp_jvp{name}"))
        };
        let g = batchrules::grad(|x: Tensor| ops::sum(&ops::clamp(&x, min, max)?, None, false))
            .call(&x)
            .unwrap();
        assert_eq!(values(g), floats(&reference[&grad_key]), "{grad_key}");
        let (_, t) = batchrules::jvp(|x: Tensor| ops::clamp(&x, min, max), &x, &ones).unwrap();
        assert_eq!(values(t), floats(&reference[&jvp_key]), "{jvp_key}");
    }
    // `.backward()` agrees with torch.func.grad there.
    assert_eq!(
        floats(&reference["clamp_grad_backward"]),
        floats(&reference["clamp_grad_func"])
    );
}
