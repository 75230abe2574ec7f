//! `batchrules::owned`: pointwise ops given their operand by value write into
//! its buffer exactly when nobody else holds it, give the results of their
//! `ops` functions in every case (layouts, dtypes, broadcasting, under vmap
//! and grad), and fail as those do.

use crate::common;

use batchrules::rules::Data;
use batchrules::{grad, ops, owned, vmap, Result, Tensor};
use common::{assert_close, t64};
use ndarray::{ArcArray, ArrayD, IxDyn};

type Unary = (
    &'static str,
    fn(Tensor) -> Result<Tensor>,
    fn(&Tensor) -> Result<Tensor>,
);
type Binary = (
    &'static str,
    fn(Tensor, &Tensor) -> Result<Tensor>,
    fn(&Tensor, &Tensor) -> Result<Tensor>,
);

const UNARY: &[Unary] = &[
    ("neg", owned::neg, ops::neg),
    ("abs", owned::abs, ops::abs),
    ("relu", owned::relu, ops::relu),
    ("exp", owned::exp, ops::exp),
    ("log", owned::log, ops::log),
    ("sqrt", owned::sqrt, ops::sqrt),
    ("sin", owned::sin, ops::sin),
    ("cos", owned::cos, ops::cos),
    ("tanh", owned::tanh, ops::tanh),
    ("sigmoid", owned::sigmoid, ops::sigmoid),
];

const BINARY: &[Binary] = &[
    ("add", owned::add, ops::add),
    ("sub", owned::sub, ops::sub),
    ("mul", owned::mul, ops::mul),
    ("div", owned::div, ops::div),
    ("pow", owned::pow, ops::pow),
    ("maximum", owned::maximum, ops::maximum),
    ("minimum", owned::minimum, ops::minimum),
];

/// The address of a tensor's first element.
fn ptr(t: &Tensor) -> usize {
    match t.data().unwrap() {
        Data::F32(a) => a.as_ptr() as usize,
        Data::F64(a) => a.as_ptr() as usize,
        Data::I64(a) => a.as_ptr() as usize,
        Data::Bool(a) => a.as_ptr() as usize,
    }
}

/// Positive values (so `log`, `sqrt` and `pow` are defined), in a fresh buffer.
fn positive(shape: &[usize], seed: u64) -> Tensor {
    ops::add(
        &ops::abs(&t64(shape, seed)).unwrap(),
        &Tensor::scalar(0.5f64),
    )
    .unwrap()
}

fn f32s(t: &Tensor) -> Tensor {
    ops::to_dtype(t, batchrules::DType::F32).unwrap()
}

fn i64s(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 23 - 11).collect();
    Tensor::from_shape_vec(shape, v).unwrap()
}

/// Equal results, elementwise (NaN equal to NaN), dtypes and shapes too.
fn assert_same(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let (g, w) = (
        ops::to_dtype(got, batchrules::DType::F64).unwrap(),
        ops::to_dtype(want, batchrules::DType::F64).unwrap(),
    );
    for (a, b) in g
        .to_array::<f64>()
        .unwrap()
        .iter()
        .zip(w.to_array::<f64>().unwrap().iter())
    {
        assert!(a == b || (a.is_nan() && b.is_nan()), "{what}: {a} vs {b}");
    }
}

#[test]
fn unary_ops_write_into_a_buffer_nobody_else_holds() {
    for &(name, by_value, by_ref) in UNARY {
        for x in [positive(&[37, 5], 1), f32s(&positive(&[4, 300], 2))] {
            let want = by_ref(&x).unwrap();
            let fresh = ops::mul(&x, &Tensor::scalar(1.0f32)).unwrap(); // its own buffer
            let at = ptr(&fresh);
            let got = by_value(fresh).unwrap();
            assert_eq!(ptr(&got), at, "{name}: the result is written in place");
            assert_same(&got, &want, name);
        }
    }
}

