//! The `rayon` feature's parallel paths give the same results as the serial ones
//! (run with `cargo test --features rayon --test suite parallel::`).
#![cfg(feature = "rayon")]

use batchrules::{ops, vmap, FallbackPolicy, Tensor};
use ndarray::{Array, ArrayD, IxDyn};

fn big(shape: &[usize], seed: f64) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    Array::from_shape_vec(
        IxDyn(shape),
        (0..n).map(|i| ((i as f64) * 0.013 + seed).sin()).collect(),
    )
    .unwrap()
}

/// Elementwise kernels of at least 2^18 values, which write their output in
/// pieces on the pool: same shapes, a bias row broadcast over the rows, a
/// unary map; 601 x 457 values, so the pieces do not divide them evenly (and
/// a piece the pool left unwritten would show as a wrong value).
#[test]
fn large_elementwise_kernels() {
    let (a, b) = (big(&[601, 457], 0.0), big(&[601, 457], 1.0));
    let row = big(&[457], 2.0);
    let (ta, tb, trow) = (
        Tensor::from(a.clone()),
        Tensor::from(b.clone()),
        Tensor::from(row.clone()),
    );
    assert_eq!(
        ops::add(&ta, &tb).unwrap().to_array::<f64>().unwrap(),
        &a + &b
    );
    assert_eq!(
        ops::mul(&ta, &trow).unwrap().to_array::<f64>().unwrap(),
        &a * &row
    );
    assert_eq!(
        ops::sub(&trow, &ta).unwrap().to_array::<f64>().unwrap(),
        &row - &a
    );
    // `exp` is the crate's vectorized function (within 1 ulp of libm's, see
    // core/vmath.rs), so the reference is the same op on one thread.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    assert_eq!(
        ops::exp(&ta).unwrap().to_array::<f64>().unwrap(),
        one.install(|| ops::exp(&ta).unwrap().to_array::<f64>().unwrap())
    );
    let a32 = a.mapv(|v| v as f32);
    let got = ops::relu(&Tensor::from(a32.clone())).unwrap();
    assert_eq!(got.to_array::<f32>().unwrap(), a32.mapv(|v| v.max(0.0)));
}

/// One product large enough to be split by rows over the pool (301 x 96 x
/// 80, more than 2^21 multiply-adds), alone and with a bias through `addmm`.
#[test]
fn a_large_product_split_by_rows() {
    let (a, b, bias) = (big(&[301, 96], 0.0), big(&[96, 80], 1.0), big(&[80], 3.0));
    let a2 = a.view().into_dimensionality::<ndarray::Ix2>().unwrap();
    let b2 = b.view().into_dimensionality::<ndarray::Ix2>().unwrap();
    let product = a2.dot(&b2).into_dyn();
    let (ta, tb) = (Tensor::from(a.clone()), Tensor::from(b.clone()));
    let close = |got: &Tensor, want: &ArrayD<f64>| {
        let got = got.to_array::<f64>().unwrap();
        assert_eq!(got.shape(), want.shape());
        let worst = (&got - want).iter().fold(0.0f64, |m, d| m.max(d.abs()));
        assert!(worst < 1e-9, "largest difference {worst}");
    };
    close(&ops::matmul(&ta, &tb).unwrap(), &product);
    let with_bias = ops::addmm(&Tensor::from(bias.clone()), &ta, &tb, false).unwrap();
    close(&with_bias, &(&product + &bias));
    // `addmm` fills, accumulates into and activates each block of rows on
    // the pool (301 rows: blocks that do not divide them evenly): with the
    // fused relu, and with biases whose rows are not a contiguous vector (a
    // whole matrix, a column broadcast along the rows).
    let relu = ops::addmm(&Tensor::from(bias.clone()), &ta, &tb, true).unwrap();
    close(&relu, &(&product + &bias).mapv(|v| v.max(0.0)));
    for bias in [big(&[301, 80], 4.0), big(&[301, 1], 5.0)] {
        let got = ops::addmm(&Tensor::from(bias.clone()), &ta, &tb, true).unwrap();
        close(&got, &(&product + &bias).mapv(|v| v.max(0.0)));
    }
}

