//! Forward mode end to end: jvp, jacfwd, hvp and hessian against analytic
//! derivatives, reverse mode and finite differences, composed with vmap in
//! both orders and with grad, and their errors.

use batchrules::testing::{check_jacobians, check_jvp, check_jvp_compositions};
use batchrules::{
    grad, hessian, hvp, jacfwd, jacrev, jvp, ops, vjp, vmap, Error, FallbackPolicy, Result, Tensor,
};

use crate::common;
use common::{arr, assert_close, sum, t64};

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

#[test]
fn jvp_of_sin_is_cos_times_the_tangent() -> Result<()> {
    let x = t64(&[2, 3], 3);
    let v = t64(&[2, 3], 4);
    let (y, dy) = jvp(|x: Tensor| ops::sin(&x), &x, &v)?;
    assert_close(&y, &ops::sin(&x)?, 0.0);
    assert_close(&dy, &ops::mul(&ops::cos(&x)?, &v)?, 1e-15);
    Ok(())
}

#[test]
fn jvp_of_several_inputs_and_outputs() -> Result<()> {
    // f(w, x) = (w x, sum((w x)²)); d f = (dw x + w dx, 2 <w x, dw x + w dx>).
    let (w, x) = (t64(&[3, 4], 5), t64(&[4], 6));
    let (dw, dx) = (t64(&[3, 4], 7), t64(&[4], 8));
    let f = |(w, x): (Tensor, Tensor)| -> Result<(Tensor, Tensor)> {
        let y = ops::mv(&w, &x)?;
        let s = sum(&ops::mul(&y, &y)?)?;
        Ok((y, s))
    };
    let ((y, s), (dy, ds)) = jvp(f, (&w, &x), (&dw, &dx))?;
    let want_dy = ops::add(&ops::mv(&dw, &x)?, &ops::mv(&w, &dx)?)?;
    assert_close(&dy, &want_dy, 1e-14);
    let want_ds = ops::mul(&sum(&ops::mul(&y, &want_dy)?)?, &Tensor::scalar(2.0f64))?;
    assert_close(&ds, &want_ds, 1e-14);
    assert_close(&s, &sum(&ops::mul(&y, &y)?)?, 0.0);
    Ok(())
}

#[test]
fn an_output_that_does_not_depend_on_the_inputs_has_a_zero_tangent() -> Result<()> {
    let x = t64(&[3], 9);
    let c = t64(&[2], 10);
    let (_, (dx, dc)) = jvp(
        |x: Tensor| Ok((ops::exp(&x)?, ops::sin(&c)?)),
        &x,
        &t64(&[3], 11),
    )?;
    assert_eq!(dx.shape(), &[3]);
    assert_eq!(arr(&dc).iter().copied().collect::<Vec<_>>(), vec![0.0, 0.0]);
    Ok(())
}

fn mlp(w: &Tensor, b: &Tensor, x: &Tensor) -> Result<Tensor> {
    ops::tanh(&ops::add(&ops::mv(w, x)?, b)?)
}

#[test]
fn jacfwd_equals_jacrev_for_every_argument_and_chunk_size() -> Result<()> {
    let (w, b, x) = (t64(&[5, 3], 12), t64(&[5], 13), t64(&[3], 14));
    let f = |(w, b, x): (Tensor, Tensor, Tensor)| mlp(&w, &b, &x);
    let rev_w = jacrev(f).call((&w, &b, &x))?;
    let rev_x = jacrev(f).argnums::<2>().call((&w, &b, &x))?;
    assert_eq!(rev_w.shape(), &[5, 5, 3]);
    for chunk in [None, Some(1), Some(4), Some(15), Some(100)] {
        let (fw, fx) = match chunk {
            Some(c) => (
                jacfwd(f).chunk_size(c).call((&w, &b, &x))?,
                jacfwd(f).argnums::<2>().chunk_size(c).call((&w, &b, &x))?,
            ),
            None => (
                jacfwd(f).call((&w, &b, &x))?,
                jacfwd(f).argnums::<2>().call((&w, &b, &x))?,
            ),
        };
        assert_close(&fw, &rev_w, 1e-14);
        assert_close(&fx, &rev_x, 1e-14);
    }
    Ok(())
}

#[derive(batchrules::TensorTree)]
struct Layer {
    w: Tensor,
    b: Tensor,
}