#[test]
fn a_held_operand_is_never_written() {
    for &(name, by_value, by_ref) in UNARY {
        let x = positive(&[6, 7], 3);
        let before = x.to_array::<f64>().unwrap();
        // Another handle of the same tensor.
        let got = by_value(x.clone()).unwrap();
        assert_ne!(ptr(&got), ptr(&x), "{name}: a new buffer");
        assert_eq!(
            x.to_array::<f64>().unwrap(),
            before,
            "{name}: the clone is unchanged"
        );
        assert_same(&got, &by_ref(&x).unwrap(), name);

        // The caller's ArcArray shares the tensor's buffer.
        let shared: ArcArray<f64, IxDyn> = before.clone().into_shared();
        let t = Tensor::from_data(Data::F64(shared.clone()));
        let got = by_value(t).unwrap();
        assert_eq!(
            shared.to_owned(),
            before,
            "{name}: the shared array is unchanged"
        );
        assert_same(&got, &by_ref(&x).unwrap(), name);

        // A view of another tensor's data (a transpose) shares its buffer.
        let view = ops::transpose(&x, 0, 1).unwrap();
        let got = by_value(view).unwrap();
        assert_eq!(
            x.to_array::<f64>().unwrap(),
            before,
            "{name}: the viewed tensor is unchanged"
        );
        assert_same(
            &got,
            &by_ref(&ops::transpose(&x, 0, 1).unwrap()).unwrap(),
            name,
        );
    }
}

#[test]
fn unary_ops_in_place_on_other_layouts_and_dtypes() {
    for &(name, by_value, by_ref) in UNARY {
        // A transposed tensor that holds its buffer alone: not contiguous in
        // the standard order, written in place all the same.
        let t = ops::transpose(&positive(&[5, 9], 4), 0, 1).unwrap();
        let want = by_ref(&t).unwrap();
        assert_same(&by_value(t).unwrap(), &want, name);

        // Empty and 0-d tensors.
        for x in [
            Tensor::from_shape_vec::<f32>(&[0, 3], vec![]).unwrap(),
            Tensor::scalar(0.25f64),
        ] {
            let want = by_ref(&x).unwrap();
            assert_same(&by_value(x).unwrap(), &want, name);
        }
    }
    // The ops defined on integers.
    for &(name, by_value, by_ref) in &UNARY[..3] {
        let x = i64s(&[4, 6]);
        let want = by_ref(&x).unwrap();
        let fresh = ops::add(&x, &Tensor::scalar(0i64)).unwrap();
        let at = ptr(&fresh);
        let got = by_value(fresh).unwrap();
        assert_eq!(ptr(&got), at, "{name}: i64 in place");
        assert_same(&got, &want, name);
    }
}

#[test]
fn binary_ops_write_into_the_first_operand_when_the_result_fits_it() {
    let a_shape = [6, 8];
    // Same shape, a row (a bias), a column, a 0-d tensor, and f32 operands
    // cast to the first one's f64.
    let seconds = [
        positive(&[6, 8], 11),
        positive(&[8], 12),
        positive(&[6, 1], 13),
        positive(&[], 14),
        f32s(&positive(&[8], 15)),
        ops::transpose(&positive(&[8, 6], 16), 0, 1).unwrap(),
    ];
    for &(name, by_value, by_ref) in BINARY {
        for (k, b) in seconds.iter().enumerate() {
            let a = positive(&a_shape, 10);
            let want = by_ref(&a, b).unwrap();
            let at = ptr(&a);
            let got = by_value(a, b).unwrap();
            assert_eq!(ptr(&got), at, "{name} with second operand {k}: in place");
            assert_same(&got, &want, &format!("{name} with second operand {k}"));
        }
    }
}