/// Products with an inner dim of 1 (per-sample outer products, as in
/// `vmap(grad)` of a linear layer) large enough for the pool, each operand
/// per product or shared: every value as `x * y`, exactly (the pool writes
/// the output without zeroing it first, so a value it missed would show).
#[test]
fn large_outer_products_on_the_pool() {
    let (count, n, m) = (64, 70, 90);
    let a = big(&[count, n, 1], 0.5);
    let b = big(&[count, 1, m], 1.5);
    let shared = big(&[1, 1, m], 2.5);
    for (right, per_product) in [(&b, true), (&shared, false)] {
        let got = ops::matmul(&Tensor::from(a.clone()), &Tensor::from(right.clone()))
            .unwrap()
            .to_array::<f64>()
            .unwrap();
        assert_eq!(got.shape(), &[count, n, m]);
        for ((t, i, j), &v) in got
            .view()
            .into_dimensionality::<ndarray::Ix3>()
            .unwrap()
            .indexed_iter()
        {
            let y = right[[if per_product { t } else { 0 }, 0, j]];
            assert_eq!(v, a[[t, i, 0]] * y, "[{t}, {i}, {j}]");
        }
    }
}

#[test]
fn large_batched_matmul() {
    let (a, b) = (big(&[64, 48, 40], 0.0), big(&[64, 40, 32], 2.0));
    let got = ops::matmul(&Tensor::from(a.clone()), &Tensor::from(b.clone()))
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    for t in 0..64 {
        let a2 = a
            .index_axis(ndarray::Axis(0), t)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let b2 = b
            .index_axis(ndarray::Axis(0), t)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let want = a2.dot(&b2);
        let diff = (&got.index_axis(ndarray::Axis(0), t) - &want.into_dyn()).mapv(f64::abs);
        assert!(diff.iter().all(|&d| d < 1e-9));
    }
}

#[test]
fn parallel_fallback_matches_the_dense_op() {
    // `cumsum` has no batching rule: a flat vmap runs its fallback loop on
    // rayon's pool, a nested one serially; both must match the dense op.
    let x = Tensor::from(big(&[16, 50], 0.5));
    let want = downstream_ops::ops::cumsum(&x, 1)
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    let flat = vmap(|r: Tensor| downstream_ops::ops::cumsum(&r, 0))
        .fallback(FallbackPolicy::Silent)
        .call(&x)
        .unwrap();
    assert_eq!(flat.to_array::<f64>().unwrap(), want);
    let y = Tensor::from(big(&[4, 4, 50], 0.5));
    let nested = vmap(|r: Tensor| vmap(|s: Tensor| downstream_ops::ops::cumsum(&s, 0)).call(&r))
        .fallback(FallbackPolicy::Silent)
        .call(&y)
        .unwrap();
    let want = downstream_ops::ops::cumsum(&y, 2)
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    assert_eq!(nested.to_array::<f64>().unwrap(), want);
}

/// A random op without a batching rule whose kernel notes the thread it runs
/// on, to see that the fallback loop really ran on rayon's pool.
mod traced {
    use std::collections::HashSet;
    use std::sync::Mutex;
    use std::thread::ThreadId;

    use batchrules::rules::TensorMeta;
    use batchrules::{kernel, meta, DType, Result, Tensor};

    pub mod ops {
        batchrules::op_table!(
            toml = r#"
[[op]]
schema = "traced_noise(Tensor self, int seed) -> Tensor"
kind = "primitive"
differentiable = false
random = true
"#
        );
    }

    pub static THREADS: Mutex<Option<HashSet<ThreadId>>> = Mutex::new(None);

    #[meta(op = "traced_noise", table = ops)]
    fn traced_meta(x: &TensorMeta, _seed: i64) -> Result<TensorMeta> {
        Ok(x.clone())
    }

