//! The batchrules workloads W1-W17 (see docs/benchmarks.md; the model
//! workloads W12-W15 are in `models/`, their peers in `peers_models.py`). Each workload
//! measures batchrules and its baseline in the same run; after criterion has
//! run, a table of medians and ratios is printed (and written to
//! `target/criterion/summary.md`).
//!
//! Run with `cargo bench --features bench --bench workloads`; filter with e.g.
//! `-- W2`.

use batchrules::Reduction;
use std::hint::black_box;
use std::time::Duration;

use batchrules::{
    grad, jacfwd, jacrev, jit, jvp, ops, owned, vjp, vmap, FallbackPolicy, Result, Tensor,
};
use criterion::{BenchmarkId, Criterion};

mod models;
use ndarray::{Array, Array2, ArrayD, Axis, IxDyn, Zip};

fn tensor(shape: &[usize]) -> Tensor {
    Tensor::from(array(shape))
}

fn array(shape: &[usize]) -> ArrayD<f32> {
    let n: usize = shape.iter().product();
    Array::from_shape_vec(
        IxDyn(shape),
        (0..n).map(|i| ((i as f32) * 0.37).sin()).collect(),
    )
    .expect("shape")
}

/// The physical limit of a memory-bound workload: a copy of `bytes` bytes
/// between two buffers allocated once, outside the timed loop (the same bytes
/// read and written as the workload, at the machine's bandwidth, with no
/// allocation, page faults or dispatch).
fn bench_copy_limit(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    bytes: usize,
) {
    let src: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    let mut dst = vec![0u8; bytes];
    g.bench_function("limit_copy", |bch| {
        bch.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });
}

/// The limit of a compute-bound workload: its matrix products alone, each
/// `(m, k, n)` a single-threaded f32 GEMM of row-major operands into an output
/// allocated once, without anything around it. Two GEMMs, in the same run:
/// `limit_gemm`, the `gemm` crate (the best available to the crate, which
/// batchrules uses for products of 16^3 multiply-adds and more), and
/// `limit_matrixmultiply` (what ndarray's `dot` calls, and batchrules below
/// that size).
fn bench_gemm_limit(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    shapes: &[(usize, usize, usize)],
) {
    let mut bufs: Vec<(Vec<f32>, Vec<f32>, Vec<f32>)> = shapes
        .iter()
        .map(|&(m, k, n)| {
            let a = array(&[m * k]).into_raw_vec_and_offset().0;
            let b = array(&[k * n]).into_raw_vec_and_offset().0;
            (a, b, vec![0.0f32; m * n])
        })
        .collect();
    g.bench_function("limit_gemm", |bch| {
        bch.iter(|| {
            for (&(m, k, n), (a, b, c)) in shapes.iter().zip(bufs.iter_mut()) {
                // SAFETY: a is m x k, b is k x n and c is m x n, all row-major
                // (column stride 1, row stride the columns), live for the call,
                // and c aliases neither; c = 0 * c + 1 * a b, c not read.
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        c.as_mut_ptr(),
                        1,
                        n as isize,
                        false,
                        a.as_ptr(),
                        1,
                        k as isize,
                        b.as_ptr(),
                        1,
                        n as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                }
            }
            black_box(&mut bufs);
        })
    });
    g.bench_function("limit_matrixmultiply", |bch| {
        bch.iter(|| {
            for (&(m, k, n), (a, b, c)) in shapes.iter().zip(bufs.iter_mut()) {
                // SAFETY: as above: a is m x k, b is k x n and c is m x n,
                // row-major (row stride = columns, column stride 1).
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        k as isize,
                        1,
                        b.as_ptr(),
                        n as isize,
                        1,
                        0.0,
                        c.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            }
            black_box(&mut bufs);
        })
    });
}

/// Floating-point operations of the matrix products `(m, k, n)`.
fn gemm_flops(shapes: &[(usize, usize, usize)]) -> f64 {
    shapes
        .iter()
        .map(|&(m, k, n)| 2.0 * (m * k * n) as f64)
        .sum()
}

/// W1's products: the two layers over the batch.
const W1_GEMMS: &[(usize, usize, usize)] = &[(256, 64, 128), (256, 128, 10)];
/// W8's products: the two forward layers, and backward the input gradient of
/// the second layer (the per-sample weight gradients are outer products,
/// memory-bound, counted in its write limit instead).
const W8_GEMMS: &[(usize, usize, usize)] = &[(256, 64, 128), (256, 128, 10), (256, 10, 128)];
/// W8's output: per-sample gradients of w1 [128, 64], b1, w2 [10, 128] and b2,
/// 256 of each, f32.
const W8_OUTPUT_BYTES: usize = 256 * (128 * 64 + 128 + 10 * 128 + 10) * 4;
/// W10 32 -> 2048 by jacrev: the cotangent basis [2048, 2048] times the weights [2048, 32].
const W10_GEMMS: &[(usize, usize, usize)] = &[(2048, 2048, 32)];

