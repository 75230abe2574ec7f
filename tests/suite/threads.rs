//! One thread and two give the same bits: the model workloads W12-W17
//! (`benches/models`, and W16/W17's conv layer), each run on a rayon pool of
//! one thread (every kernel serial), of two and of three (odd pieces), and
//! compared bit for bit. The batches are smaller than the benchmarks' but
//! large enough that the elementwise, GEMM, conv, pooling and fallback
//! kernels take their parallel paths (at least 2^17 values).

use batchrules::prelude::*;
use batchrules::FallbackPolicy;

#[allow(dead_code)]
#[path = "../../benches/models/mod.rs"]
pub(crate) mod models;

use crate::common::bits;

/// The bits of every leaf of `t`, in order.
pub(crate) fn leaf_bits<T: TensorTree>(t: &T) -> Vec<Vec<u64>> {
    tree_leaves(t).into_iter().map(|(_, l)| bits(&l)).collect()
}

/// `f` on pools of 1, 2 and 3 threads; the results' bits agree.
fn same_bits_on_1_2_3_threads<T: TensorTree + Send>(name: &str, f: impl Fn() -> Result<T> + Sync) {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        assert_eq!(pool.install(batchrules::tuning::num_threads), threads);
        leaf_bits(&pool.install(&f).unwrap())
    };
    let one = run(1);
    assert!(!one.is_empty());
    for threads in [2, 3] {
        let many = run(threads);
        assert_eq!(one.len(), many.len());
        for (i, (a, b)) in one.iter().zip(&many).enumerate() {
            assert!(
                a == b,
                "{name}: leaf {i} differs between 1 and {threads} threads"
            );
        }
    }
}

pub(crate) fn first(t: &Tensor, n: i64) -> Tensor {
    t.narrow(0, 0, n).unwrap()
}

#[test]
fn w12_and_w14_mnist_cnn_per_sample_grads_and_dp_sgd_step() {
    let p = models::MnistCnn::new().unwrap();
    let (x, y) = models::mnist_inputs().unwrap();
    let (x, y) = (first(&x, 48), first(&y, 48));
    same_bits_on_1_2_3_threads("W12", || models::mnist_per_sample_grads(&p, &x, &y));
    same_bits_on_1_2_3_threads("W14", || models::dp_sgd_step(&p, &x, &y, 7));
}

#[test]
fn w13_transformer_per_sample_grads() {
    let p = models::Block::new().unwrap();
    let (x, y) = models::transformer_inputs().unwrap();
    same_bits_on_1_2_3_threads("W13", || models::transformer_per_sample_grads(&p, &x, &y));
}

#[test]
fn w15_ntk() {
    let p = models::NtkCnn::new().unwrap();
    let (x1, x2) = models::ntk_inputs().unwrap();
    let (x1, x2) = (first(&x1, 3), first(&x2, 2));
    same_bits_on_1_2_3_threads("W15", || models::ntk(&p, &x1, &x2));
}

/// W16/W17's layer at a batch of 8: the forward, and the per-sample weight
/// gradients.
#[test]
fn w16_and_w17_conv2d_forward_and_per_sample_weight_grads() {
    let values = |n: usize, scale: f32| -> Vec<f32> {
        (0..n)
            .map(|i| ((i as f32) * 0.0137).sin() * scale)
            .collect()
    };
    let x = Tensor::from_shape_vec(&[8, 32, 28, 28], values(8 * 32 * 28 * 28, 1.0)).unwrap();
    let w = Tensor::from_shape_vec(&[64, 32, 3, 3], values(64 * 32 * 9, 0.05)).unwrap();
    same_bits_on_1_2_3_threads("W16", || ops::conv2d(&x, &w, None, &[1], &[1], &[1], 1));
    same_bits_on_1_2_3_threads("W17", || {
        vmap(|(w, x): (Tensor, Tensor)| {
            grad(|(w, x): (Tensor, Tensor)| {
                ops::conv2d(&x.unsqueeze(0)?, &w, None, &[1], &[1], &[1], 1)?.sum()
            })
            .call((&w, &x))
        })
        .in_dims([None, Some(0)])
        .fallback(FallbackPolicy::Error)
        .call((&w, &x))
    });
}

#[test]
fn set_num_threads_refuses_zero_and_names_itself() {
    let err = batchrules::tuning::set_num_threads(0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("set_num_threads"), "{err}");
}

/// Reductions along one dim split their lanes across threads: the same bits
/// on 1, 2 and 3 threads, for every dim of a tensor large enough to split,
/// contiguous and transposed, and each lane added in order (against a fold
/// written here).
#[test]
fn reductions_along_a_dim_split_across_threads_give_the_same_bits() {
    let shape = [37usize, 61, 83];
    let n: usize = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.731).sin() * 1e3).collect();
    let x = Tensor::from_shape_vec(&shape, values.clone()).unwrap();
    let xt = x.transpose(0, 2).unwrap();
    for t in [&x, &xt] {
        for d in 0..3i64 {
            same_bits_on_1_2_3_threads("sum", || ops::sum(t, Some(d), false));
            same_bits_on_1_2_3_threads("amax", || ops::amax(t, Some(d), true));
        }
    }
    // Lane (i, k) of the sum over dim 1 is its values added in order.
    let sum = ops::sum(&x, Some(1), false)
        .unwrap()
        .to_array::<f32>()
        .unwrap();
    for (i, k) in [(0, 0), (17, 40), (36, 82)] {
        let want = (0..shape[1]).fold(0.0f32, |acc, j| {
            acc + values[(i * shape[1] + j) * shape[2] + k]
        });
        assert_eq!(sum[[i, k]].to_bits(), want.to_bits());
    }
}