#[test]
fn jacfwd_of_a_struct_argument_has_its_structure() -> Result<()> {
    let layer = Layer {
        w: t64(&[2, 3], 15),
        b: t64(&[2], 16),
    };
    let x = t64(&[3], 17);
    let f = |(l, x): (Layer, Tensor)| mlp(&l.w, &l.b, &x);
    let fwd = jacfwd(f).call((&layer, &x))?;
    let rev = jacrev(f).call((&layer, &x))?;
    assert_eq!(fwd.w.shape(), &[2, 2, 3]);
    assert_eq!(fwd.b.shape(), &[2, 2]);
    assert_close(&fwd.w, &rev.w, 1e-14);
    assert_close(&fwd.b, &rev.b, 1e-14);
    Ok(())
}

#[test]
fn hessian_forward_over_reverse_equals_reverse_over_reverse_and_the_analytic_one() -> Result<()> {
    let x = t64(&[4], 18);
    let f = |x: Tensor| sum(&ops::sin(&x)?);
    let h = hessian(f).call(&x)?;
    let rev = jacrev(|x: Tensor| grad(f).call(&x)).call(&x)?;
    assert_close(&h, &rev, 1e-14);
    let s = arr(&ops::sin(&x)?);
    let h = arr(&h);
    for i in 0..4 {
        for j in 0..4 {
            let want = if i == j { -s[[i]] } else { 0.0 };
            assert!((h[[i, j]] - want).abs() < 1e-14, "{h:?}");
        }
    }
    // xᵀ A x has Hessian A + Aᵀ, at any chunk size.
    let a = t64(&[4, 4], 19);
    let q = |x: Tensor| ops::dot(&x, &ops::mv(&a, &x)?);
    let want = ops::add(&a, &ops::transpose(&a, 0, 1)?)?;
    assert_close(&hessian(q).call(&x)?, &want, 1e-14);
    assert_close(&hessian(q).chunk_size(3).call(&x)?, &want, 1e-14);
    Ok(())
}

#[test]
fn hvp_forward_over_reverse_equals_reverse_over_reverse() -> Result<()> {
    let (w, x) = (t64(&[3, 4], 20), t64(&[4], 21));
    let v = t64(&[4], 22);
    let f = |x: Tensor| sum(&mlp(&w, &ops::zeros(&[3], batchrules::DType::F64)?, &x)?);
    let fwd = hvp(f, &x, &v)?;
    // Reverse over reverse: the gradient of <grad f(x), v>.
    let rev = grad(|x: Tensor| ops::dot(&grad(f).call(&x)?, &v)).call(&x)?;
    assert_close(&fwd, &rev, 1e-13);
    // And the full Hessian times v.
    let hv = ops::mv(&hessian(f).call(&x)?, &v)?;
    assert_close(&fwd, &hv, 1e-13);
    Ok(())
}

#[test]
fn vmap_of_jvp_and_jvp_of_vmap_equal_the_loop() -> Result<()> {
    let w = t64(&[3, 4], 23);
    let xs = t64(&[5, 4], 24);
    let vs = t64(&[5, 4], 25);
    let f = |x: Tensor| ops::tanh(&ops::mv(&w, &x)?);
    let batched =
        vmap(|(x, v): (Tensor, Tensor)| jvp(f, &x, &v).map(|(_, d)| d)).call((&xs, &vs))?;
    let outer = jvp(|xs: Tensor| vmap(f).call(&xs), &xs, &vs)?.1;
    for k in 0..5 {
        let x = xs.select(0, k)?;
        let v = vs.select(0, k)?;
        let want = jvp(f, &x, &v)?.1;
        assert_close(&batched.select(0, k)?, &want, 1e-14);
        assert_close(&outer.select(0, k)?, &want, 1e-14);
    }
    Ok(())
}

#[test]
fn vmap_of_hessian_equals_the_loop() -> Result<()> {
    let xs = t64(&[3, 4], 26);
    let f = |x: Tensor| sum(&ops::mul(&ops::sin(&x)?, &ops::exp(&x)?)?);
    let hs = vmap(|x: Tensor| hessian(f).call(&x)).call(&xs)?;
    assert_eq!(hs.shape(), &[3, 4, 4]);
    for k in 0..3 {
        let want = hessian(f).call(&xs.select(0, k)?)?;
        assert_close(&hs.select(0, k)?, &want, 1e-13);
    }
    Ok(())
}

#[test]
fn nested_jvps_do_not_confuse_their_tangents() -> Result<()> {
    // d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1: the inner derivative must
    // not pick up the outer tangent of x (perturbation confusion gives 2).
    let x = Tensor::scalar(3.0f64);
    let one = Tensor::scalar(1.0f64);
    let (_, d) = jvp(
        |x: Tensor| {
            let (_, inner) = jvp(|y: Tensor| ops::add(&x, &y), &Tensor::scalar(5.0f64), &one)?;
            ops::mul(&x, &inner)
        },
        &x,
        &one,
    )?;
    assert_eq!(arr(&d)[[]], 1.0);
    Ok(())
}