/// W1: per-example MLP 64 -> 128 -> relu -> 10 -> log_softmax, batch 256.
fn w1_mlp(c: &mut Criterion) {
    let (b, d_in, d_h, d_out) = (256, 64, 128, 10);
    let (xs, w1, b1, w2, b2) = (
        array(&[b, d_in]),
        array(&[d_in, d_h]),
        array(&[d_h]),
        array(&[d_h, d_out]),
        array(&[d_out]),
    );
    let (txs, tw1, tb1, tw2, tb2) = (
        Tensor::from(xs.clone()),
        Tensor::from(w1.clone()),
        Tensor::from(b1.clone()),
        Tensor::from(w2.clone()),
        Tensor::from(b2.clone()),
    );
    let mut g = c.benchmark_group("W1_mlp_b256");
    g.bench_function("ndarray_handbatched", |bch| {
        let w1 = w1.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
        let w2 = w2.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
        let xs = xs.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
        let b1 = b1.clone().into_dimensionality::<ndarray::Ix1>().unwrap();
        let b2 = b2.clone().into_dimensionality::<ndarray::Ix1>().unwrap();
        bch.iter(|| {
            let mut h: Array2<f32> = xs.dot(&w1) + &b1;
            h.mapv_inplace(|v| v.max(0.0));
            let mut o: Array2<f32> = h.dot(&w2) + &b2;
            for mut row in o.axis_iter_mut(Axis(0)) {
                let m = row.fold(f32::NEG_INFINITY, |a, &v| a.max(v));
                let lse = row.fold(0.0, |a, &v| a + (v - m).exp()).ln() + m;
                row.mapv_inplace(|v| v - lse);
            }
            black_box(o)
        })
    });
    g.bench_function("batchrules_vmap", |bch| {
        let p = (tw1.clone(), tb1.clone(), tw2.clone(), tb2.clone());
        bch.iter(|| black_box(mlp_batched(&p, &txs).unwrap()))
    });
    g.bench_function("batchrules_jit", |bch| {
        let p = (tw1.clone(), tb1.clone(), tw2.clone(), tb2.clone());
        let f = jit(|(p, xs): (Mlp, Tensor)| mlp_batched(&p, &xs));
        bch.iter(|| black_box(f.call((&p, &txs)).unwrap()))
    });
    // The same MLP in `linear`'s layout (weights `[out, in]`): with
    // `linear`, whose bias add is fused into the product by `addmm`, and
    // with the first layer as `linear_relu` (the bias add and the activation
    // fused into the product's output, `addmm` with `relu`).
    let t = |w: &ndarray::ArrayD<f32>| Tensor::from(w.t().as_standard_layout().into_owned());
    let p = (t(&w1), tb1.clone(), t(&w2), tb2.clone());
    for (name, fused) in [
        ("batchrules_vmap_linear", false),
        ("batchrules_vmap_fused", true),
    ] {
        let f = vmap(|x: Tensor| {
            let h = if fused {
                ops::linear_relu(&x, &p.0, Some(&p.1))?
            } else {
                ops::relu(&ops::linear(&x, &p.0, Some(&p.1))?)?
            };
            ops::log_softmax(&ops::linear(&h, &p.2, Some(&p.3))?, -1)
        });
        g.bench_function(name, |bch| bch.iter(|| black_box(f.call(&txs).unwrap())));
    }
    bench_gemm_limit(&mut g, W1_GEMMS);
    g.finish();
}

/// W1's batchrules side: the per-example MLP (weights `[in, out]`) under vmap.
fn mlp_batched(p: &Mlp, xs: &Tensor) -> Result<Tensor> {
    vmap(|x: Tensor| {
        let h = ops::relu(&ops::add(&ops::matmul(&x, &p.0)?, &p.1)?)?;
        ops::log_softmax(&ops::add(&ops::matmul(&h, &p.2)?, &p.3)?, -1)
    })
    .call(xs)
}

/// W2: vmap of add on [8, 4] against one ndarray add.
fn w2_add(c: &mut Criterion) {
    let (a, b) = (array(&[8, 4]), array(&[8, 4]));
    let (ta, tb) = (Tensor::from(a.clone()), Tensor::from(b.clone()));
    let mut g = c.benchmark_group("W2_add_8x4");
    g.bench_function("ndarray", |bch| bch.iter(|| black_box(&a + &b)));
    let f = vmap(|(x, y): (Tensor, Tensor)| ops::add(&x, &y));
    g.bench_function("batchrules_vmap", |bch| {
        bch.iter(|| black_box(f.call((&ta, &tb)).unwrap()))
    });
    g.finish();
}

/// W3: vmap(triu) on [64, 64, 64] against a hand-written ndarray mask.
fn w3_triu(c: &mut Criterion) {
    let m = array(&[64, 64, 64]);
    let tm = Tensor::from(m.clone());
    let mut g = c.benchmark_group("W3_triu_64x64x64");
    let m3 = m.clone().into_dimensionality::<ndarray::Ix3>().unwrap();
    g.bench_function("ndarray_mask", |bch| {
        bch.iter(|| {
            let mut out = m3.clone();
            Zip::indexed(&mut out).for_each(|(_, i, j), v| {
                if j < i {
                    *v = 0.0;
                }
            });
            black_box(out)
        })
    });
    let f = vmap(|x: Tensor| ops::triu(&x, 0));
    g.bench_function("batchrules_vmap", |bch| {
        bch.iter(|| black_box(f.call(&tm).unwrap()))
    });
    // triu reads the 1 MiB input and writes a 1 MiB output.
    bench_copy_limit(&mut g, 64 * 64 * 64 * 4);
    g.finish();
}

/// W4: the batching rule against the fallback loop, matmul [4, 4] @ [4, 4] and
/// add [8] + [8] per example, at several batch sizes.
fn w4_rule_vs_loop(c: &mut Criterion) {
    let mut g = c.benchmark_group("W4_rule_vs_loop");
    for b in [1usize, 16, 256, 1024] {
        let (x, y) = (tensor(&[b, 4, 4]), tensor(&[b, 4, 4]));
        let (u, v) = (tensor(&[b, 8]), tensor(&[b, 8]));
        let mm =
            vmap(|(x, y): (Tensor, Tensor)| ops::matmul(&x, &y)).fallback(FallbackPolicy::Silent);
        let add =
            vmap(|(x, y): (Tensor, Tensor)| ops::add(&x, &y)).fallback(FallbackPolicy::Silent);
        for (name, forced) in [("rule", false), ("loop", true)] {
            g.bench_with_input(
                BenchmarkId::new(format!("matmul_{name}"), b),
                &b,
                |bch, _| {
                    batchrules::__bench::set_force_fallback(forced);
                    bch.iter(|| black_box(mm.call((&x, &y)).unwrap()));
                    batchrules::__bench::set_force_fallback(false);
                },
            );
            g.bench_with_input(BenchmarkId::new(format!("add_{name}"), b), &b, |bch, _| {
                batchrules::__bench::set_force_fallback(forced);
                bch.iter(|| black_box(add.call((&u, &v)).unwrap()));
                batchrules::__bench::set_force_fallback(false);
            });
        }
    }
    g.finish();
}

/// W5: meta checks on against off, at small sizes (vmap and dense).
fn w5_meta(c: &mut Criterion) {
    let (a, b) = (tensor(&[8, 4]), tensor(&[8, 4]));
    let f = vmap(|(x, y): (Tensor, Tensor)| ops::add(&x, &y));
    let mut g = c.benchmark_group("W5_meta_checks");
    for (name, on) in [("vmap_add_checks_off", false), ("vmap_add_checks_on", true)] {
        g.bench_function(name, |bch| {
            batchrules::__bench::set_meta_checks(on);
            bch.iter(|| black_box(f.call((&a, &b)).unwrap()));
            batchrules::__bench::set_meta_checks(true);
        });
    }
    let (p, q) = (tensor(&[4]), tensor(&[4]));
    for (name, on) in [
        ("dense_add_checks_off", false),
        ("dense_add_checks_on", true),
    ] {
        g.bench_function(name, |bch| {
            batchrules::__bench::set_meta_checks(on);
            bch.iter(|| black_box(ops::add(&p, &q).unwrap()));
            batchrules::__bench::set_meta_checks(true);
        });
    }
    g.finish();
}

