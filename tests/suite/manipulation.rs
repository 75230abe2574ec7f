//! The shape-manipulation ops (`split`, `split_with_sizes`, `chunk`, `flip`,
//! `roll`, `repeat`, `masked_fill`, `one_hot`) against PyTorch, on edge cases
//! (negative dims, split sizes that do not divide, more chunks than
//! elements, empty dims, negative and large shifts, a dim rolled twice,
//! repeats adding dims, broadcast masks, NaN and infinite fill values), in
//! f64 and f32: every output, the gradient of a weighted sum of the outputs
//! (`grad`), the output tangents (`jvp`), and both under `vmap` with
//! `FallbackPolicy::Error` (no loop). The values were recorded by
//! `scripts/reference/record_manipulation.py` into
//! `tests/reference/torch_manipulation.json`. The recorded-case harness here
//! also serves `tests/suite/sorting.rs`.

pub(crate) use crate::recorded::{assert_error, disagreement, floats, values};
use batchrules::prelude::*;
use serde_json::Value;

/// A recorded float argument (a number or one of the strings of [`floats`]).
pub(crate) fn float_arg(v: &Value) -> f64 {
    floats(&Value::Array(vec![v.clone()]))[0]
}

pub(crate) fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_i64().expect("an integer"))
        .collect()
}

pub(crate) fn shape(v: &Value) -> Vec<usize> {
    ints(v).into_iter().map(|d| d as usize).collect()
}

/// A tensor of `shape` holding `values`, in `dtype` ("f64" or "f32").
pub(crate) fn tensor(shape: &[usize], values: &[f64], dtype: &str) -> Tensor {
    match dtype {
        "f64" => Tensor::from_shape_vec(shape, values.to_vec()).unwrap(),
        "f32" => Tensor::from_shape_vec(shape, values.iter().map(|&v| v as f32).collect()).unwrap(),
        other => panic!("unexpected dtype {other}"),
    }
}

/// An op with its recorded arguments applied, returning all its outputs.
pub(crate) type Multi = Box<dyn Fn(&Tensor) -> Result<Vec<Tensor>>>;

fn dtype_of(name: &str) -> DType {
    match name {
        "f64" => DType::F64,
        "f32" => DType::F32,
        "i64" => DType::I64,
        "bool" => DType::Bool,
        other => panic!("unexpected dtype {other}"),
    }
}

/// `sum_j sum(outs_j * w_j)` over the outputs with a cotangent.
fn weighted(outs: &[Tensor], weights: &[Option<Tensor>]) -> Result<Tensor> {
    let mut total: Option<Tensor> = None;
    for (o, w) in outs.iter().zip(weights) {
        if let Some(w) = w {
            let term = ops::sum(&ops::mul(o, w)?, None, false)?;
            total = Some(match total {
                Some(t) => ops::add(&t, &term)?,
                None => term,
            });
        }
    }
    Ok(total.expect("a float output"))
}