#[test]
fn binary_ops_allocate_when_the_result_does_not_fit_the_first_operand() {
    for &(name, by_value, by_ref) in BINARY {
        // The result is larger than `a` (broadcast) ...
        let (a, b) = (positive(&[8], 20), positive(&[3, 8], 21));
        let want = by_ref(&a, &b).unwrap();
        let got = by_value(a, &b).unwrap();
        assert_same(&got, &want, &format!("{name}: broadcast to a larger shape"));

        // ... or of another dtype (f32 with f64 computes in f64; i64 with
        // f32 in f32).
        let (a, b) = (f32s(&positive(&[4, 5], 22)), positive(&[4, 5], 23));
        let want = by_ref(&a, &b).unwrap();
        assert_same(
            &by_value(a, &b).unwrap(),
            &want,
            &format!("{name}: f32 with f64"),
        );
        let (a, b) = (i64s(&[4, 5]), f32s(&positive(&[5], 24)));
        let want = by_ref(&a, &b).unwrap();
        assert_same(
            &by_value(a, &b).unwrap(),
            &want,
            &format!("{name}: i64 with f32"),
        );

        // The second operand is never written.
        let (a, b) = (positive(&[4, 5], 25), positive(&[4, 5], 26));
        let before = b.to_array::<f64>().unwrap();
        by_value(a, &b).unwrap();
        assert_eq!(
            b.to_array::<f64>().unwrap(),
            before,
            "{name}: b is unchanged"
        );
    }
}

#[test]
fn errors_name_the_op_and_match_the_borrowed_ones() {
    let flags = Tensor::from(ArrayD::from_elem(IxDyn(&[3]), true));
    for &(name, by_value, by_ref) in &UNARY[3..] {
        let err = by_value(flags.clone()).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{name}:")), "{err}");
        assert_eq!(err, by_ref(&flags).unwrap_err().to_string());
    }
    for &(name, by_value, by_ref) in BINARY {
        let (a, b) = (positive(&[3, 4], 1), positive(&[5], 2));
        let want = by_ref(&a, &b).unwrap_err().to_string();
        let err = by_value(a, &b).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{name}:")), "{err}");
        assert_eq!(err, want);
    }
}

#[test]
fn escaped_tensors_are_errors() {
    let escaped = std::cell::RefCell::new(None);
    vmap(|x: Tensor| {
        *escaped.borrow_mut() = Some(x.clone());
        ops::exp(&x)
    })
    .call(&positive(&[3, 2], 5))
    .unwrap();
    let escaped = escaped.into_inner().unwrap();
    let err = owned::relu(escaped.clone()).unwrap_err().to_string();
    assert!(err.starts_with("relu:"), "{err}");
    let err = owned::add(escaped, &positive(&[2], 6))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("add:"), "{err}");
}

#[test]
fn under_vmap_the_results_are_the_loops() {
    let x = positive(&[7, 3, 4], 30);
    let bias = positive(&[4], 31);
    // The function's argument and temporaries are given by value.
    let f_owned = |x: Tensor| -> Result<Tensor> {
        let h = owned::add(owned::exp(x)?, &bias)?;
        owned::sigmoid(owned::relu(owned::neg(h)?)?)
    };
    let f_ops = |x: Tensor| -> Result<Tensor> {
        ops::sigmoid(&ops::relu(&ops::neg(&ops::add(&ops::exp(&x)?, &bias)?)?)?)
    };
    let got = vmap(f_owned).call(&x).unwrap();
    assert_same(&got, &vmap(f_ops).call(&x).unwrap(), "vmap");
    // The input, which the vmap call wraps, is unchanged.
    assert_close(&x, &positive(&[7, 3, 4], 30), 0.0);
    // Batched on dim 1, and nested.
    let got = vmap(f_owned)
        .in_dims(1)
        .call(&ops::transpose(&x, 0, 1).unwrap());
    let want = vmap(f_ops)
        .in_dims(1)
        .call(&ops::transpose(&x, 0, 1).unwrap());
    assert_same(&got.unwrap(), &want.unwrap(), "vmap on dim 1");
    let got = vmap(|row: Tensor| vmap(f_owned).call(&row))
        .call(&x)
        .unwrap();
    assert_same(&got, &vmap(f_ops).call(&x).unwrap(), "nested vmap");
}

/// One case of a binary op under vmap: the first operand (batched on
/// `x_dim`), the second, and the second's in_dim (`None`: not batched).
struct VmapCase {
    what: &'static str,
    x: Tensor,
    x_dim: usize,
    b: Tensor,
    b_dim: Option<usize>,
}

/// What a case shows, x's shape and in_dim, b's shape and in_dim (`None`:
/// not batched).
type ShapeCase = (
    &'static str,
    &'static [usize],
    usize,
    &'static [usize],
    Option<usize>,
);

