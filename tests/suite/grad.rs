//! Reverse mode end to end: grad, vjp, jacrev and hessian against analytic
//! derivatives and finite differences, composed with vmap in both orders and
//! with themselves, and their errors.

use batchrules::{
    grad, hessian, jacrev, ops, value_and_grad, vjp, vmap, Error, FallbackPolicy, Result, Tensor,
};
use ndarray::{Array, ArrayD};

use crate::common;
use common::{arr, assert_close, sum, t64};

/// Central finite differences of a scalar function at `x`.
fn numeric_grad(f: &dyn Fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> Tensor {
    let base = arr(x);
    let h = 1e-6;
    let mut g = ArrayD::<f64>::zeros(base.raw_dim());
    for (i, gi) in g.iter_mut().enumerate() {
        let mut plus = base.clone();
        let mut minus = base.clone();
        plus.as_slice_mut().unwrap()[i] += h;
        minus.as_slice_mut().unwrap()[i] -= h;
        let fp = arr(&f(&Tensor::from(plus)).unwrap())[[]];
        let fm = arr(&f(&Tensor::from(minus)).unwrap())[[]];
        *gi = (fp - fm) / (2.0 * h);
    }
    Tensor::from(g)
}

/// sum(tanh(W x + b)²): matmul, broadcasting add, a composite-free chain.
fn layer_loss(w: &Tensor, x: &Tensor, b: &Tensor) -> Result<Tensor> {
    let h = ops::tanh(&ops::add(&ops::mv(w, x)?, b)?)?;
    sum(&ops::mul(&h, &h)?)
}

#[test]
fn grad_of_square_is_twice_x() -> Result<()> {
    let x = t64(&[5], 1);
    let g = grad(|x: Tensor| sum(&ops::mul(&x, &x)?)).call(&x)?;
    let two_x = Tensor::from(arr(&x) * 2.0);
    assert_close(&g, &two_x, 1e-12);
    Ok(())
}

#[test]
fn grad_matches_finite_differences_for_each_argument() -> Result<()> {
    let (w, x, b) = (t64(&[4, 3], 2), t64(&[3], 3), t64(&[4], 4));
    let f = |(w, x, b): (Tensor, Tensor, Tensor)| layer_loss(&w, &x, &b);
    let gw = grad(f).call((&w, &x, &b))?;
    let gx = grad(f).argnums::<1>().call((&w, &x, &b))?;
    let gb = grad(f).argnums::<2>().call((&w, &x, &b))?;
    assert_close(&gw, &numeric_grad(&|w| layer_loss(w, &x, &b), &w), 1e-7);
    assert_close(&gx, &numeric_grad(&|x| layer_loss(&w, x, &b), &x), 1e-7);
    assert_close(&gb, &numeric_grad(&|b| layer_loss(&w, &x, b), &b), 1e-7);
    Ok(())
}

#[test]
fn composites_are_differentiated_through_their_decomposition() -> Result<()> {
    // softmax and logsumexp are composites with no vjp of their own.
    let logits = t64(&[6], 5);
    let f = |z: &Tensor| {
        let p = ops::softmax(z, 0)?;
        sum(&ops::add(
            &ops::mul(&p, &t64(&[6], 6))?,
            &ops::logsumexp(z, 0, false)?,
        )?)
    };
    let g = grad(|z: Tensor| f(&z)).call(&logits)?;
    assert_close(&g, &numeric_grad(&f, &logits), 1e-7);
    Ok(())
}

#[test]
fn value_and_grad_and_aux() -> Result<()> {
    let x = t64(&[3], 7);
    let (v, g) = value_and_grad(|x: Tensor| sum(&ops::mul(&x, &x)?)).call(&x)?;
    assert!((arr(&v)[[]] - arr(&x).mapv(|a| a * a).sum()).abs() < 1e-12);
    assert_close(&g, &Tensor::from(arr(&x) * 2.0), 1e-12);
    let (g2, aux) = grad(|x: Tensor| {
        let sq = ops::mul(&x, &x)?;
        Ok((sum(&sq)?, sq))
    })
    .call(&x)?;
    assert_close(&g2, &g, 0.0);
    // The aux output is the plain value, usable outside grad.
    assert_close(&aux, &Tensor::from(arr(&x).mapv(|a| a * a)), 1e-12);
    Ok(())
}

#[test]
fn vjp_pullback_is_reusable_and_linear() -> Result<()> {
    let x = t64(&[4], 8);
    let (y, pullback) = vjp(|x: Tensor| ops::sin(&x), &x)?;
    assert_close(&y, &Tensor::from(arr(&x).mapv(f64::sin)), 1e-12);
    let u = t64(&[4], 9);
    let g1 = pullback.call(&u)?;
    let g2 = pullback.call(&Tensor::from(arr(&u) * 3.0))?;
    assert_close(&g1, &Tensor::from(arr(&u) * arr(&x).mapv(f64::cos)), 1e-12);
    assert_close(&g2, &Tensor::from(arr(&g1) * 3.0), 1e-12);
    // A cotangent of the wrong shape is an error, not a wrong answer.
    let err = pullback.call(&t64(&[3], 1)).unwrap_err();
    assert!(
        err.to_string().contains("cotangent 0 has shape [3]"),
        "{err}"
    );
    Ok(())
}

#[test]
fn second_derivative_by_grad_of_grad() -> Result<()> {
    let x = t64(&[], 10);
    let d2 = grad(|x: Tensor| grad(|y: Tensor| ops::sin(&y)).call(&x)).call(&x)?;
    assert!((arr(&d2)[[]] + arr(&x)[[]].sin()).abs() < 1e-12);
    // Third derivative: -cos.
    let d3 = grad(|x: Tensor| grad(|x: Tensor| grad(|y: Tensor| ops::sin(&y)).call(&x)).call(&x))
        .call(&x)?;
    assert!((arr(&d3)[[]] + arr(&x)[[]].cos()).abs() < 1e-12);
    Ok(())
}

#[test]
fn grad_does_not_confuse_levels() -> Result<()> {
    // d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x (a perturbation-confusion check).
    let x = t64(&[], 11);
    let g = grad(|x: Tensor| {
        let inner = grad(|y: Tensor| ops::mul(&x, &y)).call(&x)?;
        ops::mul(&x, &inner)
    })
    .call(&x)?;
    assert!((arr(&g)[[]] - 2.0 * arr(&x)[[]]).abs() < 1e-12);
    Ok(())
}

#[test]
fn per_example_gradients_equal_the_loop() -> Result<()> {
    let (w, b) = (t64(&[4, 3], 12), t64(&[4], 13));
    let xs = t64(&[5, 3], 14);
    let f = |(w, x, b): (Tensor, Tensor, Tensor)| layer_loss(&w, &x, &b);
    let batched = vmap(|(w, x, b): (Tensor, Tensor, Tensor)| grad(f).call((&w, &x, &b)))
        .in_dims([None, Some(0), None])
        .fallback(FallbackPolicy::Error)
        .call((&w, &xs, &b))?;
    assert_eq!(batched.shape(), &[5, 4, 3]);
    for i in 0..5 {
        let x = xs.select(0, i)?;
        let one = grad(f).call((&w, &x, &b))?;
        assert_close(&batched.select(0, i)?, &one, 1e-12);
    }
    Ok(())
}

#[test]
fn grad_of_vmap_goes_through_batching_rules() -> Result<()> {
    // grad of a batched loss: the rules rearrange tracked tensors (moved_dim,
    // unsqueezed), which grad records through ops.
    let w = t64(&[4, 3], 15);
    let xs = t64(&[5, 3], 16);
    let batched_loss = |w: Tensor| -> Result<Tensor> {
        let per = vmap(|x: Tensor| {
            let h = ops::tanh(&ops::mv(&w, &x)?)?;
            sum(&ops::mul(&h, &h)?)
        })
        .fallback(FallbackPolicy::Error)
        .call(&xs)?;
        sum(&per)
    };
    let g = grad(batched_loss).call(&w)?;
    assert_close(&g, &numeric_grad(&|w| batched_loss(w.clone()), &w), 1e-7);
    Ok(())
}

#[test]
fn grad_of_vmap_through_the_fallback_loop() -> Result<()> {
    // triu under vmap with the fallback forced: each example is selected
    // from a tracked tensor and the results stacked through ops.
    let xs = t64(&[3, 4, 4], 17);
    let loss = |x: Tensor| -> Result<Tensor> {
        let y = vmap(|x: Tensor| ops::sin(&ops::triu(&x, 1)?))
            .fallback(FallbackPolicy::Silent)
            .call(&x)?;
        sum(&y)
    };
    let g = grad(loss).call(&xs)?;
    assert_close(&g, &numeric_grad(&|x| loss(x.clone()), &xs), 1e-7);
    Ok(())
}

#[test]
fn jacrev_matches_the_analytic_jacobian() -> Result<()> {
    let (w, x) = (t64(&[3, 2], 18), t64(&[2], 19));
    // J of tanh(W x) w.r.t. x is diag(1 - tanh²) W.
    let j = jacrev(|x: Tensor| ops::tanh(&ops::mv(&w, &x)?)).call(&x)?;
    let h = arr(&w)
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap()
        .dot(&arr(&x).into_dimensionality::<ndarray::Ix1>().unwrap())
        .mapv(f64::tanh);
    let w2 = arr(&w).into_dimensionality::<ndarray::Ix2>().unwrap();
    let want = Array::from_shape_fn((3, 2), |(i, k)| (1.0 - h[i] * h[i]) * w2[[i, k]]);
    assert_close(&j, &Tensor::from(want.into_dyn()), 1e-12);
    Ok(())
}

#[test]
fn hessian_of_sum_sin_is_diag_minus_sin() -> Result<()> {
    let x = t64(&[4], 20);
    let h = hessian(|x: Tensor| sum(&ops::sin(&x)?)).call(&x)?;
    let xs = arr(&x);
    let want = Array::from_shape_fn((4, 4), |(i, j)| if i == j { -xs[i].sin() } else { 0.0 });
    assert_close(&h, &Tensor::from(want.into_dyn()), 1e-12);
    Ok(())
}

#[test]
fn hessian_of_a_quadratic_form_is_its_symmetrised_matrix() -> Result<()> {
    let a = t64(&[3, 3], 21);
    let x = t64(&[3], 22);
    let h = hessian(|x: Tensor| ops::dot(&x, &ops::mv(&a, &x)?)).call(&x)?;
    let a2 = arr(&a);
    let want = &a2 + &a2.t();
    assert_close(&h, &Tensor::from(want), 1e-12);
    Ok(())
}

#[test]
fn vmap_of_hessian_equals_the_loop() -> Result<()> {
    let xs = t64(&[3, 4], 23);
    let f = |x: Tensor| sum(&ops::mul(&ops::sin(&x)?, &ops::cos(&x)?)?);
    let batched = vmap(|x: Tensor| hessian(f).call(&x))
        .fallback(FallbackPolicy::Error)
        .call(&xs)?;
    assert_eq!(batched.shape(), &[3, 4, 4]);
    for i in 0..3 {
        let one = hessian(f).call(&xs.select(0, i)?)?;
        assert_close(&batched.select(0, i)?, &one, 1e-12);
    }
    Ok(())
}

#[test]
fn grad_of_a_non_scalar_output_says_what_to_use() {
    let x = t64(&[3], 24);
    let err = grad(|x: Tensor| ops::sin(&x)).call(&x).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("shape [3]") && msg.contains("vjp") && msg.contains("jacrev"),
        "{msg}"
    );
}

