//! The `rayon` feature's parallel paths give the same results as the serial ones
//! (run with `cargo test --features rayon --test parallel`).
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

#[test]
fn large_elementwise_kernels() {
    let (a, b) = (big(&[300, 400], 0.0), big(&[300, 400], 1.0));
    let (ta, tb) = (Tensor::from(a.clone()), Tensor::from(b.clone()));
    assert_eq!(
        ops::add(&ta, &tb).unwrap().to_array::<f64>().unwrap(),
        &a + &b
    );
    assert_eq!(
        ops::exp(&ta).unwrap().to_array::<f64>().unwrap(),
        a.mapv(f64::exp)
    );
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