    #[kernel(op = "traced_noise", table = ops)]
    fn traced_kernel(x: &Tensor, seed: i64) -> Result<Tensor> {
        THREADS
            .lock()
            .unwrap()
            .get_or_insert_with(HashSet::new)
            .insert(std::thread::current().id());
        let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
        batchrules::ops::add(x, &batchrules::ops::rand(&shape, seed, DType::F64)?)
    }
}

#[test]
fn random_fallback_on_the_pool_draws_as_the_rule_does() {
    use batchrules::{ops, DType, Randomness};
    let x = Tensor::from(big(&[64, 20], 0.0));
    for policy in [Randomness::Different, Randomness::Same] {
        *traced::THREADS.lock().unwrap() = None;
        let got = vmap(|r: Tensor| traced::ops::traced_noise(&r, 5))
            .randomness(policy)
            .fallback(FallbackPolicy::Silent)
            .call(&x)
            .unwrap();
        let threads = traced::THREADS.lock().unwrap().take().unwrap();
        if batchrules::tuning::num_threads() > 1 {
            // The serial loop runs on the calling thread; rayon's pool never does.
            assert!(
                !threads.contains(&std::thread::current().id()),
                "{policy:?}: the fallback loop did not run on the pool"
            );
        } else {
            // One thread (a one-core machine, or `set_num_threads(1)`):
            // every example on the calling thread.
            assert_eq!(
                threads,
                std::collections::HashSet::from([std::thread::current().id()]),
                "{policy:?}: one thread, yet the loop left the calling thread"
            );
        }
        let want = vmap(|r: Tensor| ops::add(&r, &ops::rand(&[20], 5, DType::F64)?))
            .randomness(policy)
            .call(&x)
            .unwrap();
        assert_eq!(
            got.to_array::<f64>().unwrap(),
            want.to_array::<f64>().unwrap(),
            "{policy:?}"
        );
    }
}

/// `log_softmax` of at least 2^13 values runs in pieces of whole slices on
/// the pool: along the last dim and along the first (moved last, then back),
/// against the definition.
#[test]
fn large_log_softmax_on_the_pool() {
    let x = big(&[1001, 10], 0.25).mapv(|v| 4.0 * v);
    let want_rows = {
        let mut out = x.clone();
        for mut row in out.rows_mut() {
            let m = row.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            let log_sum = row.iter().map(|&v| (v - m).exp()).sum::<f64>().ln() + m;
            row.mapv_inplace(|v| v - log_sum);
        }
        out
    };
    let close = |got: ArrayD<f64>, want: &ArrayD<f64>| {
        assert_eq!(got.shape(), want.shape());
        let worst = (&got - want).iter().fold(0.0f64, |m, d| m.max(d.abs()));
        assert!(worst < 1e-12, "largest difference {worst}");
    };
    let tx = Tensor::from(x.clone());
    close(
        ops::log_softmax(&tx, -1)
            .unwrap()
            .to_array::<f64>()
            .unwrap(),
        &want_rows,
    );
    let tt = Tensor::from(x.t().to_owned());
    close(
        ops::log_softmax(&tt, 0).unwrap().to_array::<f64>().unwrap(),
        &want_rows.t().to_owned(),
    );
}

/// `f` on rayon pools of one thread and of two: the same bits (NaN-free
/// inputs, so `==` on the arrays is bitwise up to the sign of zero, which
/// `to_bits` checks).
fn same_on_1_and_2_threads(name: &str, f: impl Fn() -> ArrayD<f64> + Sync) -> ArrayD<f64> {
    let run = |n: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap();
        pool.install(&f)
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.shape(), two.shape(), "{name}");
    let bits = |a: &ArrayD<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert!(bits(&one) == bits(&two), "{name}: 1 and 2 threads differ");
    one
}