#[test]
fn grad_of_an_integer_input_is_an_error() {
    let x = Tensor::from(ndarray::array![1i64, 2].into_dyn());
    let err = grad(|x: Tensor| sum(&x)).call(&x).unwrap_err();
    assert!(err.to_string().contains("dtype i64"), "{err}");
}

#[test]
fn a_tracked_tensor_used_after_its_grad_is_an_error() {
    let x = t64(&[2], 25);
    let stash = std::cell::RefCell::new(None);
    let _ = grad(|x: Tensor| {
        *stash.borrow_mut() = Some(x.clone());
        sum(&x)
    })
    .call(&x)
    .unwrap();
    let leaked = stash.borrow_mut().take().unwrap();
    let err = ops::sin(&leaked).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("sin") && msg.contains("grad") && msg.contains("tracked"),
        "{msg}"
    );
}

#[test]
fn a_tracked_tensor_returned_as_aux_is_unwrapped() -> Result<()> {
    let x = t64(&[2], 26);
    let (_, aux) = grad(|x: Tensor| Ok((sum(&x)?, x.clone()))).call(&x)?;
    // Usable: it is the plain value.
    assert_close(
        &ops::sin(&aux)?,
        &Tensor::from(arr(&x).mapv(f64::sin)),
        1e-12,
    );
    Ok(())
}

