//! Forward mode end to end: jvp, jacfwd, hvp and hessian against analytic
//! derivatives, reverse mode and finite differences, composed with vmap in
//! both orders and with grad, and their errors.

use batchrules::testing::{check_jacobians, check_jvp, check_jvp_compositions};
use batchrules::{
    grad, hessian, hvp, jacfwd, jacrev, jvp, ops, vjp, vmap, Error, FallbackPolicy, Result, Tensor,
};
use ndarray::{ArrayD, IxDyn};

fn t64(shape: &[usize], seed: u64) -> Tensor {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2_000_000) as f64 / 1_000_000.0 - 1.0
        })
        .collect();
    Tensor::from(ArrayD::from_shape_vec(IxDyn(shape), v).unwrap())
}

fn arr(t: &Tensor) -> ArrayD<f64> {
    t.to_array::<f64>().unwrap()
}

fn assert_close(a: &Tensor, b: &Tensor, tol: f64) {
    assert_eq!(a.shape(), b.shape(), "shapes differ");
    let (a, b) = (arr(a), arr(b));
    for (x, y) in a.iter().zip(b.iter()) {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{x} vs {y}\n{a:?}\n{b:?}"
        );
    }
}

fn sum(x: &Tensor) -> Result<Tensor> {
    ops::sum(x, None, false)
}

#[test]
fn jvp_of_a_linear_map_is_the_map_of_the_tangent() -> Result<()> {
    let x = t64(&[3, 4], 1);
    let v = t64(&[3, 4], 2);
    let f = |x: Tensor| ops::sum(&ops::transpose(&ops::triu(&x, 0)?, 0, 1)?, Some(1), false);
    let (y, dy) = jvp(f, &x, &v)?;
    assert_close(&y, &f(x.clone())?, 0.0);
    assert_close(&dy, &f(v.clone())?, 1e-15);
    Ok(())
}