/// The kernels issue 44 split across the pool for W12 and W14: a bias
/// broadcast over images (each bias value meets a block of the input),
/// scatter_add (max pooling's backward), fold (a convolution's input
/// gradient), sum_to_size (a bias's gradient) and the copy of a permuted
/// tensor into row-major order. Each against ndarray or a plain loop, and
/// on one thread against two.
#[test]
fn large_blocked_broadcast_scatter_fold_sum_to_size_and_copy() {
    // [N, C, H, W] + [C, 1, 1], both ways round.
    let x = big(&[48, 16, 14, 14], 0.5);
    let bias = big(&[16, 1, 1], 3.0);
    let (tx, tb) = (Tensor::from(x.clone()), Tensor::from(bias.clone()));
    let sum = same_on_1_and_2_threads("bias add", || {
        ops::add(&tx, &tb).unwrap().to_array::<f64>().unwrap()
    });
    assert_eq!(sum, &x + &bias);
    let diff = same_on_1_and_2_threads("bias sub", || {
        ops::sub(&tb, &tx).unwrap().to_array::<f64>().unwrap()
    });
    assert_eq!(diff, &bias - &x);

    // scatter_add along dim 2 of [48, 16, 196] from an index [48, 16, 100].
    let base = big(&[48, 16, 196], 1.5);
    let src = big(&[48, 16, 100], 2.5);
    let index = Array::from_shape_fn(IxDyn(&[48, 16, 100]), |d| {
        ((d[0] * 7 + d[1] * 13 + d[2] * 29) % 196) as i64
    });
    let mut want = base.clone();
    for ((i, j, k), &v) in src
        .view()
        .into_dimensionality::<ndarray::Ix3>()
        .unwrap()
        .indexed_iter()
    {
        want[[i, j, index[[i, j, k]] as usize]] += v;
    }
    let (tbase, tsrc, tindex) = (
        Tensor::from(base.clone()),
        Tensor::from(src.clone()),
        Tensor::from(index.clone()),
    );
    let got = same_on_1_and_2_threads("scatter_add", || {
        ops::scatter_add(&tbase, 2, &tindex, &tsrc)
            .unwrap()
            .to_array::<f64>()
            .unwrap()
    });
    assert_eq!(got, want);
    // Two bad indices: the error names the first in order, on any pool.
    let mut bad = index.clone();
    bad[[3, 0, 5]] = -5;
    bad[[30, 2, 7]] = 999;
    let tbad = Tensor::from(bad);
    for n in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap();
        let err = pool
            .install(|| ops::scatter_add(&tbase, 2, &tbad, &tsrc))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("index -5 is out of range"),
            "{n} threads: {err}"
        );
    }

    // fold of [N, C * 3 * 3, L] into [N, C, 16, 16], padding 1.
    let cols = big(&[40, 16 * 9, 256], 4.5);
    let tcols = Tensor::from(cols);
    let folded = same_on_1_and_2_threads("fold", || {
        ops::fold(&tcols, &[16, 16], &[3, 3], &[1], &[1], &[1])
            .unwrap()
            .to_array::<f64>()
            .unwrap()
    });
    assert_eq!(folded.shape(), &[40, 16, 16, 16]);

    // sum_to_size of [N, C, H, W] to [C, 1, 1], against ndarray's sums
    // (another order of additions: close, not equal).
    let summed = same_on_1_and_2_threads("sum_to_size", || {
        ops::sum_to_size(&tx, &[16, 1, 1])
            .unwrap()
            .to_array::<f64>()
            .unwrap()
    });
    let want = x
        .sum_axis(ndarray::Axis(0))
        .sum_axis(ndarray::Axis(1))
        .sum_axis(ndarray::Axis(1))
        .into_shape_with_order(IxDyn(&[16, 1, 1]))
        .unwrap();
    let worst = (&summed - &want).iter().fold(0.0f64, |m, d| m.max(d.abs()));
    assert!(worst < 1e-9, "sum_to_size: largest difference {worst}");

    // A permuted tensor copied into row-major order (reshape needs it).
    let copied = same_on_1_and_2_threads("row-major copy", || {
        ops::reshape(&ops::permute(&tx, &[3, 1, 0, 2]).unwrap(), &[-1])
            .unwrap()
            .to_array::<f64>()
            .unwrap()
    });
    let want: Vec<f64> = x
        .view()
        .permuted_axes(vec![3, 1, 0, 2])
        .iter()
        .copied()
        .collect();
    assert_eq!(copied.as_slice().unwrap(), &want[..]);
}