#[test]
fn non_differentiable_ops_stop_the_gradient() -> Result<()> {
    // argmax's output is an integer index: no gradient flows through it, and
    // using it as an index keeps the gradient of the gathered values.
    let x = t64(&[5], 27);
    let g = grad(|x: Tensor| {
        let i = ops::argmax(&x, None, true)?;
        sum(&ops::gather(&x, 0, &i)?)
    })
    .call(&x)?;
    let xs = arr(&x);
    let k = xs
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.partial_cmp(b.1).unwrap())
        .unwrap()
        .0;
    let want = Array::from_shape_fn(5, |i| if i == k { 1.0 } else { 0.0 });
    assert_close(&g, &Tensor::from(want.into_dyn()), 0.0);
    Ok(())
}

#[test]
fn errors_inside_grad_name_the_op() {
    let x = t64(&[3], 28);
    let err: Error = grad(|x: Tensor| sum(&ops::triu(&x, 0)?))
        .call(&x)
        .unwrap_err();
    assert!(err.to_string().contains("triu"), "{err}");
}

/// A downstream op with kernel, meta and batching rule but no vjp.
mod extra {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "twice(Tensor self) -> Tensor"
kind = "primitive"
"#
    );
}

#[batchrules::meta(op = "twice", table = extra)]
fn twice_meta(x: &batchrules::rules::TensorMeta) -> Result<batchrules::rules::TensorMeta> {
    Ok(x.clone())
}

