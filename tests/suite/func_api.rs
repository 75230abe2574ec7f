//! torch.func's `has_aux` variants and `linearize`, translated from functorch's
//! test/functorch/test_eager_transforms.py.

use batchrules::prelude::*;
use ndarray::array;

// From TestVjp.test_vjp_has_aux: the aux output is the direct computation,
// the pullback is that of the main output.
#[test]
fn vjp_with_aux_matches_vjp_and_direct_aux() -> Result<()> {
    let x = Tensor::from(array![0.5f64, -1.0, 2.0].into_dyn());
    let (y, pullback, aux) = vjp_with_aux(|x: Tensor| Ok((ops::sin(&x)?, ops::cos(&x)?)), &x)?;
    assert!(y.allclose(&ops::sin(&x)?, 1e-12, 0.0)?);
    assert!(aux.allclose(&ops::cos(&x)?, 1e-12, 0.0)?);
    let ct = Tensor::from(array![1.0f64, 2.0, 3.0].into_dyn());
    let g = pullback.call(&ct)?;
    assert!(g.allclose(&ops::mul(&ops::cos(&x)?, &ct)?, 1e-12, 0.0)?);
    Ok(())
}

// From TestLinearize.test_basic: linearize's jvp_fn agrees with jvp, called
// several times with different tangents.
#[test]
fn linearize_matches_jvp_repeatedly() -> Result<()> {
    let x = Tensor::from(array![0.0f64, 1.0, -0.7].into_dyn());
    let (y, jvp_fn) = linearize(|x: Tensor| ops::sin(&x), &x)?;
    assert!(y.allclose(&ops::sin(&x)?, 1e-12, 0.0)?);
    for t in [array![1.0f64, 0.0, 2.0], array![-3.0f64, 0.5, 1.0]] {
        let t = Tensor::from(t.into_dyn());
        let (_, jt) = jvp(|x: Tensor| ops::sin(&x), &x, &t)?;
        assert!(jvp_fn.call(&t)?.allclose(&jt, 1e-12, 0.0)?);
    }
    // Error case: a tangent of the wrong shape is an Err, not a panic.
    let bad = Tensor::from(array![1.0f64, 2.0].into_dyn());
    assert!(jvp_fn.call(&bad).is_err());
    Ok(())
}
