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

// ---------------------------------------------------------------------------
// jacrev / jacfwd: several outputs, trees of outputs, several argnums, has_aux.
// Translated from TestJac in test_eager_transforms.py, where each case runs
// for both jacrev and jacfwd (`@jacrev_and_jacfwd`); `both_modes!` does the
// same here.

use std::collections::BTreeMap;

/// A 1-d f64 tensor.
fn vec1(v: &[f64]) -> Tensor {
    Tensor::from_shape_vec(&[v.len()], v.to_vec()).unwrap()
}

/// The `n x n` matrix with `d` on its diagonal.
fn diag(d: &[f64]) -> Tensor {
    let n = d.len();
    let mut m = vec![0.0; n * n];
    for (i, &v) in d.iter().enumerate() {
        m[i * n + i] = v;
    }
    Tensor::from_shape_vec(&[n, n], m).unwrap()
}

/// `c` times the `n x n` identity.
fn eye_times(n: usize, c: f64) -> Tensor {
    diag(&vec![c; n])
}

fn assert_close(a: &Tensor, b: &Tensor) {
    assert_eq!(a.shape(), b.shape(), "shapes differ");
    assert!(
        a.allclose(b, 1e-9, 1e-12).unwrap(),
        "{:?}\n  !=\n{:?}",
        a.to_array::<f64>().unwrap(),
        b.to_array::<f64>().unwrap()
    );
}

/// Asserts two trees have the same leaves (shapes and values).
fn assert_tree_close<T: TensorTree>(a: &T, b: &T) {
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    a.leaves(&mut la);
    b.leaves(&mut lb);
    assert_eq!(la.len(), lb.len(), "trees have different leaf counts");
    for (x, y) in la.iter().zip(&lb) {
        assert_close(x, y);
    }
}

fn three() -> (Tensor, Tensor) {
    (vec1(&[0.3, -1.2, 0.8]), vec1(&[1.5, 0.1, -0.4]))
}