#[batchrules::kernel(op = "twice", table = extra)]
fn twice_kernel(x: &Tensor) -> Result<Tensor> {
    ops::add(x, x)
}

#[batchrules::batching_rule(op = "twice", table = extra)]
fn twice_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    Ok((extra::twice(x)?, bdim))
}

#[test]
fn an_op_without_a_vjp_names_the_op_and_the_level() {
    let x = t64(&[3], 29);
    // Without grad it works, under vmap too.
    assert!(extra::twice(&x).is_ok());
    let err = grad(|x: Tensor| sum(&extra::twice(&x)?))
        .call(&x)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("twice") && msg.contains("no vjp") && msg.contains("grad level 1"),
        "{msg}"
    );
    // Under an outer vmap the grad level is 2.
    let xs = t64(&[2, 3], 30);
    let err = vmap(|x: Tensor| grad(|x: Tensor| sum(&extra::twice(&x)?)).call(&x))
        .call(&xs)
        .unwrap_err();
    assert!(err.to_string().contains("grad level 2"), "{err}");
}

#[test]
fn a_long_chain_of_ops_is_differentiated_and_dropped_without_deep_recursion() -> Result<()> {
    // 30 000 ops in sequence: recording, the backward pass and dropping the
    // graph must not recurse once per op (that would overflow a test thread's
    // stack and abort).
    let x = t64(&[2], 31);
    let g = grad(|x: Tensor| {
        let mut y = x;
        for _ in 0..30_000 {
            y = ops::neg(&y)?;
        }
        sum(&y)
    })
    .call(&x)?;
    // An even number of negations: the gradient is 1.
    assert_close(&g, &Tensor::from(arr(&x).mapv(|_| 1.0)), 0.0);
    Ok(())
}