/// Checks every recorded case of `cases` against `op(case)`: the outputs
/// (values exactly where an output is an index, and `-0.0` as `-0.0` where
/// the op only moves elements, `exact`), the gradient of the weighted sum
/// of the outputs, the jvp, and vmap of the op and of its gradient over a
/// batch of `x` and `2 x` (which keeps ties, NaN and order) under
/// `FallbackPolicy::Error`. Returns the number of cases.
pub(crate) fn check_recorded(cases: &[Value], exact: bool, op: impl Fn(&Value) -> Multi) -> usize {
    for case in cases {
        let what = format!("{} {} {}", case["op"], case["args"], case["dtype"]);
        let dtype = case["dtype"].as_str().unwrap();
        let tol = match (exact, dtype) {
            (true, _) => 0.0,
            (false, "f64") => 1e-10,
            (false, _) => 1e-5,
        };
        let x = tensor(&shape(&case["shape"]), &floats(&case["input"]), dtype);
        let f = op(case);
        let want = case["outputs"].as_array().unwrap();

        // Forward.
        let outs = f(&x).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(outs.len(), want.len(), "{what}: number of outputs");
        for (j, (o, w)) in outs.iter().zip(want).enumerate() {
            assert_eq!(
                o.shape(),
                &shape(&w["shape"])[..],
                "{what}: output {j} shape"
            );
            assert_eq!(
                o.dtype(),
                dtype_of(w["dtype"].as_str().unwrap()),
                "{what}: output {j} dtype"
            );
            let got = values(o);
            if let Some(i) = disagreement(&got, &floats(&w["values"]), tol) {
                panic!(
                    "{what}: output {j} element {i}: got {got:?}, torch {}",
                    w["values"]
                );
            }
        }

        // Reverse mode: the gradient of the weighted sum.
        let weights: Vec<Option<Tensor>> = case["cotangents"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&outs)
            .map(|(w, o)| (!w.is_null()).then(|| tensor(o.shape(), &floats(w), dtype)))
            .collect();
        let loss = |x: Tensor| weighted(&f(&x)?, &weights);
        let g = grad(loss)
            .call(&x)
            .unwrap_or_else(|e| panic!("{what}, grad: {e}"));
        assert_eq!(g.dtype(), x.dtype(), "{what}: grad dtype");
        let (got, torch) = (values(&g), floats(&case["grad"]));
        if let Some(i) = disagreement(&got, &torch, tol.max(1e-12)) {
            panic!("{what}: grad element {i}: got {got:?}, torch {torch:?}");
        }

        // Forward mode.
        let tangent = tensor(x.shape(), &floats(&case["tangent"]), dtype);
        let (_, tangents): (Vec<Tensor>, Vec<Tensor>) =
            jvp(|x: Tensor| f(&x), &x, &tangent).unwrap_or_else(|e| panic!("{what}, jvp: {e}"));
        for (j, w) in case["jvp"].as_array().unwrap().iter().enumerate() {
            if w.is_null() {
                continue;
            }
            let got = values(&tangents[j]);
            if let Some(i) = disagreement(&got, &floats(w), tol.max(1e-12)) {
                panic!("{what}: jvp output {j} element {i}: got {got:?}, torch {w}");
            }
        }

        // vmap of the op and of its gradient, over [x, 2x], with no loop.
        let x2 = ops::mul(&x, &ops::full(&[], 2.0, x.dtype()).unwrap()).unwrap();
        let xs = ops::stack(&[x.clone(), x2.clone()], 0).unwrap();
        let batched: Vec<Tensor> = vmap(|x: Tensor| f(&x))
            .fallback(FallbackPolicy::Error)
            .call(&xs)
            .unwrap_or_else(|e| panic!("{what}, vmap: {e}"));
        for (i, xi) in [&x, &x2].into_iter().enumerate() {
            for (j, o) in f(xi).unwrap().iter().enumerate() {
                let b = batched[j].select(0, i).unwrap();
                assert_eq!(b.shape(), o.shape(), "{what}: vmap output {j} example {i}");
                let (got, want) = (values(&b), values(o));
                if let Some(k) = disagreement(&got, &want, 0.0) {
                    panic!("{what}: vmap output {j} example {i} element {k}: {got:?} vs {want:?}");
                }
            }
        }
        let grads: Tensor = vmap(|x: Tensor| grad(loss).call(&x))
            .fallback(FallbackPolicy::Error)
            .call(&xs)
            .unwrap_or_else(|e| panic!("{what}, vmap(grad): {e}"));
        for (i, xi) in [&x, &x2].into_iter().enumerate() {
            let one = grad(loss).call(xi).unwrap();
            let (got, want) = (values(&grads.select(0, i).unwrap()), values(&one));
            if let Some(k) = disagreement(&got, &want, 1e-12) {
                panic!("{what}: vmap(grad) example {i} element {k}: {got:?} vs {want:?}");
            }
        }
    }
    cases.len()
}

fn reference() -> Value {
    serde_json::from_str(include_str!("../reference/torch_manipulation.json"))
        .expect("tests/reference/torch_manipulation.json is JSON")
}