#[test]
fn the_checks_pass_on_a_composed_function() {
    set_policy_error();
    let inputs = [t64(&[3, 4], 27), t64(&[4], 28)];
    let f = |xs: &[Tensor]| Ok(vec![ops::tanh(&ops::mv(&xs[0], &xs[1])?)?]);
    assert!(check_jvp(f, &inputs).unwrap() >= 3);
    assert!(check_jvp_compositions(f, &inputs).unwrap() > 10);
    assert_eq!(check_jacobians(f, &inputs).unwrap(), 2);
}

fn set_policy_error() {
    let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Error);
}

#[test]
fn bad_tangents_are_errors_that_say_what_was_expected() {
    let x = t64(&[3], 29);
    let err = jvp(|x: Tensor| ops::sin(&x), &x, &t64(&[4], 30)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("jvp") && msg.contains("[4]") && msg.contains("[3]"),
        "{msg}"
    );
    let f32_tangent = Tensor::from(ndarray::array![1.0f32, 2.0, 3.0].into_dyn());
    let err = jvp(|x: Tensor| ops::sin(&x), &x, &f32_tangent).unwrap_err();
    assert!(err.to_string().contains("f32"), "{err}");
    let err = jvp(
        |xs: Vec<Tensor>| ops::sin(&xs[0]),
        &vec![x.clone(), x.clone()],
        &vec![x.clone()],
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("1 tangents for 2 primals"),
        "{err}"
    );
}

#[test]
fn jacobian_errors_name_the_transform() {
    let i = Tensor::from(ndarray::array![1i64, 2].into_dyn());
    let err = jacfwd(|x: Tensor| ops::mul(&x, &x)).call(&i).unwrap_err();
    assert!(
        err.to_string().contains("jacfwd") && err.to_string().contains("i64"),
        "{err}"
    );
    let x = t64(&[3], 31);
    let err = jacfwd(|x: Tensor| ops::sin(&x))
        .chunk_size(0)
        .call(&x)
        .unwrap_err();
    assert!(err.to_string().contains("chunk_size(0)"), "{err}");
    let err = hessian(|x: Tensor| ops::sin(&x)).call(&x).unwrap_err();
    assert!(err.to_string().contains("scalar"), "{err}");
    // A basis beyond the allocation limit is an error, not an abort.
    let big = ops::zeros(&[1 << 16], batchrules::DType::F64).unwrap();
    let err = jacfwd(|x: Tensor| ops::sin(&x)).call(&big).unwrap_err();
    assert!(err.to_string().contains("jacfwd"), "{err}");
}

#[test]
fn a_dual_tensor_used_after_its_jvp_is_an_error() {
    let x = t64(&[3], 32);
    let mut leaked = None;
    let _ = jvp(
        |x: Tensor| {
            leaked = Some(x.clone());
            ops::sin(&x)
        },
        &x,
        &x,
    );
    let err = ops::exp(&leaked.unwrap()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("exp") && msg.contains("jvp"), "{msg}");
}

/// Downstream ops: `twice` has no jvp; `bad_jvp` has one that returns a
/// tangent of the wrong shape; `thrice` a wrong value.
mod extra {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "twice(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "bad_jvp(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "thrice(Tensor self) -> Tensor"
kind = "primitive"
"#
    );
}

fn same_meta(x: &batchrules::rules::TensorMeta) -> Result<batchrules::rules::TensorMeta> {
    Ok(x.clone())
}

macro_rules! doubling_op {
    ($op:literal, $meta:ident, $kernel:ident, $rule:ident, $f:path) => {
        #[batchrules::meta(op = $op, table = extra)]
        fn $meta(x: &batchrules::rules::TensorMeta) -> Result<batchrules::rules::TensorMeta> {
            same_meta(x)
        }
        #[batchrules::kernel(op = $op, table = extra)]
        fn $kernel(x: &Tensor) -> Result<Tensor> {
            ops::add(x, x)
        }
        #[batchrules::batching_rule(op = $op, table = extra)]
        fn $rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
            Ok(($f(x)?, bdim))
        }
    };
}
doubling_op!("twice", twice_meta, twice_kernel, twice_rule, extra::twice);
doubling_op!("bad_jvp", bad_meta, bad_kernel, bad_rule, extra::bad_jvp);
doubling_op!(
    "thrice",
    thrice_meta,
    thrice_kernel,
    thrice_rule,
    extra::thrice
);