/// Downstream ops with deliberately wrong vjps: the checks must catch them.
mod wrong {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "wrong_scale(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "wrong_shape(Tensor self, Tensor other) -> Tensor"
kind = "primitive"
"#
    );
}

#[batchrules::meta(op = "wrong_scale", table = wrong)]
fn wrong_scale_meta(x: &batchrules::rules::TensorMeta) -> Result<batchrules::rules::TensorMeta> {
    Ok(x.clone())
}
#[batchrules::kernel(op = "wrong_scale", table = wrong)]
fn wrong_scale_kernel(x: &Tensor) -> Result<Tensor> {
    ops::add(x, x)
}
#[batchrules::batching_rule(op = "wrong_scale", table = wrong)]
fn wrong_scale_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    Ok((wrong::wrong_scale(x)?, bdim))
}
/// Bug: d(2x) = 2 dx, but this returns 3 g.
#[batchrules::vjp(op = "wrong_scale", table = wrong)]
fn wrong_scale_vjp(_x: &Tensor, _result: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
    Ok(Some(ops::add(&ops::add(grad, grad)?, grad)?))
}

#[batchrules::meta(op = "wrong_shape", table = wrong)]
fn wrong_shape_meta(
    x: &batchrules::rules::TensorMeta,
    y: &batchrules::rules::TensorMeta,
) -> Result<batchrules::rules::TensorMeta> {
    // A test op: `other` broadcasts to `self`'s shape.
    let _ = y;
    Ok(x.clone())
}
#[batchrules::kernel(op = "wrong_shape", table = wrong)]
fn wrong_shape_kernel(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    ops::add(x, y)
}
#[batchrules::batching_rule(op = "wrong_shape", table = wrong)]
fn wrong_shape_rule(
    x: &Tensor,
    xb: Option<usize>,
    y: &Tensor,
    yb: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    batchrules::batching::binary_broadcast(ops::add, x, xb, y, yb)
}
/// Bug: forgets to sum the broadcast gradient back to each input's shape.
#[batchrules::vjp(op = "wrong_shape", table = wrong)]
fn wrong_shape_vjp(
    _x: &Tensor,
    _y: &Tensor,
    _result: &Tensor,
    grad: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((Some(grad.clone()), Some(grad.clone())))
}

#[test]
fn check_grad_catches_a_wrong_vjp() {
    let x = t64(&[3], 32);
    let err = batchrules::testing::check_grad(|x| Ok(vec![wrong::wrong_scale(&x[0])?]), &[x])
        .unwrap_err();
    assert!(err.to_string().contains("the vjp gives"), "{err}");
}

#[test]
fn the_vjp_self_check_catches_a_forgotten_unbroadcast() {
    let (x, b) = (t64(&[2, 3], 33), t64(&[3], 34));
    let err = grad(|(x, b): (Tensor, Tensor)| sum(&wrong::wrong_shape(&x, &b)?))
        .argnums::<1>()
        .call((&x, &b))
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err.root(), Error::RuleBug { .. }), "{msg}");
    assert!(
        msg.contains("wrong_shape")
            && msg.contains("wrong_shape_vjp")
            && msg.contains("shape [2, 3]"),
        "{msg}"
    );
}

mod probe {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "probe_mul(Tensor self, Tensor other) -> Tensor"
kind = "primitive"
"#
    );
}