/// W6: add under vmap nested two deep against one level, same total work.
fn w6_nested(c: &mut Criterion) {
    let (a, b) = (tensor(&[16, 4]), tensor(&[16, 4]));
    let (a2, b2) = (tensor(&[4, 4, 4]), tensor(&[4, 4, 4]));
    let one = vmap(|(x, y): (Tensor, Tensor)| ops::add(&x, &y));
    let two = vmap(|(x, y): (Tensor, Tensor)| {
        vmap(|(p, q): (Tensor, Tensor)| ops::add(&p, &q)).call((&x, &y))
    });
    let mut g = c.benchmark_group("W6_nested");
    g.bench_function("one_level", |bch| {
        bch.iter(|| black_box(one.call((&a, &b)).unwrap()))
    });
    g.bench_function("two_levels", |bch| {
        bch.iter(|| black_box(two.call((&a2, &b2)).unwrap()))
    });
    g.finish();
}

/// W7: dense dispatch (no vmap) against the raw ndarray call.
fn w7_dense(c: &mut Criterion) {
    let mut g = c.benchmark_group("W7_dense_dispatch");
    for n in [4usize, 65_536] {
        let (a, b) = (array(&[n]), array(&[n]));
        let (ta, tb) = (Tensor::from(a.clone()), Tensor::from(b.clone()));
        g.bench_with_input(BenchmarkId::new("ndarray", n), &n, |bch, _| {
            bch.iter(|| black_box(&a + &b))
        });
        g.bench_with_input(BenchmarkId::new("batchrules", n), &n, |bch, _| {
            bch.iter(|| black_box(ops::add(&ta, &tb).unwrap()))
        });
        // The limit: the same bytes read and written (a and b into an output
        // allocated once), no allocation and no dispatch.
        let (sa, sb) = (a.as_slice().unwrap(), b.as_slice().unwrap());
        let mut out = vec![0.0f32; n];
        g.bench_with_input(BenchmarkId::new("limit_add", n), &n, |bch, _| {
            bch.iter(|| {
                for ((o, x), y) in out.iter_mut().zip(black_box(sa)).zip(black_box(sb)) {
                    *o = x + y;
                }
                black_box(&mut out);
            })
        });
    }
    g.finish();
}

/// W11: chains of pointwise ops with borrowed operands (`ops`) against
/// operands given by value (`owned`, which writes into a buffer nobody else
/// holds): `relu(x * s + b)` with a bias row on dense tensors and under
/// vmap (`vmap_affine_*`), and `relu(abs(neg(x)))` under vmap (cheap ops, so
/// the passes over memory dominate). At W1's hidden layer
/// `[256, 128]` (128 KiB) and at 8 MiB, with a copy of the bytes one fused
/// pass would move as the limit.
fn w11_pointwise_chain(c: &mut Criterion) {
    let mut g = c.benchmark_group("W11_pointwise_chain");
    for (rows, cols) in [(256usize, 128usize), (2048, 1024)] {
        let id = format!("{rows}x{cols}");
        let x = tensor(&[rows, cols]);
        let (scale, bias) = (Tensor::scalar(0.5f32), tensor(&[cols]));
        g.bench_function(BenchmarkId::new("ops", &id), |bch| {
            bch.iter(|| {
                let y = ops::relu(&ops::add(&ops::mul(&x, &scale).unwrap(), &bias).unwrap());
                black_box(y.unwrap())
            })
        });
        // `x` is held here, so `mul` writes a new buffer; `add` and `relu`
        // write into it.
        g.bench_function(BenchmarkId::new("owned", &id), |bch| {
            bch.iter(|| {
                let y = owned::mul(x.clone(), &scale)
                    .and_then(|y| owned::add(y, &bias))
                    .and_then(owned::relu);
                black_box(y.unwrap())
            })
        });
        let xs = tensor(&[rows, cols]);
        let by_ref = vmap(|x: Tensor| ops::relu(&ops::abs(&ops::neg(&x)?)?));
        let by_value = vmap(|x: Tensor| owned::relu(owned::abs(owned::neg(x)?)?));
        g.bench_function(BenchmarkId::new("vmap_ops", &id), |bch| {
            bch.iter(|| black_box(by_ref.call(&xs).unwrap()))
        });
        g.bench_function(BenchmarkId::new("vmap_owned", &id), |bch| {
            bch.iter(|| black_box(by_value.call(&xs).unwrap()))
        });
        // Binary ops under vmap: `mul` writes a new buffer (the caller holds
        // `xs`); `add` of the unbatched bias row and `relu` write into it.
        let affine_ref = vmap(|x: Tensor| ops::relu(&ops::add(&ops::mul(&x, &scale)?, &bias)?));
        let affine_value =
            vmap(|x: Tensor| owned::relu(owned::add(owned::mul(x, &scale)?, &bias)?));
        g.bench_function(BenchmarkId::new("vmap_affine_ops", &id), |bch| {
            bch.iter(|| black_box(affine_ref.call(&xs).unwrap()))
        });
        g.bench_function(BenchmarkId::new("vmap_affine_owned", &id), |bch| {
            bch.iter(|| black_box(affine_value.call(&xs).unwrap()))
        });
        // One fused pass reads the input and writes the output.
        let bytes = rows * cols * 4;
        let src: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
        let mut dst = vec![0u8; bytes];
        g.bench_function(BenchmarkId::new("limit_copy", &id), |bch| {
            bch.iter(|| {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            })
        });
    }
    g.finish();
}