macro_rules! both_modes {
    ($(#[$doc:meta])* fn $name:ident($jac:ident, $jac_aux:ident) $body:block) => {
        $(#[$doc])*
        mod $name {
            use super::*;
            #[test]
            fn jacrev_mode() -> Result<()> {
                #[allow(unused_imports)]
                use batchrules::{jacrev as $jac, jacrev_with_aux as $jac_aux};
                $body
            }
            #[test]
            fn jacfwd_mode() -> Result<()> {
                #[allow(unused_imports)]
                use batchrules::{jacfwd as $jac, jacfwd_with_aux as $jac_aux};
                $body
            }
        }
    };
}

both_modes! {
    /// test_multiple_outputs_multiple_argnums and
    /// test_multiple_outputs_single_argnums: a pair of outputs and a pair of
    /// arguments give a pair (per output) of pairs (per argument).
    fn multiple_outputs_and_argnums(jac, _jac_aux) {
        let f = |(x, y): (Tensor, Tensor)| Ok((((2.0 * &x)? + (3.0 * &y)?)?, ((4.0 * &x)? + (5.0 * &y)?)?));
        let (x, y) = three();
        let ((d0x, d0y), (d1x, d1y)) = jac(f).argnums2::<0, 1>().call((&x, &y))?;
        assert_close(&d0x, &eye_times(3, 2.0));
        assert_close(&d0y, &eye_times(3, 3.0));
        assert_close(&d1x, &eye_times(3, 4.0));
        assert_close(&d1y, &eye_times(3, 5.0));
        // One argument: one Jacobian per output.
        let (d0x, d1x) = jac(f).call((&x, &y))?;
        assert_close(&d0x, &eye_times(3, 2.0));
        assert_close(&d1x, &eye_times(3, 4.0));
        // The selection's order is kept: (1, 0) gives (d/dy, d/dx).
        let ((d0y, d0x), _) = jac(f).argnums2::<1, 0>().call((&x, &y))?;
        assert_close(&d0y, &eye_times(3, 3.0));
        assert_close(&d0x, &eye_times(3, 2.0));
        Ok(())
    }
}

both_modes! {
    /// test_multiple_outputs_pytree: a map of outputs gives a map of
    /// Jacobians with the same keys.
    fn map_of_outputs(jac, _jac_aux) {
        let f = |(x, y): (Tensor, Tensor)| {
            Ok(BTreeMap::from([
                ("left".to_string(), ((2.0 * &x)? + (3.0 * &y)?)?),
                ("right".to_string(), ((4.0 * &x)? + (5.0 * &y)?)?),
            ]))
        };
        let (x, y) = three();
        let z = jac(f).argnums2::<0, 1>().call((&x, &y))?;
        assert_eq!(z.keys().collect::<Vec<_>>(), ["left", "right"]);
        assert_close(&z["left"].0, &eye_times(3, 2.0));
        assert_close(&z["left"].1, &eye_times(3, 3.0));
        assert_close(&z["right"].0, &eye_times(3, 4.0));
        assert_close(&z["right"].1, &eye_times(3, 5.0));
        Ok(())
    }
}

both_modes! {
    /// test_multiple_inputs_pytree: argument 0 is itself a pair; the
    /// derivative keeps its structure.
    fn tree_arguments(jac, _jac_aux) {
        let f = |((a0, a1), b, c): ((Tensor, Tensor), Tensor, Tensor)| {
            ((&a0 + (2.0 * &a1)?)? + (3.0 * &b)?)? + (4.0 * &c)?
        };
        let x = Tensor::scalar(0.7f64);
        let pair = (x.clone(), x.clone());
        let ((da0, da1), db, dc) = jac(f).argnums3::<0, 1, 2>().call((&pair, &x, &x))?;
        for (d, want) in [(&da0, 1.0), (&da1, 2.0), (&db, 3.0), (&dc, 4.0)] {
            assert_close(d, &Tensor::scalar(want));
        }
        let (da0, da1) = jac(f).call((&pair, &x, &x))?;
        assert_close(&da0, &Tensor::scalar(1.0f64));
        assert_close(&da1, &Tensor::scalar(2.0f64));
        Ok(())
    }
}

both_modes! {
    /// test_multiple_inputs_outputs_pytree: trees in and out, with
    /// derivatives that are zero where an output does not use an argument.
    fn tree_inputs_and_outputs(jac, _jac_aux) {
        let f = |((a0, a1), b, c): ((Tensor, Tensor), Tensor, Tensor)| {
            let foo = ((3.0 * &b)? + (4.0 * &c)?)?;
            Ok(((&a0 + (2.0 * &a1)?)?, BTreeMap::from([("foo".to_string(), foo)])))
        };
        let x = Tensor::scalar(-0.4f64);
        let pair = (x.clone(), x.clone());
        let (one, two, three, zero) =
            (Tensor::scalar(1.0f64), Tensor::scalar(2.0f64), Tensor::scalar(3.0f64), Tensor::scalar(0.0f64));
        let (d_a, d_foo) = jac(f).call((&pair, &x, &x))?;
        assert_tree_close(&d_a, &(one.clone(), two.clone()));
        assert_tree_close(&d_foo["foo"], &(zero.clone(), zero.clone()));
        let (d_a, d_foo) = jac(f).argnums2::<0, 1>().call((&pair, &x, &x))?;
        assert_tree_close(&d_a, &((one, two), zero.clone()));
        assert_tree_close(&d_foo["foo"], &((zero.clone(), zero), three));
        Ok(())
    }
}

both_modes! {
    /// test_multiple_inputs_outputs_pytree_multidim: a map in, a map out:
    /// a map (per output) of maps (per input), of 3 x 3 blocks.
    fn map_in_map_out(jac, _jac_aux) {
        let f = |d: BTreeMap<String, Tensor>| {
            Ok(BTreeMap::from([("c".to_string(), d["a"].sin()?), ("d".to_string(), d["b"].cos()?)]))
        };
        let (x, _) = three();
        let arg = BTreeMap::from([("a".to_string(), x.clone()), ("b".to_string(), x.clone())]);
        let r = jac(f).call(&arg)?;
        let xs: Vec<f64> = x.to_array::<f64>()?.iter().copied().collect();
        let cos: Vec<f64> = xs.iter().map(|v| v.cos()).collect();
        let neg_sin: Vec<f64> = xs.iter().map(|v| -v.sin()).collect();
        assert_close(&r["c"]["a"], &diag(&cos));
        assert_close(&r["c"]["b"], &eye_times(3, 0.0));
        assert_close(&r["d"]["a"], &eye_times(3, 0.0));
        assert_close(&r["d"]["b"], &diag(&neg_sin));
        Ok(())
    }
}

both_modes! {
    /// test_unrelated_input and test_outputs_can_any_pytree: an argument the
    /// output does not use gets zeros; Vec and nested outputs keep their form.
    fn unrelated_input_and_nested_outputs(jac, _jac_aux) {
        let x = Tensor::from(array![[0.1f64, 0.2, 0.3], [0.4, 0.5, 0.6]].into_dyn());
        let y = ops::mul(&x, &x)?;
        let (dx, dy) = jac(|(x, _y): (Tensor, Tensor)| Ok(x)).argnums2::<0, 1>().call((&x, &y))?;
        assert_close(&dx, &ops::reshape(&eye_times(6, 1.0), &[2, 3, 2, 3])?);
        assert_close(&dy, &ops::zeros(&[2, 3, 2, 3], DType::F64)?);
        // A Vec of two outputs.
        let out = jac(|x: Tensor| Ok(vec![x.clone(), x.sum()?])).call(&x)?;
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].shape(), &[2, 3]);
        // [(sum, (x, [x, sum]))]: the same nesting, each leaf a Jacobian.
        let nested = jac(|x: Tensor| {
            let s = x.sum()?;
            Ok(vec![(s.clone(), (x.clone(), vec![x, s]))])
        })
        .call(&x)?;
        let (ds, (dx, list)) = &nested[0];
        assert_close(ds, &ops::ones(&[2, 3], DType::F64)?);
        assert_eq!(dx.shape(), &[2, 3, 2, 3]);
        assert_eq!(list.len(), 2);
        assert_close(&list[1], ds);
        Ok(())
    }
}

