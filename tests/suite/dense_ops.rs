//! Dense semantics of the op library (no vmap): dtype promotion, NaN handling,
//! and the errors float-only ops give for other dtypes.

use batchrules::Reduction;
use batchrules::{ops, DType, Tensor};

fn f64s(v: &[f64]) -> Tensor {
    Tensor::from_shape_vec(&[v.len()], v.to_vec()).unwrap()
}

#[test]
fn promotion_follows_bool_i64_f32_f64() {
    let b = Tensor::from_shape_vec(&[2], vec![true, false]).unwrap();
    let i = Tensor::from_shape_vec(&[2], vec![3i64, 4]).unwrap();
    let f = Tensor::from_shape_vec(&[2], vec![0.5f32, 1.5]).unwrap();
    let d = f64s(&[1.0, 2.0]);
    assert_eq!(ops::add(&b, &b).unwrap().dtype(), DType::I64);
    assert_eq!(ops::add(&b, &i).unwrap().dtype(), DType::I64);
    assert_eq!(ops::add(&i, &f).unwrap().dtype(), DType::F32);
    assert_eq!(ops::mul(&f, &d).unwrap().dtype(), DType::F64);
    assert_eq!(ops::div(&i, &i).unwrap().dtype(), DType::F32);
    assert_eq!(ops::eq(&i, &f).unwrap().dtype(), DType::Bool);
    assert_eq!(
        ops::add(&b, &i)
            .unwrap()
            .to_array::<i64>()
            .unwrap()
            .as_slice()
            .unwrap(),
        &[4, 4]
    );
}

#[test]
fn nan_wins_in_maximum_minimum_and_amax() {
    let a = f64s(&[1.0, f64::NAN, 3.0]);
    let b = f64s(&[f64::NAN, 2.0, 1.0]);
    for r in [ops::maximum(&a, &b).unwrap(), ops::minimum(&a, &b).unwrap()] {
        let r = r.to_array::<f64>().unwrap();
        assert!(r[0].is_nan() && r[1].is_nan());
    }
    assert_eq!(
        ops::maximum(&a, &b).unwrap().to_array::<f64>().unwrap()[2],
        3.0
    );
    assert!(ops::amax(&a, None, false)
        .unwrap()
        .to_array::<f64>()
        .unwrap()[[]]
    .is_nan());
    assert!(ops::amin(&b, None, false)
        .unwrap()
        .to_array::<f64>()
        .unwrap()[[]]
    .is_nan());
}

#[test]
fn float_only_ops_say_they_need_floats() {
    let i = Tensor::from_shape_vec(&[2], vec![1i64, 2]).unwrap();
    for err in [
        ops::exp(&i).unwrap_err(),
        ops::mean(&i, None, false).unwrap_err(),
        ops::softmax(&i, 0).unwrap_err(),
    ] {
        assert!(
            err.to_string().contains("needs a floating-point tensor"),
            "{err}"
        );
    }
}

#[test]
fn where_and_clamp() {
    let c = Tensor::from_shape_vec(&[3], vec![true, false, true]).unwrap();
    let r = ops::where_(&c, &f64s(&[1.0, 2.0, 3.0]), &Tensor::scalar(0i64)).unwrap();
    assert_eq!(
        r.to_array::<f64>().unwrap().as_slice().unwrap(),
        &[1.0, 0.0, 3.0]
    );
    let x = Tensor::from_shape_vec(&[4], vec![-3i64, 0, 2, 9]).unwrap();
    let r = ops::clamp(&x, Some(-1.5), Some(2.5)).unwrap();
    assert_eq!(
        r.to_array::<i64>().unwrap().as_slice().unwrap(),
        &[-1, 0, 2, 2]
    );
    assert!(ops::clamp(&x, None, None).is_err());
}