/// The op of a recorded case, with its arguments.
fn manipulation_op(case: &Value) -> Multi {
    let args = &case["args"];
    let int = |k: &str| args[k].as_i64().unwrap();
    let list = |k: &str| ints(&args[k]);
    match case["op"].as_str().unwrap() {
        "split" => {
            let (s, d) = (int("split_size"), int("dim"));
            Box::new(move |x| ops::split(x, s, d))
        }
        "split_with_sizes" => {
            let (s, d) = (list("split_sizes"), int("dim"));
            Box::new(move |x| ops::split_with_sizes(x, &s, d))
        }
        "chunk" => {
            let (c, d) = (int("chunks"), int("dim"));
            Box::new(move |x| ops::chunk(x, c, d))
        }
        "flip" => {
            let dims = list("dims");
            Box::new(move |x| Ok(vec![x.flip(&dims)?]))
        }
        "roll" => {
            let (s, d) = (list("shifts"), list("dims"));
            Box::new(move |x| Ok(vec![x.roll(&s, &d)?]))
        }
        "repeat" => {
            let r = list("repeats");
            Box::new(move |x| Ok(vec![x.repeat(&r)?]))
        }
        "masked_fill" => {
            let m = &case["mask"];
            let bools: Vec<bool> = m["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_bool().unwrap())
                .collect();
            let mask = Tensor::from_shape_vec(&shape(&m["shape"]), bools).unwrap();
            let value = float_arg(&args["value"]);
            Box::new(move |x| Ok(vec![x.masked_fill(&mask, value)?]))
        }
        other => panic!("no op {other}"),
    }
}

#[test]
fn manipulation_ops_match_torch_forward_grad_jvp_and_vmap() {
    let reference = reference();
    let cases = reference["cases"].as_array().unwrap();
    // These ops only move or copy elements (and fill): exact values.
    let n = check_recorded(cases, true, manipulation_op);
    assert_eq!(n, 2 * 34);
}

#[test]
fn the_methods_apply_pytorchs_defaults() {
    let x = Tensor::from_shape_vec(&[2, 3], (0..6).map(f64::from).collect()).unwrap();
    let shapes = |ts: Vec<Tensor>| ts.iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>();
    assert_eq!(shapes(x.split(1).unwrap()), [vec![1, 3], vec![1, 3]]);
    assert_eq!(shapes(x.split_dim(2, 1).unwrap()), [vec![2, 2], vec![2, 1]]);
    assert_eq!(shapes(x.split_with_sizes(&[2]).unwrap()), [vec![2, 3]]);
    assert_eq!(
        shapes(x.split_with_sizes_dim(&[1, 2], -1).unwrap()),
        [vec![2, 1], vec![2, 2]]
    );
    assert_eq!(shapes(x.chunk(3).unwrap()), [vec![1, 3], vec![1, 3]]);
    assert_eq!(
        shapes(x.chunk_dim(3, 1).unwrap()),
        [vec![2, 1], vec![2, 1], vec![2, 1]]
    );
}

#[test]
fn one_hot_matches_torch_and_batches_without_a_loop() {
    let reference = reference();
    let cases = reference["one_hot"].as_array().unwrap();
    for case in cases {
        let nc = case["num_classes"].as_i64().unwrap();
        let x = Tensor::from_shape_vec(&shape(&case["shape"]), ints(&case["input"])).unwrap();
        let y = x.one_hot(nc).unwrap();
        assert_eq!(y.dtype(), DType::I64);
        assert_eq!(y.shape(), &shape(&case["output"]["shape"])[..]);
        assert_eq!(
            y.to_array::<i64>()
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            ints(&case["output"]["values"])
        );
        // Batched along every dim, the examples' encodings.
        for bdim in 0..x.ndim() {
            let ys: Tensor = vmap(|x: Tensor| x.one_hot(nc))
                .in_dims(bdim)
                .fallback(FallbackPolicy::Error)
                .call(&x)
                .unwrap();
            for i in 0..x.shape()[bdim] {
                let one = x.select(bdim, i).unwrap().one_hot(nc).unwrap();
                assert_eq!(
                    ys.select(0, i).unwrap().to_array::<i64>().unwrap(),
                    one.to_array::<i64>().unwrap()
                );
            }
        }
    }
    assert_eq!(cases.len(), 4);
}

#[test]
fn bad_arguments_are_errors_naming_the_op_and_the_argument() {
    let x = Tensor::from_shape_vec(&[2, 3], (0..6).map(f64::from).collect()).unwrap();
    let s = Tensor::scalar(1.0f64);
    let labels = Tensor::from_shape_vec(&[2], vec![0i64, 2]).unwrap();
    assert_error("split", "0-d", ops::split(&s, 1, 0));
    assert_error("split", "split_size", ops::split(&x, 0, 0));
    assert_error("split", "split_size", ops::split(&x, -3, 0));
    assert_error("split", "dim", ops::split(&x, 1, 2));
    assert_error(
        "split_with_sizes",
        "add up",
        ops::split_with_sizes(&x, &[1, 1], 1),
    );
    assert_error(
        "split_with_sizes",
        "split_sizes[1]",
        ops::split_with_sizes(&x, &[4, -1], 1),
    );
    assert_error(
        "split_with_sizes",
        "split_sizes",
        ops::split_with_sizes(&x, &[i64::MAX, i64::MAX, 2], 0),
    );
    assert_error("chunk", "chunks", ops::chunk(&x, 0, 0));
    assert_error("chunk", "chunks", ops::chunk(&x, -1, 0));
    let empty = Tensor::from_shape_vec(&[0], Vec::<f64>::new()).unwrap();
    assert_error("chunk", "chunks", ops::chunk(&empty, i64::MAX, 0));
    assert_error("flip", "more than once", ops::flip(&x, &[1, -1]));
    assert_error("flip", "dim", ops::flip(&x, &[-3]));
    assert_error("roll", "shifts", ops::roll(&x, &[1, 2], &[]));
    assert_error("roll", "same length", ops::roll(&x, &[1], &[0, 1]));
    assert_error("roll", "0-d", ops::roll(&s, &[1], &[0]));
    assert_error("repeat", "repeats", ops::repeat(&x, &[2]));
    assert_error("repeat", "repeats[1]", ops::repeat(&x, &[1, -2]));
    assert_error("repeat", "elements", ops::repeat(&x, &[i64::MAX, i64::MAX]));
    let mask = Tensor::from_shape_vec(&[3], vec![true, false, true]).unwrap();
    let int_mask = Tensor::from_shape_vec(&[3], vec![1i64, 0, 1]).unwrap();
    assert_error("masked_fill", "mask", ops::masked_fill(&x, &int_mask, 1.0));
    let ints6 = ops::to_dtype(&x, DType::I64).unwrap();
    assert_error(
        "masked_fill",
        "value",
        ops::masked_fill(&ints6, &mask, f64::NAN),
    );
    assert_error(
        "masked_fill",
        "value",
        ops::masked_fill(&ints6, &mask, 1e19),
    );
    let x32 = ops::to_dtype(&x, DType::F32).unwrap();
    assert_error("masked_fill", "value", ops::masked_fill(&x32, &mask, -1e39));
    let bad_mask = Tensor::from_shape_vec(&[2], vec![true, false]).unwrap();
    assert!(ops::masked_fill(&x, &bad_mask, 1.0).is_err());
    assert_error("one_hot", "num_classes", ops::one_hot(&labels, -1));
    assert_error("one_hot", "infers", ops::one_hot(&labels, -1));
    assert_error("one_hot", "num_classes", ops::one_hot(&labels, 0));
    assert_error("one_hot", "class value 2", ops::one_hot(&labels, 2));
    let negative = Tensor::from_shape_vec(&[1], vec![-1i64]).unwrap();
    assert_error("one_hot", "class value -1", ops::one_hot(&negative, 3));
    assert_error("one_hot", "i64", ops::one_hot(&x, 3));
    assert!(ops::one_hot(&labels, i64::MAX).is_err());
    // A class out of range in one example of a batch is an error too.
    let batch = Tensor::from_shape_vec(&[2, 1], vec![0i64, 5]).unwrap();
    let r: Result<Tensor> = vmap(|x: Tensor| x.one_hot(3)).call(&batch);
    assert!(r.is_err());
}

#[test]
fn masked_fill_of_integers_and_bools_converts_the_value_as_torch() {
    // torch.tensor([1, 2, 3]).masked_fill(mask, 2.7) is [2, 2, 2] (truncated);
    // a bool tensor takes any nonzero value as true.
    let mask = Tensor::from_shape_vec(&[3], vec![true, false, true]).unwrap();
    let ints = Tensor::from_shape_vec(&[3], vec![1i64, 2, 3]).unwrap();
    let y = ints.masked_fill(&mask, 2.7).unwrap();
    assert_eq!(
        y.to_array::<i64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [2, 2, 2]
    );
    let b = Tensor::from_shape_vec(&[3], vec![false, false, true]).unwrap();
    let y = b.masked_fill(&mask, 0.5).unwrap();
    assert_eq!(
        y.to_array::<bool>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [true, false, true]
    );
}