/// The f64 cases of [`vmap_cases`].
const VMAP_SHAPES: &[ShapeCase] = &[
    ("b not batched, a row", &[2, 3, 4], 0, &[4], None),
    ("b not batched, same rank", &[2, 3, 4], 0, &[3, 4], None),
    ("b not batched, a scalar", &[2, 3, 4], 0, &[], None),
    // b has a higher rank than an example of x, and the batch size is b's
    // first dim: broadcasting the physical tensors would be wrong.
    ("b not batched, higher rank", &[2, 4], 0, &[2, 4], None),
    (
        "b batched on 0, same rank",
        &[2, 3, 4],
        0,
        &[2, 3, 4],
        Some(0),
    ),
    (
        "b batched on 0, lower rank",
        &[2, 3, 4],
        0,
        &[2, 4],
        Some(0),
    ),
    ("b batched on 1", &[2, 3, 4], 0, &[3, 2, 4], Some(1)),
    ("x batched on 1", &[3, 2, 4], 1, &[4], None),
    (
        "x batched on 1, b of its rank",
        &[3, 2, 4],
        1,
        &[3, 4],
        None,
    ),
    ("b batched, x broadcast", &[2, 1, 4], 0, &[2, 3, 4], Some(0)),
];

fn vmap_cases() -> Vec<VmapCase> {
    let mut cases: Vec<VmapCase> = VMAP_SHAPES
        .iter()
        .zip(30u64..)
        .map(|(&(what, x, x_dim, b, b_dim), seed)| VmapCase {
            what,
            x: positive(x, 2 * seed),
            x_dim,
            b: positive(b, 2 * seed + 1),
            b_dim,
        })
        .collect();
    // Other dtypes: promoted (a new buffer) and not.
    let f32_x = f32s(&positive(&[2, 3, 4], 77));
    cases.extend([
        VmapCase {
            what: "f32 x, f64 b",
            x: f32_x.clone(),
            x_dim: 0,
            b: positive(&[4], 78),
            b_dim: None,
        },
        VmapCase {
            what: "f32 x, f32 b",
            x: f32_x,
            x_dim: 0,
            b: f32s(&positive(&[2, 3, 4], 79)),
            b_dim: Some(0),
        },
        VmapCase {
            what: "i64 x, i64 b",
            x: i64s(&[2, 3, 4]),
            x_dim: 0,
            b: i64s(&[3, 4]),
            b_dim: None,
        },
    ]);
    cases
}

#[test]
fn binary_ops_under_vmap_match_the_borrowed_ones() {
    for &(name, f_owned, f_ops) in BINARY {
        for c in vmap_cases() {
            if name == "pow" && c.x.dtype() == batchrules::DType::I64 {
                continue; // negative i64 exponents are errors, tested elsewhere
            }
            let what = format!("{name}, {}", c.what);
            // The first operand is a temporary the function made (`-(-x)`,
            // which keeps x's batch dim), so the owned call may write into it.
            let got = vmap(|(x, b): (Tensor, Tensor)| f_owned(ops::neg(&ops::neg(&x)?)?, &b))
                .in_dims([Some(c.x_dim), c.b_dim])
                .call((&c.x, &c.b));
            let want = vmap(|(x, b): (Tensor, Tensor)| f_ops(&ops::neg(&ops::neg(&x)?)?, &b))
                .in_dims([Some(c.x_dim), c.b_dim])
                .call((&c.x, &c.b));
            match (got, want) {
                (Ok(g), Ok(w)) => assert_same(&g, &w, &what),
                (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string(), "{what}"),
                (g, w) => panic!("{what}: owned {g:?}, borrowed {w:?}"),
            }
        }
    }
}