#[test]
fn composites_agree_with_direct_formulas() {
    let x = f64s(&[0.5, -1.0, 2.0, 0.0]);
    let lse = ops::logsumexp(&x, 0, false)
        .unwrap()
        .to_array::<f64>()
        .unwrap()[[]];
    let direct = [0.5f64, -1.0, 2.0, 0.0]
        .iter()
        .map(|v| v.exp())
        .sum::<f64>()
        .ln();
    assert!((lse - direct).abs() < 1e-12);
    let var = ops::var(&x, None, 1, false)
        .unwrap()
        .to_array::<f64>()
        .unwrap()[[]];
    let mean = 1.5 / 4.0;
    let direct = [0.5f64, -1.0, 2.0, 0.0]
        .iter()
        .map(|v| (v - mean).powi(2))
        .sum::<f64>()
        / 3.0;
    assert!((var - direct).abs() < 1e-12);
    let mse = ops::mse_loss(&x, &f64s(&[0.0; 4]), Reduction::Sum)
        .unwrap()
        .to_array::<f64>()
        .unwrap()[[]];
    assert!((mse - (0.25 + 1.0 + 4.0)).abs() < 1e-12);
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn argmax_first_maximum_and_flat_index() {
    let x = Tensor::from_shape_vec(&[2, 3], vec![1.0f64, 5.0, 5.0, 7.0, -1.0, 7.0]).unwrap();
    let flat = ops::argmax(&x, None, false)
        .unwrap()
        .to_array::<i64>()
        .unwrap();
    assert_eq!(flat[[]], 3);
    let rows = ops::argmax(&x, Some(1), true)
        .unwrap()
        .to_array::<i64>()
        .unwrap();
    assert_eq!(rows.shape(), &[2, 1]);
    assert_eq!(rows.iter().copied().collect::<Vec<_>>(), vec![1, 0]);
    let nan = f64s(&[1.0, f64::NAN, 9.0]);
    assert_eq!(
        ops::argmax(&nan, None, false)
            .unwrap()
            .to_array::<i64>()
            .unwrap()[[]],
        1
    );
}

#[test]
fn linear_cross_entropy_layer_norm_values() {
    // linear: [2] features -> [3], weight rows are the output features.
    let x = f64s(&[1.0, 2.0]);
    let w = Tensor::from_shape_vec(&[3, 2], vec![1.0f64, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap();
    let b = f64s(&[0.5, 0.5, 0.5]);
    let y = ops::linear(&x, &w, Some(&b))
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), vec![1.5, 2.5, 3.5]);

    // cross_entropy = -log_softmax(logits)[target], averaged.
    let logits = Tensor::from_shape_vec(&[2, 2], vec![0.0f64, 0.0, 2.0, 0.0]).unwrap();
    let target = Tensor::from_shape_vec(&[2], vec![1i64, 0]).unwrap();
    let l = ops::cross_entropy(&logits, &target, Reduction::Mean)
        .unwrap()
        .to_array::<f64>()
        .unwrap()[[]];
    let want = (2f64.ln() + (1.0 + (-2f64).exp()).ln()) / 2.0;
    assert!(close(l, want), "{l} vs {want}");

    // layer_norm of [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
    let x = f64s(&[1.0, 2.0, 3.0, 4.0]);
    let y = ops::layer_norm(&x, &[4], None, None, 0.0)
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    let sd = 1.25f64.sqrt();
    for (got, v) in y.iter().zip([1.0, 2.0, 3.0, 4.0]) {
        assert!(close(*got, (v - 2.5) / sd));
    }
}

#[test]
fn triu_and_tril_match_a_naive_mask() {
    // Batches of small matrices (at most 16 Ki values each: one select
    // against a table of the values to keep), [150, 120] f64 ones (the
    // copy in 16 KiB blocks of 17 rows, which end inside a matrix and at a
    // different row of each), and one matrix alone (blocks too).
    for (batch, rows, cols, diagonals) in [
        (2usize, 4usize, 5usize, -5i64..=6),
        (3, 70, 50, -71..=51),
        (2, 150, 120, -151..=121),
        (1, 9, 7, -9..=8),
    ] {
        let n = batch * rows * cols;
        let x = Tensor::from_shape_vec(
            &[batch, rows, cols],
            (0..n).map(|v| v as f64 + 1.0).collect(),
        )
        .unwrap();
        // A permuted (non-standard layout) input too.
        let xt = ops::transpose(&x, 1, 2).unwrap();
        for input in [&x, &xt] {
            let (r, c) = (input.shape()[1], input.shape()[2]);
            let a = input.to_array::<f64>().unwrap();
            for diagonal in diagonals.clone().step_by(if rows > 10 { 7 } else { 1 }) {
                let up = ops::triu(input, diagonal)
                    .unwrap()
                    .to_array::<f64>()
                    .unwrap();
                let lo = ops::tril(input, diagonal)
                    .unwrap()
                    .to_array::<f64>()
                    .unwrap();
                for b in 0..batch {
                    for i in 0..r {
                        for j in 0..c {
                            let d = j as i64 - i as i64;
                            let v = a[[b, i, j]];
                            assert_eq!(up[[b, i, j]], if d >= diagonal { v } else { 0.0 });
                            assert_eq!(lo[[b, i, j]], if d <= diagonal { v } else { 0.0 });
                        }
                    }
                }
            }
        }
    }
}

/// `x` as f64 values at every index of `shape`, broadcast by numpy rules.
fn at(x: &Tensor, shape: &[usize]) -> ndarray::ArrayD<f64> {
    let a = ops::to_dtype(x, DType::F64)
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    a.broadcast(ndarray::IxDyn(shape)).unwrap().to_owned()
}

#[test]
fn one_value_operands_and_where_layouts_match_broadcasting() {
    let x = Tensor::from_shape_vec(&[2, 3], (0..6).map(|v| v as f64 - 2.5).collect()).unwrap();
    let xt = ops::transpose(
        &Tensor::from_shape_vec(&[3, 2], (0..6).map(|v| v as f64).collect()).unwrap(),
        0,
        1,
    )
    .unwrap();
    let one = Tensor::scalar(1.5f64);
    let one_11 = Tensor::from_shape_vec(&[1, 1], vec![1.5f64]).unwrap();
    let one_111 = Tensor::from_shape_vec(&[1, 1, 1], vec![1.5f64]).unwrap();
    let row = Tensor::from_shape_vec(&[3], vec![10.0f64, 20.0, 30.0]).unwrap();
    // sub is not symmetric, so an operand swapped by a fast path would show.
    for (a, b) in [
        (&x, &one),
        (&one, &x),
        (&x, &one_11),
        (&one_11, &x),
        (&x, &one_111),
        (&one_111, &xt),
        (&xt, &one),
        (&one, &one_111),
    ] {
        let r = ops::sub(a, b).unwrap();
        let shape = r.shape().to_vec();
        assert_eq!(
            r.to_array::<f64>().unwrap(),
            &at(a, &shape) - &at(b, &shape)
        );
        let g = ops::gt(a, b).unwrap().to_array::<bool>().unwrap();
        let want = ndarray::Zip::from(&at(a, &shape))
            .and(&at(b, &shape))
            .map_collect(|p, q| p > q);
        assert_eq!(g, want);
    }
    let c = ops::gt(&x, &Tensor::scalar(0.0f64)).unwrap();
    let c_row = Tensor::from_shape_vec(&[3], vec![true, false, true]).unwrap();
    let ct = ops::transpose(
        &ops::gt(
            &Tensor::from_shape_vec(&[3, 2], (0..6).map(|v| v as f64 - 2.5).collect()).unwrap(),
            &Tensor::scalar(0.0f64),
        )
        .unwrap(),
        0,
        1,
    )
    .unwrap();
    for cond in [&c, &c_row, &ct] {
        for a in [&x, &xt, &one, &one_11, &row] {
            for b in [&x, &xt, &one, &one_111, &row, &Tensor::scalar(0i64)] {
                let r = ops::where_(cond, a, b).unwrap();
                let shape = r.shape().to_vec();
                let cb = cond.to_array::<bool>().unwrap();
                let cb = cb.broadcast(ndarray::IxDyn(&shape)).unwrap();
                let want = ndarray::Zip::from(&cb)
                    .and(&at(a, &shape))
                    .and(&at(b, &shape))
                    .map_collect(|&k, &p, &q| if k { p } else { q });
                assert_eq!(
                    r.to_array::<f64>().unwrap(),
                    want,
                    "{:?} {:?} {:?}",
                    cond.shape(),
                    a.shape(),
                    b.shape()
                );
            }
        }
    }
}

#[test]
fn broadcast_new_dim_repeats_along_the_new_dim_at_every_position() {
    let x = Tensor::from_shape_vec(&[2, 3, 4], (0..24).map(|v| v as f64).collect()).unwrap();
    let inputs = [
        x.clone(),
        ops::transpose(&x, 0, 2).unwrap(), // not standard layout
        ops::to_dtype(&x, DType::I64).unwrap(),
        ops::gt(&x, &Tensor::scalar(10.0f64)).unwrap(),
        Tensor::from_shape_vec(&[2, 0, 3], Vec::<f32>::new()).unwrap(),
        Tensor::scalar(2.5f32),
    ];
    for input in &inputs {
        let a = ops::to_dtype(input, DType::F64)
            .unwrap()
            .to_array::<f64>()
            .unwrap();
        for dim in 0..=input.ndim() {
            for size in [0, 1, 3] {
                let got = input.broadcast_new_dim(dim, size).unwrap();
                assert_eq!(got.dtype(), input.dtype());
                let mut shape = input.shape().to_vec();
                shape.insert(dim, size);
                assert_eq!(got.shape(), &shape[..]);
                let got = ops::to_dtype(&got, DType::F64)
                    .unwrap()
                    .to_array::<f64>()
                    .unwrap();
                for (idx, &v) in got.indexed_iter() {
                    let mut src = ndarray::Dimension::slice(&idx).to_vec();
                    src.remove(dim);
                    assert_eq!(
                        v,
                        a[ndarray::IxDyn(&src)],
                        "{:?} dim {dim} size {size}",
                        input.shape()
                    );
                }
            }
        }
    }
    assert!(x.broadcast_new_dim(4, 2).is_err());
}

#[test]
fn gather_and_scatter_add_match_loops_along_every_dim() {
    let shape = [3usize, 4, 5];
    let x =
        Tensor::from_shape_vec(&shape, (0..60).map(|v| v as f64 * 0.5 - 7.0).collect()).unwrap();
    let xa = x.to_array::<f64>().unwrap();
    for d in 0..3 {
        for n in [1usize, 2, 7] {
            let mut ishape = shape.to_vec();
            ishape[d] = n;
            let count: usize = ishape.iter().product();
            // Positions that repeat (scatter_add sums them) and cover the dim.
            let values: Vec<i64> = (0..count)
                .map(|i| ((i * 7 + 3) % shape[d]) as i64)
                .collect();
            let index = Tensor::from_shape_vec(&ishape, values).unwrap();
            let ia = index.to_array::<i64>().unwrap();
            let src =
                Tensor::from_shape_vec(&ishape, (0..count).map(|v| v as f64 + 0.25).collect())
                    .unwrap();
            let sa = src.to_array::<f64>().unwrap();
            let gathered = ops::gather(&x, d as i64, &index)
                .unwrap()
                .to_array::<f64>()
                .unwrap();
            let mut summed = xa.clone();
            for (p, &v) in ia.indexed_iter() {
                let mut at = ndarray::Dimension::slice(&p).to_vec();
                assert_eq!(gathered[&p], {
                    at[d] = v as usize;
                    xa[ndarray::IxDyn(&at)]
                });
                summed[ndarray::IxDyn(&at)] += sa[&p];
            }
            let scattered = ops::scatter_add(&x, d as i64, &index, &src).unwrap();
            assert_eq!(scattered.to_array::<f64>().unwrap(), summed, "dim {d}, {n}");
            // The same through non-standard layouts (the general loop).
            let strided = |t: &Tensor| {
                let back = ops::permute(t, &[2, 1, 0]).unwrap();
                let copy = ops::add(&back, &Tensor::scalar(0i64)).unwrap();
                copy.permuted(&[2, 1, 0]).unwrap()
            };
            let (xs, is, ss) = (strided(&x), strided(&index), strided(&src));
            assert_eq!(
                ops::gather(&xs, d as i64, &is)
                    .unwrap()
                    .to_array::<f64>()
                    .unwrap(),
                gathered
            );
            assert_eq!(
                ops::scatter_add(&xs, d as i64, &is, &ss)
                    .unwrap()
                    .to_array::<f64>()
                    .unwrap(),
                summed
            );
            // An index out of range is an error on both paths.
            let mut bad: Vec<i64> = ia.iter().copied().collect();
            bad[count - 1] = shape[d] as i64;
            let bad = Tensor::from_shape_vec(&ishape, bad).unwrap();
            assert!(ops::gather(&x, d as i64, &bad).is_err());
            assert!(ops::scatter_add(&x, d as i64, &bad, &src).is_err());
            assert!(ops::gather(&xs, d as i64, &strided(&bad)).is_err());
        }
    }
}
