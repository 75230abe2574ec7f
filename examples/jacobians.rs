//! Jacobians and Hessians: `cargo run --example jacobians`.
//!
//! `jacrev` of `tanh(W x)` against its analytic Jacobian `diag(1 - tanh²) W`;
//! `hessian` of `sum(sin(x))` against `diag(-sin(x))` and of a quadratic form
//! `xᵀ A x` against `A + Aᵀ` (forward over reverse); `jacfwd` against the same
//! analytic Jacobian; `hvp` against `(A + Aᵀ) v`; and `vmap(hessian(f))`
//! against the loop.

use batchrules::{hessian, hvp, jacfwd, jacrev, ops, vmap, Error, Result, Tensor};
use ndarray::{Array1, Array2, ArrayD};

fn max_diff(a: &ArrayD<f64>, b: &ArrayD<f64>) -> Result<f64> {
    if a.shape() != b.shape() {
        return Err(Error::Tensor(format!(
            "shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    Ok(a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max))
}

fn check(what: &str, got: &Tensor, want: ArrayD<f64>) -> Result<()> {
    let diff = max_diff(&got.to_array::<f64>()?, &want)?;
    println!(
        "{what}: shape {:?}, max |difference| from the analytic value {diff:.1e}",
        got.shape()
    );
    if diff < 1e-12 {
        Ok(())
    } else {
        Err(Error::Tensor(format!("{what} differs by {diff:e}")))
    }
}

fn main() -> Result<()> {
    let w = Array2::from_shape_fn((3, 2), |(i, j)| 0.3 * i as f64 - 0.2 * j as f64 + 0.1);
    let x = Array1::from(vec![0.7, -1.3]);
    let wt = Tensor::from(w.clone().into_dyn());
    let xt = Tensor::from(x.clone().into_dyn());

    // Jacobian of tanh(W x): [3, 2].
    let j = jacrev(|x: Tensor| ops::tanh(&ops::mv(&wt, &x)?)).call(&xt)?;
    let h = w.dot(&x).mapv(f64::tanh);
    let want = Array2::from_shape_fn((3, 2), |(i, k)| (1.0 - h[i] * h[i]) * w[[i, k]]);
    check("jacrev(tanh(W x))", &j, want.clone().into_dyn())?;
    // The same Jacobian by forward mode: one jvp per input element.
    let j = jacfwd(|x: Tensor| ops::tanh(&ops::mv(&wt, &x)?)).call(&xt)?;
    check("jacfwd(tanh(W x))", &j, want.into_dyn())?;

    // Hessian of sum(sin(x)) = diag(-sin(x)).
    let x4 = Array1::from(vec![0.5f64, -0.25, 1.5, 3.0]);
    let h = hessian(|x: Tensor| ops::sum(&ops::sin(&x)?, None, false))
        .call(&Tensor::from(x4.clone().into_dyn()))?;
    let want = Array2::from_shape_fn((4, 4), |(i, k)| if i == k { -x4[i].sin() } else { 0.0 });
    check("hessian(sum(sin(x)))", &h, want.into_dyn())?;

    // Hessian of x^T A x = A + A^T.
    let a = Array2::from_shape_fn((3, 3), |(i, k)| (i * 3 + k) as f64 * 0.5 - 1.0);
    let at = Tensor::from(a.clone().into_dyn());
    let x3 = Tensor::from(Array1::from(vec![1.0, 2.0, -1.0]).into_dyn());
    let h = hessian(|x: Tensor| ops::dot(&x, &ops::mv(&at, &x)?)).call(&x3)?;
    check("hessian(x^T A x)", &h, (&a + &a.t()).into_dyn())?;

    // Hessian-vector product (forward over reverse) of x^T A x: (A + A^T) v,
    // without forming the Hessian.
    let v = Array1::from(vec![0.5, -1.0, 2.0]);
    let hv = hvp(
        |x: Tensor| ops::dot(&x, &ops::mv(&at, &x)?),
        &x3,
        &Tensor::from(v.clone().into_dyn()),
    )?;
    check("hvp(x^T A x, v)", &hv, (&a + &a.t()).dot(&v).into_dyn())?;

    // vmap(hessian(f)) against the loop over a batch of 5 points.
    let f = |x: Tensor| ops::sum(&ops::mul(&ops::sin(&x)?, &ops::exp(&x)?)?, None, false);
    let xs = Array2::from_shape_fn((5, 3), |(i, k)| 0.2 * i as f64 - 0.3 * k as f64);
    let batched =
        vmap(|x: Tensor| hessian(f).call(&x)).call(&Tensor::from(xs.clone().into_dyn()))?;
    let mut worst = 0.0f64;
    for i in 0..5 {
        let one = hessian(f).call(&Tensor::from(xs.row(i).to_owned().into_dyn()))?;
        worst = worst.max(max_diff(
            &batched.select(0, i)?.to_array::<f64>()?,
            &one.to_array::<f64>()?,
        )?);
    }
    println!("vmap(hessian(f)) over 5 points: max |difference| from the loop {worst:.1e}");
    if worst > 1e-12 {
        return Err(Error::Tensor(format!(
            "vmap(hessian) differs from the loop by {worst:e}"
        )));
    }
    Ok(())
}