both_modes! {
    /// test_empty_output and test_repeated_argnums: errors, not panics.
    fn empty_output_and_repeated_argnums_are_errors(jac, _jac_aux) {
        let (x, y) = three();
        let err = jac(|_x: Tensor| Ok(Vec::<Tensor>::new())).call(&x).unwrap_err();
        assert!(err.to_string().contains("no tensor"), "{err}");
        let err = jac(|(x, y): (Tensor, Tensor)| &x * &y)
            .argnums2::<0, 0>()
            .call((&x, &y))
            .unwrap_err();
        assert!(err.to_string().contains("names argument 0 twice"), "{err}");
        Ok(())
    }
}

both_modes! {
    /// test_aux_tensor and test_aux_pytree: the aux output, a tensor or a
    /// tree, comes back as `f` computed it; the Jacobian is that of the
    /// first output only.
    fn with_aux(_jac, jac_aux) {
        let (x, _) = three();
        let (j, aux) = jac_aux(|x: Tensor| Ok((x.clone(), x.cos()?))).call(&x)?;
        assert_close(&j, &eye_times(3, 1.0));
        assert_close(&aux, &x.cos()?);
        let (j, aux) = jac_aux(|x: Tensor| {
            let tree = BTreeMap::from([("a".to_string(), vec![x.cos()?]), ("b".to_string(), vec![x.exp()?])]);
            Ok((x.clone(), tree))
        })
        .call(&x)?;
        assert_close(&j, &eye_times(3, 1.0));
        assert_close(&aux["a"][0], &x.cos()?);
        assert_close(&aux["b"][0], &x.exp()?);
        // has_aux with several outputs and arguments.
        let (x, y) = three();
        let (((a, b), (c, d)), aux) = jac_aux(|(x, y): (Tensor, Tensor)| {
            Ok(((( &x * &y)?, (&x + &y)?), x.sum()?))
        })
        .argnums2::<0, 1>()
        .call((&x, &y))?;
        let (xs, ys): (Vec<f64>, Vec<f64>) =
            (x.to_array::<f64>()?.iter().copied().collect(), y.to_array::<f64>()?.iter().copied().collect());
        assert_close(&a, &diag(&ys));
        assert_close(&b, &diag(&xs));
        assert_close(&c, &eye_times(3, 1.0));
        assert_close(&d, &eye_times(3, 1.0));
        assert_close(&aux, &x.sum()?);
        Ok(())
    }
}