#[test]
fn binary_ops_under_nested_vmap_match_the_borrowed_ones() {
    // The outer level batches b, the inner level x: at the inner level b is
    // not batched (its batch dim belongs to the level below).
    let xs = positive(&[3, 5, 4], 90);
    let bs = positive(&[5, 4], 91);
    for &(name, f_owned, f_ops) in BINARY {
        let inner_owned = |b: Tensor| vmap(|x: Tensor| f_owned(ops::exp(&x)?, &b)).call(&xs);
        let inner_ops = |b: Tensor| vmap(|x: Tensor| f_ops(&ops::exp(&x)?, &b)).call(&xs);
        let got = vmap(inner_owned).call(&bs).unwrap();
        let want = vmap(inner_ops).call(&bs).unwrap();
        assert_same(&got, &want, name);
        // And the other way round: x batched at the outer level, b at the inner.
        let got = vmap(|x: Tensor| vmap(|b: Tensor| f_owned(ops::exp(&x)?, &b)).call(&bs))
            .call(&xs)
            .unwrap();
        let want = vmap(|x: Tensor| vmap(|b: Tensor| f_ops(&ops::exp(&x)?, &b)).call(&bs))
            .call(&xs)
            .unwrap();
        assert_same(&got, &want, name);
        // The same with b's examples of x's rank and both batches of 3: the
        // physical tensors of the two levels have one shape, so a call that
        // took the outer level's physical tensor for the inner level's would
        // run and give wrong values.
        let bs3 = positive(&[3, 5, 4], 92);
        let got = vmap(|x: Tensor| vmap(|b: Tensor| f_owned(ops::exp(&x)?, &b)).call(&bs3))
            .call(&xs)
            .unwrap();
        let want = vmap(|x: Tensor| vmap(|b: Tensor| f_ops(&ops::exp(&x)?, &b)).call(&bs3))
            .call(&xs)
            .unwrap();
        assert_same(&got, &want, name);
    }
}

#[test]
fn under_grad_the_gradients_are_the_borrowed_ones() {
    let x = positive(&[5], 40);
    let g_owned = grad(|x: Tensor| {
        let y = owned::mul(owned::tanh(owned::exp(x.clone())?)?, &x)?;
        ops::sum(&owned::relu(y)?, None, false)
    })
    .call(&x)
    .unwrap();
    let g_ops = grad(|x: Tensor| {
        let y = ops::mul(&ops::tanh(&ops::exp(&x)?)?, &x)?;
        ops::sum(&ops::relu(&y)?, None, false)
    })
    .call(&x)
    .unwrap();
    assert_same(&g_owned, &g_ops, "grad");
    // Per-example gradients: grad under vmap.
    let xs = positive(&[4, 5], 41);
    let per_owned = vmap(|x: Tensor| {
        grad(|x: Tensor| ops::sum(&owned::sigmoid(owned::exp(x)?)?, None, false)).call(&x)
    })
    .call(&xs)
    .unwrap();
    let per_ops = vmap(|x: Tensor| {
        grad(|x: Tensor| ops::sum(&ops::sigmoid(&ops::exp(&x)?)?, None, false)).call(&x)
    })
    .call(&xs)
    .unwrap();
    assert_same(&per_owned, &per_ops, "vmap(grad)");
}

#[test]
fn large_tensors_in_place_match_the_borrowed_results() {
    // Above the size at which the `rayon` feature splits a kernel over the
    // pool (in that build this runs the parallel in-place loops).
    let x = f32s(&positive(&[512, 1031], 50));
    for &(name, by_value, by_ref) in UNARY {
        let want = by_ref(&x).unwrap();
        let fresh = ops::mul(&x, &Tensor::scalar(1.0f32)).unwrap();
        let at = ptr(&fresh);
        let got = by_value(fresh).unwrap();
        assert_eq!(ptr(&got), at, "{name}: in place");
        assert_same(&got, &want, name);
        // Not contiguous (a transpose nobody else holds).
        let t = ops::transpose(&ops::mul(&x, &Tensor::scalar(1.0f32)).unwrap(), 0, 1).unwrap();
        let want = by_ref(&t).unwrap();
        assert_same(&by_value(t).unwrap(), &want, name);
    }
    let bias = f32s(&positive(&[1031], 51));
    for &(name, by_value, by_ref) in BINARY {
        let a = ops::mul(&x, &Tensor::scalar(1.0f32)).unwrap();
        let want = by_ref(&a, &bias).unwrap();
        assert_same(&by_value(a, &bias).unwrap(), &want, name);
    }
}