thread_local! {
    static ASKED: std::cell::RefCell<Vec<(bool, bool)>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[batchrules::meta(op = "probe_mul", table = probe)]
fn probe_meta(
    x: &batchrules::rules::TensorMeta,
    _y: &batchrules::rules::TensorMeta,
) -> Result<batchrules::rules::TensorMeta> {
    Ok(x.clone())
}
#[batchrules::kernel(op = "probe_mul", table = probe)]
fn probe_kernel(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    ops::mul(x, y)
}
/// Records which gradients the backward pass asks for.
#[batchrules::vjp(op = "probe_mul", table = probe)]
fn probe_vjp(
    x: &Tensor,
    y: &Tensor,
    _result: &Tensor,
    grad: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (wx, wy) = (batchrules::needs_gradient(x), batchrules::needs_gradient(y));
    ASKED.with(|a| a.borrow_mut().push((wx, wy)));
    Ok((
        wx.then(|| ops::mul(grad, y)).transpose()?,
        wy.then(|| ops::mul(grad, x)).transpose()?,
    ))
}

#[test]
fn a_vjp_is_told_which_gradients_are_discarded() -> Result<()> {
    let (x, c) = (t64(&[3], 35), t64(&[3], 36));
    let f = |(x, c): (Tensor, Tensor)| sum(&probe::probe_mul(&x, &c)?);
    ASKED.with(|a| a.borrow_mut().clear());
    let gx = grad(f).call((&x, &c))?;
    let gc = grad(f).argnums::<1>().call((&x, &c))?;
    // x passed twice: both wanted, and the gradient counts both uses.
    let gxx = grad(|x: Tensor| sum(&probe::probe_mul(&x, &x)?)).call(&x)?;
    assert_eq!(
        ASKED.with(|a| a.borrow().clone()),
        vec![(true, false), (false, true), (true, true)]
    );
    assert_close(&gx, &c, 0.0);
    assert_close(&gc, &x, 0.0);
    assert_close(&gxx, &Tensor::from(arr(&x) * 2.0), 1e-15);
    // Outside a backward pass, every gradient is needed.
    assert!(batchrules::needs_gradient(&x));
    Ok(())
}

#[test]
fn hostile_uses_of_the_transforms_are_errors() {
    // grad nested past the level limit.
    fn nest(depth: usize, x: Tensor) -> Result<Tensor> {
        if depth == 0 {
            return sum(&ops::sin(&x)?);
        }
        grad(|x: Tensor| nest(depth - 1, x)).call(&x)
    }
    let x = t64(&[], 37);
    let err = nest(batchrules::dispatch::MAX_DEPTH + 1, x.clone()).unwrap_err();
    assert!(err.to_string().contains("cannot nest more than"), "{err}");
    assert_eq!(batchrules::dispatch::depth(), 0, "every level was popped");

    // jacrev whose identity basis would not fit in memory.
    let err = jacrev(|x: Tensor| ops::expand(&x, &[300_000]))
        .call(&t64(&[1], 38))
        .unwrap_err();
    assert!(err.to_string().contains("jacrev"), "{err}");

    // A pullback given the wrong number of cotangents.
    let (_, pullback) = vjp(
        |x: Tensor| Ok((ops::sin(&x)?, ops::cos(&x)?)),
        &t64(&[2], 39),
    )
    .unwrap();
    let err = pullback.call(&(t64(&[2], 40), t64(&[3], 41))).unwrap_err();
    assert!(
        err.to_string().contains("cotangent 1 has shape [3]"),
        "{err}"
    );

    // hessian of a vector function says to use jacrev.
    let err = hessian(|x: Tensor| ops::sin(&x))
        .call(&t64(&[2], 42))
        .unwrap_err();
    assert!(err.to_string().contains("jacrev"), "{err}");
}

#[test]
fn a_pullback_can_be_sent_to_another_thread() -> Result<()> {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let x = t64(&[3], 43);
    let (_, pullback) = vjp(|x: Tensor| ops::tanh(&ops::mul(&x, &x)?), &x)?;
    send_sync(&pullback);
    let u = t64(&[3], 44);
    let here = pullback.call(&u)?;
    let there = std::thread::scope(|s| s.spawn(|| pullback.call(&u)).join().unwrap())?;
    assert_close(&there, &here, 0.0);
    Ok(())
}