/// R: the `rayon` feature, each case on a one-thread pool against the default
/// pool (all cores). Built only with `--features rayon`.
#[cfg(feature = "rayon")]
fn r_rayon(c: &mut Criterion) {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let all = rayon::ThreadPoolBuilder::new().build().unwrap();
    let (rows, x) = (tensor(&[1024, 64]), tensor(&[256, 1024]));
    let (m1, m2) = (tensor(&[256, 64, 64]), tensor(&[256, 64, 64]));
    let cumsum =
        vmap(|r: Tensor| downstream_ops::ops::cumsum(&r, 0)).fallback(FallbackPolicy::Silent);
    let add = vmap(|(p, q): (Tensor, Tensor)| ops::add(&p, &q));
    let mm = vmap(|(p, q): (Tensor, Tensor)| ops::matmul(&p, &q));
    // W1 and W8 at batch 1024.
    let w1_params = (
        tensor(&[64, 128]),
        tensor(&[128]),
        tensor(&[128, 10]),
        tensor(&[10]),
    );
    let w1_xs = tensor(&[1024, 64]);
    // W1 in `linear`'s layout (the bias add fused into `addmm`), as W1's
    // `batchrules_vmap_linear`.
    let w1_linear_params = (
        tensor(&[128, 64]),
        tensor(&[128]),
        tensor(&[10, 128]),
        tensor(&[10]),
    );
    let w1_linear = vmap(|x: Tensor| {
        let p = &w1_linear_params;
        let h = ops::relu(&ops::linear(&x, &p.0, Some(&p.1))?)?;
        ops::log_softmax(&ops::linear(&h, &p.2, Some(&p.3))?, -1)
    });
    let (w8_params, w8_xs, w8_ys) = w8_inputs(1024);
    let mut g = c.benchmark_group("R_rayon");
    // `all_threads_no_spin`: the same pool with `set_spin_window(0)`, so
    // workers sleep between regions as rayon decides (the same-run baseline
    // of the spin window).
    let spin = batchrules::tuning::DEFAULT_SPIN_WINDOW;
    let no_spin = std::time::Duration::ZERO;
    for (name, pool, window) in [
        ("1_thread", &one, spin),
        ("all_threads", &all, spin),
        ("all_threads_no_spin", &all, no_spin),
    ] {
        batchrules::tuning::set_spin_window(window);
        g.bench_function(BenchmarkId::new("fallback_cumsum_b1024", name), |bch| {
            pool.install(|| bch.iter(|| black_box(cumsum.call(&rows).unwrap())))
        });
        g.bench_function(BenchmarkId::new("add_b256x1024", name), |bch| {
            pool.install(|| bch.iter(|| black_box(add.call((&x, &x)).unwrap())))
        });
        g.bench_function(BenchmarkId::new("matmul_b256_64x64", name), |bch| {
            pool.install(|| bch.iter(|| black_box(mm.call((&m1, &m2)).unwrap())))
        });
        g.bench_function(BenchmarkId::new("W1_mlp_b1024", name), |bch| {
            pool.install(|| bch.iter(|| black_box(mlp_batched(&w1_params, &w1_xs).unwrap())))
        });
        g.bench_function(BenchmarkId::new("W1_mlp_linear_b1024", name), |bch| {
            pool.install(|| bch.iter(|| black_box(w1_linear.call(&w1_xs).unwrap())))
        });
        g.bench_function(BenchmarkId::new("W8_per_sample_grads_b1024", name), |bch| {
            pool.install(|| {
                bch.iter(|| black_box(per_sample_grads(&w8_params, &w8_xs, &w8_ys).unwrap()))
            })
        });
    }
    batchrules::tuning::set_spin_window(spin);
    g.finish();
}

/// The W1 MLP's parameters, in the layout of `linear` (weights `[out, in]`).
type Mlp = (Tensor, Tensor, Tensor, Tensor);