both_modes! {
    /// test_chunk_jacrev: every chunk size gives the Jacobian of the whole,
    /// for a tree of outputs and two arguments.
    fn chunks_agree(jac, _jac_aux) {
        let x = ops::randn(&[10, 2], 3, DType::F64)?;
        let y = ops::randn(&[1, 2], 4, DType::F64)?;
        let f = |(x, y): (Tensor, Tensor)| Ok(((x.sin()?, (&x + &y)?), ((&x + 2.0)?, x.sum()?)));
        let whole = jac(f).argnums2::<0, 1>().call((&x, &y))?;
        for chunk in [1, 2, 3, 4, 7, 10, 1000] {
            let part = jac(f).argnums2::<0, 1>().chunk_size(chunk).call((&x, &y))?;
            assert_tree_close(&part, &whole);
        }
        assert!(jac(f).chunk_size(0).call((&x, &y)).is_err());
        Ok(())
    }
}

/// A central finite-difference Jacobian of `f` (one output) in its one
/// argument, `[out.., in..]`, in f64.
fn fd_jacobian(f: impl Fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> Result<Tensor> {
    let eps = 1e-6;
    let xs: Vec<f64> = x.to_array::<f64>()?.iter().copied().collect();
    let y = f(x)?;
    let m = y.shape().iter().product::<usize>();
    let mut jac = vec![0.0; m * xs.len()];
    for j in 0..xs.len() {
        let at = |d: f64| -> Result<Vec<f64>> {
            let mut v = xs.clone();
            v[j] += d;
            let out = f(&Tensor::from_shape_vec(x.shape(), v)?)?;
            Ok(out.to_array::<f64>()?.iter().copied().collect())
        };
        let (hi, lo) = (at(eps)?, at(-eps)?);
        for i in 0..m {
            jac[i * xs.len() + j] = (hi[i] - lo[i]) / (2.0 * eps);
        }
    }
    let mut shape = y.shape().to_vec();
    shape.extend_from_slice(x.shape());
    Tensor::from_shape_vec(&shape, jac)
}

/// test_against_reference_multi_input_multi_output: three outputs of two
/// matrix arguments; jacrev and jacfwd agree with each other and with
/// finite differences (torch checks against torch.autograd.functional).
#[test]
fn several_outputs_against_finite_differences() -> Result<()> {
    let x = ops::randn(&[5, 3], 11, DType::F64)?;
    let y = ops::randn(&[3, 5], 12, DType::F64)?;
    let f = |(x, y): (Tensor, Tensor)| {
        let a = (&x * &x)?.matmul(&y)?;
        let b = x.matmul(
            &(x.sum_keepdim(1)?
                .reshape(&[1, 5])?
                .matmul(&y.transpose(0, 1)?)?
                .mul(&Tensor::scalar(0.1f64))?
                .sum_dim(0)?
                .reshape(&[3, 1])?
                * &y)?,
        )?;
        Ok((a, b, y.sum()?))
    };
    let rev = jacrev(f).argnums2::<0, 1>().call((&x, &y))?;
    let fwd = jacfwd(f).argnums2::<0, 1>().call((&x, &y))?;
    assert_tree_close(&rev, &fwd);
    let outputs = |x: &Tensor, y: &Tensor| f((x.clone(), y.clone()));
    let fd = [
        (fd_jacobian(|x| Ok(outputs(x, &y)?.0), &x)?, &rev.0 .0),
        (fd_jacobian(|y| Ok(outputs(&x, y)?.0), &y)?, &rev.0 .1),
        (fd_jacobian(|x| Ok(outputs(x, &y)?.1), &x)?, &rev.1 .0),
        (fd_jacobian(|y| Ok(outputs(&x, y)?.1), &y)?, &rev.1 .1),
        (fd_jacobian(|x| Ok(outputs(x, &y)?.2), &x)?, &rev.2 .0),
        (fd_jacobian(|y| Ok(outputs(&x, y)?.2), &y)?, &rev.2 .1),
    ];
    for (want, got) in fd {
        assert_eq!(want.shape(), got.shape());
        assert!(got.allclose(&want, 1e-5, 1e-6)?);
    }
    Ok(())
}

/// test_chunk_jacrev_composition: vmap of jacrev of jacrev of a function
/// with a tree of outputs, chunked and not.
#[test]
fn chunked_nested_jacrev_under_vmap() -> Result<()> {
    let x = ops::randn(&[10, 2], 21, DType::F64)?;
    let f = |x: Tensor| Ok(((x.sin()?, x.clone()), ((&x + 2.0)?, x.sum()?)));
    let whole = vmap(|x: Tensor| jacrev(|x: Tensor| jacrev(f).call(&x)).call(&x)).call(&x)?;
    let chunked = vmap(|x: Tensor| {
        jacrev(|x: Tensor| jacrev(f).chunk_size(3).call(&x))
            .chunk_size(3)
            .call(&x)
    })
    .call(&x)?;
    assert_tree_close(&chunked, &whole);
    // d²sin(x)/dx² = -sin(x) on the diagonal.
    let ((dd_sin, _), _) = &whole;
    assert_eq!(dd_sin.shape(), &[10, 2, 2, 2]);
    Ok(())
}

// ---------------------------------------------------------------------------
// hessian with argnums and trees (TestHessian).

/// test_hessian_vectorize_correctness_multi_input: the nested blocks of a
/// function of three matrices, against reverse over reverse.
#[test]
fn hessian_of_three_arguments_matches_reverse_over_reverse() -> Result<()> {
    let x = ops::randn(&[2, 3], 31, DType::F64)?;
    let y = ops::randn(&[3, 5], 32, DType::F64)?;
    let z = ops::randn(&[5, 5], 33, DType::F64)?;
    let f = |(x, y, z): (Tensor, Tensor, Tensor)| {
        (&x.relu()? * &x)?.matmul(&y.sin()?)?.matmul(&z)?.sum()
    };
    let h = hessian(f).argnums3::<0, 1, 2>().call((&x, &y, &z))?;
    let rr = jacrev(|(x, y, z): (Tensor, Tensor, Tensor)| {
        grad(f).argnums3::<0, 1, 2>().call((&x, &y, &z))
    })
    .argnums3::<0, 1, 2>()
    .call((&x, &y, &z))?;
    assert_tree_close(&h, &rr);
    assert_eq!(h.0 .1.shape(), &[2, 3, 3, 5]);
    assert_eq!(h.2 .0.shape(), &[5, 5, 2, 3]);
    // One argument chosen: the block of y alone.
    let hyy = hessian(f).argnums::<1>().call((&x, &y, &z))?;
    assert_close(&hyy, &h.1 .1);
    Ok(())
}

/// test_hessian_vectorize_correctness_unrelated_outputs: zero blocks where
/// the function does not use an argument, and all zeros for a constant.
#[test]
fn hessian_of_unrelated_arguments_is_zero() -> Result<()> {
    let x = vec1(&[0.5, -2.0]);
    let y = vec1(&[1.0, 2.0, 3.0]);
    let ((hxx, hxy), (hyx, hyy)) = hessian(|(x, _y): (Tensor, Tensor)| (&x * &x)?.sum())
        .argnums2::<0, 1>()
        .call((&x, &y))?;
    assert_close(&hxx, &eye_times(2, 2.0));
    assert_close(&hxy, &ops::zeros(&[2, 3], DType::F64)?);
    assert_close(&hyx, &ops::zeros(&[3, 2], DType::F64)?);
    assert_close(&hyy, &ops::zeros(&[3, 3], DType::F64)?);
    let ((a, _), (_, d)) = hessian(|(_x, _y): (Tensor, Tensor)| Ok(Tensor::scalar(1.0f64)))
        .argnums2::<0, 1>()
        .call((&x, &y))?;
    assert_close(&a, &ops::zeros(&[2, 2], DType::F64)?);
    assert_close(&d, &ops::zeros(&[3, 3], DType::F64)?);
    Ok(())
}

/// test_jacfwd_different_levels: vmap of hessian equals vmap of jacrev of
/// jacrev, for a loss of three arguments differentiated in the first.
#[test]
fn hessian_under_vmap_matches_jacrev_of_jacrev() -> Result<()> {
    let (b, n, d) = (4, 10, 2);
    let x1 = ops::randn(&[b, n, d], 41, DType::F64)?;
    let a = (ops::randn(&[b, d, d], 42, DType::F64)? * 0.1)?;
    let loss = |(a, x1, x2): (Tensor, Tensor, Tensor)| {
        let x2_hat = a.matmul(&x1.transpose(0, 1)?)?.transpose(0, 1)?;
        let res = (&x2 - &x2_hat)?;
        (&res * &res)?.sum()
    };
    let h1 = vmap(|(a, x1, x2): (Tensor, Tensor, Tensor)| {
        jacrev(|(a, x1, x2): (Tensor, Tensor, Tensor)| jacrev(loss).call((&a, &x1, &x2)))
            .call((&a, &x1, &x2))
    })
    .call((&a, &x1, &x1))?;
    let h2 = vmap(|(a, x1, x2): (Tensor, Tensor, Tensor)| hessian(loss).call((&a, &x1, &x2)))
        .call((&a, &x1, &x1))?;
    assert_eq!(h2.shape(), &[b as usize, 2, 2, 2, 2]);
    assert_close(&h2, &h1);
    Ok(())
}

/// A hessian in a tuple argument: nested as torch.func nests the Hessian of
/// a tuple input, block [i][j] = d²f / d x_i d x_j.
#[test]
fn hessian_of_a_tuple_argument() -> Result<()> {
    let p = (vec1(&[0.3, 0.7]), Tensor::scalar(1.5f64));
    // f(w, s) = s² * sum(w²): d²/dw² = 2 s² I, d²/dw ds = 4 s w, d²/ds² = 2 sum(w²).
    let ((hww, hws), (hsw, hss)) =
        hessian(|(w, s): (Tensor, Tensor)| (&s * &s)? * (&w * &w)?.sum()?).call(&p)?;
    assert_close(&hww, &eye_times(2, 2.0 * 1.5 * 1.5));
    assert_close(&hws, &vec1(&[4.0 * 1.5 * 0.3, 4.0 * 1.5 * 0.7]));
    assert_close(&hsw, &hws);
    assert_close(&hss, &Tensor::scalar(2.0 * (0.09 + 0.49)));
    Ok(())
}

// ---------------------------------------------------------------------------
// grad / value_and_grad with several argnums (TestGradTransform.test_argnums).

#[test]
fn grad_with_several_argnums() -> Result<()> {
    let x = vec1(&[1.0, 2.0]);
    let y = vec1(&[3.0, -1.0, 0.5]);
    let z = Tensor::scalar(2.0f64);
    // f = sum(x) * sum(y) * z: d/dx = sum(y) z, d/dy = sum(x) z, d/dz = sum(x) sum(y).
    let f = |(x, y, z): (Tensor, Tensor, Tensor)| (x.sum()? * y.sum()?)? * &z;
    let (gx, gy) = grad(f).argnums2::<0, 1>().call((&x, &y, &z))?;
    assert_close(&gx, &vec1(&[5.0, 5.0]));
    assert_close(&gy, &vec1(&[6.0, 6.0, 6.0]));
    let (gz, gx) = grad(f).argnums2::<2, 0>().call((&x, &y, &z))?;
    assert_close(&gz, &Tensor::scalar(7.5f64));
    assert_close(&gx, &vec1(&[5.0, 5.0]));
    let (v, (gx, gy, gz)) = value_and_grad(f).argnums3::<0, 1, 2>().call((&x, &y, &z))?;
    assert_close(&v, &Tensor::scalar(15.0f64));
    assert_close(&gy, &vec1(&[6.0, 6.0, 6.0]));
    assert_close(&gz, &Tensor::scalar(7.5f64));
    assert_close(&gx, &vec1(&[5.0, 5.0]));
    // Under vmap: per-example gradients in two arguments.
    let xs = ops::randn(&[4, 2], 51, DType::F64)?;
    let (gxs, gys) = vmap(|x: Tensor| grad(f).argnums2::<0, 1>().call((&x, &y, &z))).call(&xs)?;
    assert_eq!(gxs.shape(), &[4, 2]);
    assert_eq!(gys.shape(), &[4, 3]);
    let err = grad(f)
        .argnums3::<0, 1, 0>()
        .call((&x, &y, &z))
        .unwrap_err();
    assert!(
        err.to_string().starts_with("grad: argnums3::<0, 1, 0>()"),
        "{err}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// jvp_with_aux (TestJvp.test_aux_tensor, test_aux_pytree).

#[test]
fn jvp_with_aux_tensor_and_tree() -> Result<()> {
    let (x, t) = three();
    let (out, jvp_out, aux) = jvp_with_aux(|z: Tensor| Ok((z.sin()?, z.cos()?)), &x, &t)?;
    assert_close(&aux, &x.cos()?);
    assert_close(&out, &x.sin()?);
    assert_close(&jvp_out, &(&t * &x.cos()?)?);
    let (out, jvp_out, aux) = jvp_with_aux(
        |x: Tensor| {
            let tree = BTreeMap::from([
                ("a".to_string(), vec![x.cos()?]),
                ("b".to_string(), vec![x.exp()?]),
            ]);
            Ok((x.sin()?, tree))
        },
        &x,
        &t,
    )?;
    assert_close(&out, &x.sin()?);
    assert_close(&jvp_out, &(&t * &x.cos()?)?);
    assert_close(&aux["a"][0], &x.cos()?);
    assert_close(&aux["b"][0], &x.exp()?);
    Ok(())
}

// ---------------------------------------------------------------------------
// vmap out_dims None (test_vmap.py: test_out_dims_none, test_out_dims_none_tuple).

#[test]
fn vmap_out_dims_none() -> Result<()> {
    let tensor = ops::randn(&[2, 3], 61, DType::F64)?;
    // A batched output under out_dims None is an error naming vmap.
    let err = vmap(|x: Tensor| Ok(x))
        .out_dims(None)
        .call(&tensor)
        .unwrap_err();
    assert!(err.to_string().contains("vmap"), "{err}");
    // An output that does not depend on the batch comes back as it is.
    let c = vec1(&[1.0, 2.0]);
    let same = vmap(|_x: Tensor| Ok(c.clone()))
        .out_dims(None)
        .call(&tensor)?;
    assert_close(&same, &c);
    // One batched output and one not.
    let (xs, k) = vmap(|x: Tensor| Ok((x, c.clone())))
        .out_dims([Some(0), None])
        .call(&tensor)?;
    assert_close(&xs, &tensor);
    assert_close(&k, &c);
    // The unbatched output marked batched gets the batch dim, broadcast.
    let (_, k) = vmap(|x: Tensor| Ok((x, c.clone())))
        .out_dims([0, 0])
        .call(&tensor)?;
    assert_eq!(k.shape(), &[2, 2]);
    // Marking the batched output None is the error.
    let err = vmap(|x: Tensor| Ok((x, c.clone())))
        .out_dims([None, Some(0)])
        .call(&tensor)
        .unwrap_err();
    assert!(err.to_string().contains("vmap"), "{err}");
    Ok(())
}

// ---------------------------------------------------------------------------
// linearize under vmap (TestLinearize: the jvp_fn composes with vmap).

#[test]
fn linearize_under_vmap() -> Result<()> {
    let x = vec1(&[0.2, -0.5, 1.1]);
    let (_, jvp_fn) = linearize(|x: Tensor| Ok((x.sin()?, (&x * &x)?)), &x)?;
    // vmap over a batch of tangents: each row is J t for that tangent.
    let ts = ops::randn(&[5, 3], 71, DType::F64)?;
    let (a, b) = vmap(|t: Tensor| jvp_fn.call(&t)).call(&ts)?;
    assert_eq!(a.shape(), &[5, 3]);
    let (_, (ja, jb)) = jvp(
        |x: Tensor| Ok((x.sin()?, (&x * &x)?)),
        &x,
        &ops::narrow(&ts, 0, 2, 1)?.reshape(&[3])?,
    )?;
    assert_close(&ops::narrow(&a, 0, 2, 1)?.reshape(&[3])?, &ja);
    assert_close(&ops::narrow(&b, 0, 2, 1)?.reshape(&[3])?, &jb);
    // The basis of tangents gives the Jacobian: vmap(jvp_fn)(I) = J^T rows.
    let eye = eye_times(3, 1.0);
    let (cols, _) = vmap(|t: Tensor| jvp_fn.call(&t)).call(&eye)?;
    let j = jacfwd(|x: Tensor| x.sin()).call(&x)?;
    assert_close(&cols, &j.transpose(0, 1)?);
    // linearize itself under vmap over the primals.
    let xs = ops::randn(&[4, 3], 72, DType::F64)?;
    let t = vec1(&[1.0, 0.5, -1.0]);
    let per_x = vmap(|x: Tensor| {
        let (_, f) = linearize(|x: Tensor| x.sin(), &x)?;
        f.call(&t)
    })
    .call(&xs)?;
    assert_close(&per_x, &(&xs.cos()? * &t)?);
    Ok(())
}