/// Bug: the tangent of a [n] output as [1, n].
#[batchrules::jvp(op = "bad_jvp", table = extra)]
fn bad_jvp_jvp(
    _x: &Tensor,
    _result: &Tensor,
    x_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    x_tangent
        .map(|t| ops::unsqueeze(&ops::add(t, t)?, 0))
        .transpose()
}

/// Bug: d(2x) = 2 dx, but this returns 3 dx.
#[batchrules::jvp(op = "thrice", table = extra)]
fn thrice_jvp(_x: &Tensor, _result: &Tensor, x_tangent: Option<&Tensor>) -> Result<Option<Tensor>> {
    x_tangent.map(|t| ops::add(&ops::add(t, t)?, t)).transpose()
}

#[test]
fn an_op_without_a_jvp_names_the_op_and_the_level() {
    let x = t64(&[3], 33);
    let err = jvp(|x: Tensor| extra::twice(&x), &x, &x).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("twice") && msg.contains("no jvp") && msg.contains("jvp level 1"),
        "{msg}"
    );
    let xs = t64(&[2, 3], 34);
    let err = vmap(|x: Tensor| jvp(|x: Tensor| extra::twice(&x), &x, &x))
        .call(&xs)
        .unwrap_err();
    assert!(err.to_string().contains("jvp level 2"), "{err}");
}

#[test]
fn the_jvp_self_check_catches_a_wrong_shape() {
    let x = t64(&[3], 35);
    let err = jvp(|x: Tensor| extra::bad_jvp(&x), &x, &x).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err.root(), Error::RuleBug { .. }), "{msg}");
    assert!(
        msg.contains("bad_jvp") && msg.contains("[1, 3]") && msg.contains("[3]"),
        "{msg}"
    );
}

#[test]
fn check_jvp_catches_a_wrong_jvp() {
    let x = t64(&[3], 36);
    let err = check_jvp(|x| Ok(vec![extra::thrice(&x[0])?]), &[x]).unwrap_err();
    // The vjp is missing, so the comparison with reverse mode errs; with
    // finite differences alone the wrong factor shows too.
    assert!(err.to_string().contains("thrice"), "{err}");
}

#[test]
fn jvp_and_vjp_agree_by_transposition() -> Result<()> {
    // <u, J v> = <Jᵀ u, v> for a function with broadcasting and reductions.
    let (a, b) = (t64(&[2, 3], 37), t64(&[3], 38));
    let (da, db) = (t64(&[2, 3], 39), t64(&[3], 40));
    let f = |(a, b): (Tensor, Tensor)| ops::log_softmax(&ops::mul(&ops::sin(&a)?, &b)?, 1);
    let (y, dy) = jvp(f, (&a, &b), (&da, &db))?;
    let u = t64(y.shape(), 41);
    let (_, pullback) = vjp(f, (&a, &b))?;
    let (ga, gb) = pullback.call(&u)?;
    let lhs = arr(&sum(&ops::mul(&u, &dy)?)?)[[]];
    let rhs = arr(&sum(&ops::mul(&ga, &da)?)?)[[]] + arr(&sum(&ops::mul(&gb, &db)?)?)[[]];
    assert!(
        (lhs - rhs).abs() < 1e-12 * (1.0 + lhs.abs()),
        "{lhs} vs {rhs}"
    );
    Ok(())
}

#[test]
fn jvp_of_dropout_is_the_same_mask_on_the_tangent_under_each_randomness_policy() -> Result<()> {
    use batchrules::Randomness;
    let (x, v) = (t64(&[4, 6], 42), t64(&[4, 6], 43));
    let p = 0.5;
    // dropout is linear in x for a fixed seed: its jvp is dropout of the
    // tangent with the same mask.
    let (_, dy) = jvp(|x: Tensor| ops::dropout(&x, p, 7), &x, &v)?;
    assert_close(&dy, &ops::dropout(&v, p, 7)?, 1e-15);
    let pushed =
        |(x, v): (Tensor, Tensor)| jvp(|x: Tensor| ops::dropout(&x, p, 7), &x, &v).map(|(_, d)| d);
    for policy in [Randomness::Different, Randomness::Same] {
        let got = vmap(pushed).randomness(policy).call((&x, &v))?;
        let want = vmap(|v: Tensor| ops::dropout(&v, p, 7))
            .randomness(policy)
            .call(&v)?;
        assert_close(&got, &want, 1e-15);
    }
    // The default policy refuses it, naming the op.
    let err = vmap(pushed).call((&x, &v)).unwrap_err();
    assert!(err.to_string().contains("dropout"), "{err}");
    Ok(())
}