/// The loss of one example of W8: cross-entropy of the W1 MLP.
fn mlp_loss((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
    let h = ops::relu(&ops::linear(&x, &p.0, Some(&p.1))?)?;
    ops::cross_entropy(&ops::linear(&h, &p.2, Some(&p.3))?, &y, Reduction::Mean)
}

/// W8's loss with the first layer as `linear_relu` (bias and activation
/// fused into the product's output).
fn mlp_loss_fused((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
    let h = ops::linear_relu(&x, &p.0, Some(&p.1))?;
    ops::cross_entropy(&ops::linear(&h, &p.2, Some(&p.3))?, &y, Reduction::Mean)
}

/// W8's batchrules side: per-sample gradients by `vmap(grad)`.
fn per_sample_grads(params: &Mlp, xs: &Tensor, ys: &Tensor) -> Result<Mlp> {
    per_sample_grads_of(mlp_loss, params, xs, ys)
}

/// Per-sample gradients of `loss` by `vmap(grad)`.
fn per_sample_grads_of(
    loss: fn((Mlp, Tensor, Tensor)) -> Result<Tensor>,
    params: &Mlp,
    xs: &Tensor,
    ys: &Tensor,
) -> Result<Mlp> {
    vmap(move |(p, x, y): (Mlp, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((params, xs, ys))
}

/// W8's inputs at batch `b`: parameters in `linear`'s layout, examples and labels.
fn w8_inputs(b: usize) -> (Mlp, Tensor, Tensor) {
    let (d_in, d_h, d_out) = (64, 128, 10);
    let params: Mlp = (
        Tensor::from(array(&[d_h, d_in]).mapv(|v| v * 0.125)),
        tensor(&[d_h]),
        Tensor::from(array(&[d_out, d_h]).mapv(|v| v * 0.09)),
        tensor(&[d_out]),
    );
    let labels: Vec<i64> = (0..b).map(|i| ((i * 7 + 3) % d_out) as i64).collect();
    let ys = Tensor::from_shape_vec(&[b], labels).expect("labels");
    (params, tensor(&[b, d_in]), ys)
}

/// W8: per-sample gradients of the W1 MLP with cross-entropy, batch 256:
/// `vmap(grad)` against the loop of single-example grads and against
/// per-sample gradients batched by hand in ndarray.
fn w8_per_sample_grads(c: &mut Criterion) {
    let b = 256;
    let (params, txs, tys) = w8_inputs(b);
    let f32s = |t: &Tensor| t.to_array::<f32>().unwrap();
    let (xs, w1, b1, w2, b2) = (
        f32s(&txs),
        f32s(&params.0),
        f32s(&params.1),
        f32s(&params.2),
        f32s(&params.3),
    );
    let labels: Vec<i64> = tys.to_array::<i64>().unwrap().iter().copied().collect();
    let mut g = c.benchmark_group("W8_per_sample_grads_b256");
    g.bench_function("batchrules_vmap_grad", |bch| {
        bch.iter(|| black_box(per_sample_grads(&params, &txs, &tys).unwrap()))
    });
    g.bench_function("batchrules_jit", |bch| {
        let f = jit(|(p, xs, ys): (Mlp, Tensor, Tensor)| per_sample_grads(&p, &xs, &ys));
        bch.iter(|| black_box(f.call((&params, &txs, &tys)).unwrap()))
    });
    g.bench_function("batchrules_vmap_grad_fused", |bch| {
        bch.iter(|| black_box(per_sample_grads_of(mlp_loss_fused, &params, &txs, &tys).unwrap()))
    });
    g.bench_function("batchrules_loop_grad", |bch| {
        let examples: Vec<(Tensor, Tensor)> = (0..b)
            .map(|i| (txs.select(0, i).unwrap(), tys.select(0, i).unwrap()))
            .collect();
        bch.iter(|| {
            for (x, y) in &examples {
                black_box(grad(mlp_loss).call((&params, x, y)).unwrap());
            }
        })
    });
    g.bench_function("ndarray_handbatched", |bch| {
        let w1 = w1.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
        let w2 = w2.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
        let xs = xs.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
        let b1 = b1.clone().into_dimensionality::<ndarray::Ix1>().unwrap();
        let b2 = b2.clone().into_dimensionality::<ndarray::Ix1>().unwrap();
        bch.iter(|| {
            // Forward, batched by hand.
            let mut h: Array2<f32> = xs.dot(&w1.t()) + &b1;
            h.mapv_inplace(|v| v.max(0.0));
            let mut delta: Array2<f32> = h.dot(&w2.t()) + &b2;
            // delta = softmax(logits) - onehot(y), row by row.
            for (mut row, &y) in delta.axis_iter_mut(Axis(0)).zip(&labels) {
                let m = row.fold(f32::NEG_INFINITY, |a, &v| a.max(v));
                row.mapv_inplace(|v| (v - m).exp());
                let s = row.sum();
                row.mapv_inplace(|v| v / s);
                row[y as usize] -= 1.0;
            }
            // Per-sample outer products.
            let dw2 = &delta.view().insert_axis(Axis(2)) * &h.view().insert_axis(Axis(1));
            let mut dh = delta.dot(&w2);
            Zip::from(&mut dh).and(&h).for_each(|d, &a| {
                if a <= 0.0 {
                    *d = 0.0
                }
            });
            let dw1 = &dh.view().insert_axis(Axis(2)) * &xs.view().insert_axis(Axis(1));
            black_box((dw1, dh, dw2, delta))
        })
    });
    // The limits: writing the per-sample gradients (read and written once, as
    // a copy), and the GEMMs.
    bench_copy_limit(&mut g, W8_OUTPUT_BYTES);
    bench_gemm_limit(&mut g, W8_GEMMS);
    g.finish();
}

/// W9: the cost of `grad` itself on a 2-element input, against the same
/// function without grad.
fn w9_grad_overhead(c: &mut Criterion) {
    let x = tensor(&[2]);
    let f = |x: Tensor| ops::sum(&ops::mul(&x, &x)?, None, false);
    let mut g = c.benchmark_group("W9_grad_overhead_2");
    g.bench_function("batchrules_grad", |bch| {
        bch.iter(|| black_box(grad(f).call(&x).unwrap()))
    });
    g.bench_function("batchrules_forward", |bch| {
        bch.iter(|| black_box(f(x.clone()).unwrap()))
    });
    g.finish();
}

/// W10: the Jacobian of `tanh(W x + b)` by `jacrev` and by `jacfwd`, against
/// the loops of vjps (one pullback per output element) and of jvps (one
/// push-forward per input element), for 32 -> 2048 (tall: forward mode's
/// case) and 2048 -> 32 (wide: reverse mode's).
fn w10_jacobians(c: &mut Criterion) {
    let mut g = c.benchmark_group("W10_jacobians");
    g.sample_size(10);
    for (d_in, d_out) in [(32usize, 2048usize), (2048, 32)] {
        let w = Tensor::from(array(&[d_out, d_in]).mapv(|v| v * 0.05));
        let b = tensor(&[d_out]);
        let x = tensor(&[d_in]);
        let f = |x: Tensor| ops::tanh(&ops::linear(&x, &w, Some(&b))?);
        let name = format!("{d_in}to{d_out}");
        let unit = |n: usize, i: usize| {
            let mut v = vec![0.0f32; n];
            v[i] = 1.0;
            Tensor::from_shape_vec(&[n], v).unwrap()
        };
        g.bench_function(BenchmarkId::new("jacrev", &name), |bch| {
            bch.iter(|| black_box(jacrev(f).call(&x).unwrap()))
        });
        g.bench_function(BenchmarkId::new("jacfwd", &name), |bch| {
            bch.iter(|| black_box(jacfwd(f).call(&x).unwrap()))
        });
        g.bench_function(BenchmarkId::new("jacrev_jit", &name), |bch| {
            let j = jit(|x: Tensor| jacrev(f).call(&x));
            bch.iter(|| black_box(j.call(&x).unwrap()))
        });
        g.bench_function(BenchmarkId::new("jacfwd_jit", &name), |bch| {
            let j = jit(|x: Tensor| jacfwd(f).call(&x));
            bch.iter(|| black_box(j.call(&x).unwrap()))
        });
        g.bench_function(BenchmarkId::new("vjp_loop", &name), |bch| {
            let eye: Vec<Tensor> = (0..d_out).map(|i| unit(d_out, i)).collect();
            bch.iter(|| {
                let (_, pullback) = vjp(f, &x).unwrap();
                let rows: Vec<Tensor> = eye.iter().map(|e| pullback.call(e).unwrap()).collect();
                black_box(ops::stack(&rows, 0).unwrap())
            })
        });
        if (d_in, d_out) == (32, 2048) {
            bench_gemm_limit(&mut g, W10_GEMMS);
        }
        g.bench_function(BenchmarkId::new("jvp_loop", &name), |bch| {
            let eye: Vec<Tensor> = (0..d_in).map(|i| unit(d_in, i)).collect();
            bch.iter(|| {
                let cols: Vec<Tensor> = eye.iter().map(|e| jvp(f, &x, e).unwrap().1).collect();
                black_box(ops::stack(&cols, 1).unwrap())
            })
        });
    }
    g.finish();
}

/// Median of one benchmark, in ns, from criterion's estimates.
fn median(dir: &std::path::Path, id: &str) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join(id).join("new/estimates.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

/// (workload, variant, baseline variant) rows of the summary.
const ROWS: &[(&str, &str, &str)] = &[
    ("W1_mlp_b256", "batchrules_vmap", "ndarray_handbatched"),
    (
        "W1_mlp_b256",
        "batchrules_vmap_linear",
        "ndarray_handbatched",
    ),
    (
        "W1_mlp_b256",
        "batchrules_vmap_fused",
        "ndarray_handbatched",
    ),
    ("W1_mlp_b256", "limit_gemm", "limit_matrixmultiply"),
    ("W2_add_8x4", "batchrules_vmap", "ndarray"),
    ("W3_triu_64x64x64", "batchrules_vmap", "ndarray_mask"),
    ("W4_rule_vs_loop", "matmul_rule/1", "matmul_loop/1"),
    ("W4_rule_vs_loop", "matmul_rule/16", "matmul_loop/16"),
    ("W4_rule_vs_loop", "matmul_rule/256", "matmul_loop/256"),
    ("W4_rule_vs_loop", "matmul_rule/1024", "matmul_loop/1024"),
    ("W4_rule_vs_loop", "add_rule/1", "add_loop/1"),
    ("W4_rule_vs_loop", "add_rule/16", "add_loop/16"),
    ("W4_rule_vs_loop", "add_rule/256", "add_loop/256"),
    ("W4_rule_vs_loop", "add_rule/1024", "add_loop/1024"),
    (
        "W5_meta_checks",
        "vmap_add_checks_on",
        "vmap_add_checks_off",
    ),
    (
        "W5_meta_checks",
        "dense_add_checks_on",
        "dense_add_checks_off",
    ),
    ("W6_nested", "two_levels", "one_level"),
    ("W7_dense_dispatch", "batchrules/4", "ndarray/4"),
    ("W7_dense_dispatch", "batchrules/65536", "ndarray/65536"),
    (
        "W8_per_sample_grads_b256",
        "batchrules_vmap_grad",
        "ndarray_handbatched",
    ),
    (
        "W8_per_sample_grads_b256",
        "batchrules_vmap_grad",
        "batchrules_loop_grad",
    ),
    (
        "W8_per_sample_grads_b256",
        "batchrules_vmap_grad_fused",
        "ndarray_handbatched",
    ),
    (
        "W9_grad_overhead_2",
        "batchrules_grad",
        "batchrules_forward",
    ),
    ("W10_jacobians", "limit_gemm", "limit_matrixmultiply"),
    ("W10_jacobians", "jacrev/32to2048", "vjp_loop/32to2048"),
    ("W10_jacobians", "jacrev/2048to32", "vjp_loop/2048to32"),
    ("W10_jacobians", "jacfwd/32to2048", "jvp_loop/32to2048"),
    ("W10_jacobians", "jacfwd/2048to32", "jvp_loop/2048to32"),
    ("W10_jacobians", "jacfwd/32to2048", "jacrev/32to2048"),
    ("W10_jacobians", "jacfwd/2048to32", "jacrev/2048to32"),
    ("W11_pointwise_chain", "owned/256x128", "ops/256x128"),
    ("W11_pointwise_chain", "owned/2048x1024", "ops/2048x1024"),
    (
        "W11_pointwise_chain",
        "vmap_owned/256x128",
        "vmap_ops/256x128",
    ),
    (
        "W11_pointwise_chain",
        "vmap_owned/2048x1024",
        "vmap_ops/2048x1024",
    ),
    (
        "W11_pointwise_chain",
        "vmap_affine_owned/256x128",
        "vmap_affine_ops/256x128",
    ),
    (
        "W11_pointwise_chain",
        "vmap_affine_owned/2048x1024",
        "vmap_affine_ops/2048x1024",
    ),
    (
        "W12_mnist_per_sample_grads_b256",
        "batchrules_vmap_grad",
        "batchrules_loop_grad",
    ),
    (
        "W13_transformer_per_sample_grads_b32",
        "batchrules_vmap_grad",
        "batchrules_loop_grad",
    ),
    (
        "W14_dp_sgd_step_b256",
        "batchrules_step",
        "batchrules_per_sample_grads_only",
    ),
    (
        "R_rayon",
        "fallback_cumsum_b1024/all_threads",
        "fallback_cumsum_b1024/1_thread",
    ),
    (
        "R_rayon",
        "add_b256x1024/all_threads",
        "add_b256x1024/1_thread",
    ),
    (
        "R_rayon",
        "matmul_b256_64x64/all_threads",
        "matmul_b256_64x64/1_thread",
    ),
    (
        "R_rayon",
        "W1_mlp_b1024/all_threads",
        "W1_mlp_b1024/1_thread",
    ),
    (
        "R_rayon",
        "W8_per_sample_grads_b1024/all_threads",
        "W8_per_sample_grads_b1024/1_thread",
    ),
    (
        "R_rayon",
        "W1_mlp_linear_b1024/all_threads",
        "W1_mlp_linear_b1024/1_thread",
    ),
    (
        "R_rayon",
        "W1_mlp_b1024/all_threads_no_spin",
        "W1_mlp_b1024/1_thread",
    ),
    (
        "R_rayon",
        "W8_per_sample_grads_b1024/all_threads_no_spin",
        "W8_per_sample_grads_b1024/1_thread",
    ),
    (
        "R_rayon",
        "W1_mlp_b1024/all_threads",
        "W1_mlp_b1024/all_threads_no_spin",
    ),
    (
        "R_rayon",
        "W8_per_sample_grads_b1024/all_threads",
        "W8_per_sample_grads_b1024/all_threads_no_spin",
    ),
];

/// (workload, variant, limit variant, FLOPs of the GEMMs or 0 for a memory
/// limit) rows of the limits table.
fn limit_rows() -> Vec<(&'static str, &'static str, &'static str, f64)> {
    vec![
        (
            "W16_conv2d_b64",
            "batchrules",
            "limit_gemm",
            gemm_flops(W16_GEMMS),
        ),
        (
            "W17_conv2d_per_sample_grads_b64",
            "batchrules_vmap_grad",
            "limit_gemm",
            gemm_flops(&w17_weight_grad_gemms()),
        ),
        (
            "W1_mlp_b256",
            "batchrules_vmap",
            "limit_gemm",
            gemm_flops(W1_GEMMS),
        ),
        (
            "W1_mlp_b256",
            "batchrules_vmap_linear",
            "limit_gemm",
            gemm_flops(W1_GEMMS),
        ),
        (
            "W1_mlp_b256",
            "batchrules_vmap_fused",
            "limit_gemm",
            gemm_flops(W1_GEMMS),
        ),
        (
            "W1_mlp_b256",
            "ndarray_handbatched",
            "limit_gemm",
            gemm_flops(W1_GEMMS),
        ),
        ("W3_triu_64x64x64", "batchrules_vmap", "limit_copy", 0.0),
        ("W3_triu_64x64x64", "ndarray_mask", "limit_copy", 0.0),
        (
            "W7_dense_dispatch",
            "batchrules/65536",
            "limit_add/65536",
            0.0,
        ),
        ("W7_dense_dispatch", "ndarray/65536", "limit_add/65536", 0.0),
        (
            "W8_per_sample_grads_b256",
            "batchrules_vmap_grad",
            "limit_copy",
            0.0,
        ),
        (
            "W8_per_sample_grads_b256",
            "batchrules_vmap_grad",
            "limit_gemm",
            gemm_flops(W8_GEMMS),
        ),
        (
            "W8_per_sample_grads_b256",
            "batchrules_vmap_grad_fused",
            "limit_copy",
            0.0,
        ),
        (
            "W8_per_sample_grads_b256",
            "ndarray_handbatched",
            "limit_copy",
            0.0,
        ),
        (
            "W10_jacobians",
            "jacrev/32to2048",
            "limit_gemm",
            gemm_flops(W10_GEMMS),
        ),
        (
            "W11_pointwise_chain",
            "ops/2048x1024",
            "limit_copy/2048x1024",
            0.0,
        ),
        (
            "W11_pointwise_chain",
            "owned/2048x1024",
            "limit_copy/2048x1024",
            0.0,
        ),
    ]
}

/// The limits table: each workload against its physical limit measured in the
/// same run, with the GEMM FLOP rates where the limit is a GEMM.
fn limits_summary(dir: &std::path::Path) -> String {
    let mut out = String::from(
        "| workload | variant | median | limit | limit median | ratio to limit | GFLOP/s (variant / limit) |\n|---|---|---|---|---|---|---|\n",
    );
    for (group, variant, limit, flops) in limit_rows() {
        let g = dir.join(group);
        let (Some(m), Some(l)) = (median(&g, variant), median(&g, limit)) else {
            continue;
        };
        let rate = if flops > 0.0 {
            format!("{:.1} / {:.1}", flops / m, flops / l)
        } else {
            "-".to_string()
        };
        out.push_str(&format!(
            "| {group} | {variant} | {} | {limit} | {} | {:.2} | {rate} |\n",
            human(m),
            human(l),
            m / l,
        ));
    }
    out
}

fn summary() {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("target"))
        .join("criterion");
    let mut out = String::from(
        "| workload | variant | median | baseline | baseline median | ratio | difference |\n|---|---|---|---|---|---|---|\n",
    );
    for (group, variant, base) in ROWS {
        let g = dir.join(group);
        let (Some(m), Some(b)) = (median(&g, variant), median(&g, base)) else {
            continue;
        };
        out.push_str(&format!(
            "| {group} | {variant} | {} | {base} | {} | {:.3} | {} |\n",
            human(m),
            human(b),
            m / b,
            human(m - b)
        ));
    }
    let limits = limits_summary(&dir);
    println!("\n{out}\n{limits}");
    let _ = std::fs::write(dir.join("summary.md"), format!("{out}\n{limits}"));
}

fn human(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// W12: per-sample gradients of the DP-SGD paper's MNIST CNN, batch 256
/// (`models`), by `vmap(grad)` against the loop of single-example grads.
fn w12_mnist_per_sample_grads(c: &mut Criterion) {
    let p = models::MnistCnn::new().unwrap();
    let (x, y) = models::mnist_inputs().unwrap();
    let grads = models::mnist_per_sample_grads(&p, &x, &y).unwrap();
    println!(
        "W12 checksum (sum, sum of |.|): {:?}",
        models::checksum(&grads)
    );
    let examples: Vec<(Tensor, Tensor)> = (0..models::MNIST_BATCH)
        .map(|i| (x.select(0, i).unwrap(), y.select(0, i).unwrap()))
        .collect();
    let mut g = c.benchmark_group("W12_mnist_per_sample_grads_b256");
    g.sample_size(10);
    g.bench_function("batchrules_vmap_grad", |bch| {
        bch.iter(|| black_box(models::mnist_per_sample_grads(&p, &x, &y).unwrap()))
    });
    g.bench_function("batchrules_jit", |bch| {
        let f = jit(|(p, x, y): (models::MnistCnn, Tensor, Tensor)| {
            models::mnist_per_sample_grads(&p, &x, &y)
        });
        bch.iter(|| black_box(f.call((&p, &x, &y)).unwrap()))
    });
    g.bench_function("batchrules_loop_grad", |bch| {
        bch.iter(|| black_box(models::mnist_loop_grads(&p, &examples).unwrap()))
    });
    g.finish();
}

/// W13: per-sample gradients of example 5's transformer block, batch 32.
fn w13_transformer_per_sample_grads(c: &mut Criterion) {
    let p = models::Block::new().unwrap();
    let (x, y) = models::transformer_inputs().unwrap();
    let grads = models::transformer_per_sample_grads(&p, &x, &y).unwrap();
    println!(
        "W13 checksum (sum, sum of |.|): {:?}",
        models::checksum(&grads)
    );
    let examples: Vec<(Tensor, Tensor)> = (0..models::TRANSFORMER_BATCH)
        .map(|i| (x.select(0, i).unwrap(), y.select(0, i).unwrap()))
        .collect();
    let mut g = c.benchmark_group("W13_transformer_per_sample_grads_b32");
    g.sample_size(10);
    g.bench_function("batchrules_vmap_grad", |bch| {
        bch.iter(|| black_box(models::transformer_per_sample_grads(&p, &x, &y).unwrap()))
    });
    // The first call of a new `jit` traces, plans and replays once.
    let f = jit(|(p, x, y): (models::Block, Tensor, Tensor)| {
        models::transformer_per_sample_grads(&p, &x, &y)
    });
    let start = std::time::Instant::now();
    black_box(f.call((&p, &x, &y)).unwrap());
    let first = start.elapsed();
    let start = std::time::Instant::now();
    black_box(f.call((&p, &x, &y)).unwrap());
    println!(
        "W13 jit first call (trace, plan, replay): {:.2} ms; a replay: {:.2} ms",
        first.as_secs_f64() * 1e3,
        start.elapsed().as_secs_f64() * 1e3
    );
    g.bench_function("batchrules_jit", |bch| {
        bch.iter(|| black_box(f.call((&p, &x, &y)).unwrap()))
    });
    g.bench_function("batchrules_loop_grad", |bch| {
        bch.iter(|| black_box(models::transformer_loop_grads(&p, &examples).unwrap()))
    });
    g.finish();
}

/// W14: one DP-SGD step of W12 (per-sample gradients, clipping, noise,
/// update), against W12's per-sample gradients alone.
fn w14_dp_sgd_step(c: &mut Criterion) {
    let p = models::MnistCnn::new().unwrap();
    let (x, y) = models::mnist_inputs().unwrap();
    let mut g = c.benchmark_group("W14_dp_sgd_step_b256");
    g.sample_size(10);
    g.bench_function("batchrules_step", |bch| {
        bch.iter(|| black_box(models::dp_sgd_step(&p, &x, &y, 1).unwrap()))
    });
    g.bench_function("batchrules_per_sample_grads_only", |bch| {
        bch.iter(|| black_box(models::mnist_per_sample_grads(&p, &x, &y).unwrap()))
    });
    g.finish();
}

/// W15: the empirical NTK of example 2's CNN between two batches of 16, by
/// the Jacobian contraction (vmap of jacrev per batch, einsum).
fn w15_ntk(c: &mut Criterion) {
    let p = models::NtkCnn::new().unwrap();
    let (x1, x2) = models::ntk_inputs().unwrap();
    models::print_checksum("W15", || models::ntk(&p, &x1, &x2));
    let mut g = c.benchmark_group("W15_ntk_2x16");
    g.sample_size(10);
    g.bench_function("batchrules_jacobian_contraction", |bch| {
        bch.iter(|| black_box(models::ntk(&p, &x1, &x2).unwrap()))
    });
    g.finish();
}

/// W16/W17's layer: input `[64, 32, 28, 28]`, weight `[64, 32, 3, 3]`,
/// padding 1 (stride 1): a `[64, 64, 28, 28]` output.
const CONV_BATCH: usize = 64;
const CONV_IN: [usize; 4] = [CONV_BATCH, 32, 28, 28];
const CONV_WEIGHT: [usize; 4] = [64, 32, 3, 3];
/// The GEMM that forward reduces to: weight `[64, 288]` times the blocks of
/// all 64 images `[288, 64 * 784]`.
const W16_GEMMS: &[(usize, usize, usize)] = &[(64, 32 * 9, CONV_BATCH * 28 * 28)];

/// The GEMMs of the per-sample weight gradients alone: for each example, the
/// output gradient `[64, 784]` times its blocks transposed `[784, 288]`
/// (what `jax.jit` computes; batchrules also runs forward, `W16_GEMMS`).
fn w17_weight_grad_gemms() -> Vec<(usize, usize, usize)> {
    vec![(64, 28 * 28, 32 * 9); CONV_BATCH]
}

fn conv_layer(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    ops::conv2d(x, w, None, &[1], &[1], &[1], 1)
}

/// W16: `conv2d` forward (`conv2d_tiled`: im2col of one example at a time into a
/// scratch, each block multiplied straight into the output) against the GEMM it
/// reduces to.
fn w16_conv2d(c: &mut Criterion) {
    let (x, w) = (tensor(&CONV_IN), tensor(&CONV_WEIGHT));
    let mut g = c.benchmark_group("W16_conv2d_b64");
    g.sample_size(10);
    g.bench_function("batchrules", |bch| {
        bch.iter(|| black_box(conv_layer(&x, &w).unwrap()))
    });
    // The same with room for its buffers in the per-thread cache (im2col's
    // 58 MB and the output's 13 MB are more than the default 64 MiB keeps,
    // so each call gets fresh pages from the system and faults them in).
    g.bench_function("batchrules_cache256", |bch| {
        batchrules::tuning::set_buffer_cache_limit(256 << 20);
        bch.iter(|| black_box(conv_layer(&x, &w).unwrap()));
        batchrules::tuning::set_buffer_cache_limit(batchrules::tuning::DEFAULT_BUFFER_CACHE_LIMIT);
    });
    g.bench_function("unfold", |bch| {
        bch.iter(|| black_box(ops::unfold(&x, &[3], &[1], &[1], &[1]).unwrap()))
    });
    bench_gemm_limit(&mut g, W16_GEMMS);
    g.finish();
}

/// W17: per-sample weight gradients of the W16 layer, `vmap(grad)` of the
/// sum of one example's outputs (`[32, 28, 28]`), batch 64, with the
/// fallback loop forbidden; against the per-example GEMMs of the gradients.
fn w17_conv2d_per_sample_grads(c: &mut Criterion) {
    let (xs, w) = (tensor(&CONV_IN), tensor(&CONV_WEIGHT));
    let per_sample_of = |(w, xs): (Tensor, Tensor)| -> Result<Tensor> {
        vmap(|(w, x): (Tensor, Tensor)| {
            grad(|(w, x): (Tensor, Tensor)| ops::sum(&conv_layer(&x, &w)?, None, false))
                .call((&w, &x))
        })
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&w, &xs))
    };
    let per_sample = || per_sample_of((w.clone(), xs.clone()));
    assert_eq!(per_sample().unwrap().shape(), &[64, 64, 32, 3, 3]);
    let mut g = c.benchmark_group("W17_conv2d_per_sample_grads_b64");
    g.sample_size(10);
    g.bench_function("batchrules_vmap_grad", |bch| {
        bch.iter(|| black_box(per_sample().unwrap()))
    });
    g.bench_function("batchrules_jit", |bch| {
        let f = jit(per_sample_of);
        bch.iter(|| black_box(f.call((&w, &xs)).unwrap()))
    });
    g.bench_function("batchrules_vmap_grad_cache256", |bch| {
        batchrules::tuning::set_buffer_cache_limit(256 << 20);
        bch.iter(|| black_box(per_sample().unwrap()));
        batchrules::tuning::set_buffer_cache_limit(batchrules::tuning::DEFAULT_BUFFER_CACHE_LIMIT);
    });
    bench_gemm_limit(&mut g, &w17_weight_grad_gemms());
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    w1_mlp(&mut c);
    w2_add(&mut c);
    w3_triu(&mut c);
    w4_rule_vs_loop(&mut c);
    w5_meta(&mut c);
    w6_nested(&mut c);
    w7_dense(&mut c);
    w8_per_sample_grads(&mut c);
    w9_grad_overhead(&mut c);
    w10_jacobians(&mut c);
    w11_pointwise_chain(&mut c);
    w12_mnist_per_sample_grads(&mut c);
    w13_transformer_per_sample_grads(&mut c);
    w14_dp_sgd_step(&mut c);
    w15_ntk(&mut c);
    w16_conv2d(&mut c);
    w17_conv2d_per_sample_grads(&mut c);
    #[cfg(feature = "rayon")]
    r_rayon(&mut c);
    c.final_summary();
    summary();
}
