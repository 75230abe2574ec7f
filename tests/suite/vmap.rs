//! vmap end to end: logical-shape meta checks at every level, in_dims/out_dims,
//! several inputs and outputs, nesting, errors, the fallback, composites, the
//! rule self-check, and threads.

use std::sync::Mutex;

use batchrules::rules::TensorMeta;
use batchrules::testing::{check_vmap, check_vmap_errors};
use batchrules::{
    batching_rule, decompose, kernel, meta, ops, vmap, Error, FallbackPolicy, Result, Tensor,
};
use ndarray::{array, Array, ArrayD, IxDyn};

/// Ops for this test: one without a rule, a composite that opts out of
/// decomposition, and one whose rule is deliberately wrong.
mod extra {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "double_no_rule(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "halve_opt_out(Tensor self) -> Tensor"
kind = "composite"

[[op]]
schema = "bad_rule(Tensor self) -> Tensor"
kind = "primitive"
"#
    );
}

#[meta(op = "double_no_rule", table = extra)]
fn double_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}
#[kernel(op = "double_no_rule", table = extra)]
fn double_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(Tensor::from(x.to_array::<f64>()?.mapv(|v| 2.0 * v)))
}

#[decompose(op = "halve_opt_out", table = extra, vmap = "fallback")]
fn halve(x: &Tensor) -> Result<Tensor> {
    // Reads raw data, which is exactly why it must not see batched tensors.
    Ok(Tensor::from(x.to_array::<f64>()?.mapv(|v| v / 2.0)))
}

#[meta(op = "bad_rule", table = extra)]
fn bad_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}
#[kernel(op = "bad_rule", table = extra)]
fn bad_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}
#[batching_rule(op = "bad_rule", table = extra)]
fn bad_rule_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    // Bug: sums the batch away but claims the batch dim is still there.
    let _ = bdim;
    Ok((ops::sum(x, Some(-1), false)?, Some(0)))
}

fn t(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from(
        Array::from_shape_vec(IxDyn(shape), (0..n).map(|i| i as f64 * 0.5 - 1.0).collect())
            .unwrap(),
    )
}

fn arr(x: &Tensor) -> ArrayD<f64> {
    x.to_array::<f64>().unwrap()
}

#[test]
fn triu_on_rows_fails_with_logical_shape_and_level() {
    let x = t(&[32, 2]);
    let err = vmap(|x: Tensor| ops::triu(&x, 0)).call(&x).unwrap_err();
    assert_eq!(
        err.to_string(),
        "triu: expected a tensor with at least 2 dims, got shape [2] (checked on logical shapes at vmap level 1)"
    );
    // The dense call on the same physical tensor is fine: only vmap sees [2].
    assert!(ops::triu(&x, 0).is_ok());
}

#[test]
fn triu_on_matrices_matches_the_loop() {
    let x = t(&[32, 2, 2]);
    let y = vmap(|x: Tensor| ops::triu(&x, 0)).call(&x).unwrap();
    for i in 0..32 {
        let example = Tensor::from(arr(&x).index_axis(ndarray::Axis(0), i).to_owned());
        assert_eq!(
            arr(&y).index_axis(ndarray::Axis(0), i),
            arr(&ops::triu(&example, 0).unwrap())
        );
    }
    let cases = check_vmap(|x| Ok(vec![ops::triu(&x[0], 1)?]), &[t(&[3, 4])]).unwrap();
    assert!(cases >= 10);
}

#[test]
fn each_nested_level_checks_its_own_logical_shape() {
    // [4, 3, 2]: level 1 sees [3, 2] (valid for triu), level 2 sees [2] (invalid).
    let x = t(&[4, 3, 2]);
    let nested = vmap(|x: Tensor| vmap(|y: Tensor| ops::triu(&y, 0)).call(&x));
    let err = nested.call(&x).unwrap_err();
    assert!(
        err.to_string()
            .contains("got shape [2] (checked on logical shapes at vmap level 2)"),
        "{err}"
    );
    // One level on the same input is fine.
    assert!(vmap(|x: Tensor| ops::triu(&x, 0)).call(&x).is_ok());
    // [4, 3, 2, 2] is valid at both levels and matches the double loop.
    let x = t(&[4, 3, 2, 2]);
    let y = nested.call(&x).unwrap();
    assert_eq!(y.shape(), &[4, 3, 2, 2]);
    assert_eq!(arr(&y), arr(&ops::triu(&x, 0).unwrap()));
}

#[test]
fn mixed_in_dims_and_out_dims() {
    // x batched at dim 1, w shared; output batch dim moved to the end.
    let x = t(&[3, 5]); // 5 examples of [3]
    let w = t(&[3]);
    let y = vmap(|(x, w): (Tensor, Tensor)| ops::mul(&x, &w))
        .in_dims([Some(1), None])
        .out_dims(-1)
        .call((&x, &w))
        .unwrap();
    assert_eq!(y.shape(), &[3, 5]);
    assert_eq!(arr(&y), arr(&x) * &arr(&w).insert_axis(ndarray::Axis(1)));
    // Negative in_dim.
    let z = vmap(|x: Tensor| ops::sum(&x, None, false))
        .in_dims(-1)
        .call(&x)
        .unwrap();
    assert_eq!(arr(&z), arr(&x).sum_axis(ndarray::Axis(0)));
}

#[test]
fn several_outputs_and_list_inputs() {
    let a = t(&[4, 3]);
    let b = t(&[4, 3]);
    let (s, d) = vmap(|v: Vec<Tensor>| Ok((ops::add(&v[0], &v[1])?, ops::sub(&v[0], &v[1])?)))
        .out_dims([0, 1])
        .call(vec![a.clone(), b.clone()])
        .unwrap();
    assert_eq!(arr(&s), arr(&a) + arr(&b));
    assert_eq!(arr(&d), (arr(&a) - arr(&b)).reversed_axes());
}

#[test]
fn unbatched_outputs_are_broadcast() {
    let x = t(&[5, 2]);
    let c = t(&[2]);
    let (y, k) = vmap(|(x, c): (Tensor, Tensor)| Ok((ops::neg(&x)?, c)))
        .in_dims([Some(0), None])
        .call((&x, &c))
        .unwrap();
    assert_eq!(y.shape(), &[5, 2]);
    assert_eq!(k.shape(), &[5, 2]);
    for i in 0..5 {
        assert_eq!(arr(&k).index_axis(ndarray::Axis(0), i), arr(&c));
    }
    // No batched input: an explicit batch size.
    let z = vmap(|c: Tensor| ops::exp(&c))
        .in_dims(None::<i64>)
        .batch_size(3)
        .call(&c)
        .unwrap();
    assert_eq!(z.shape(), &[3, 2]);
}

#[test]
fn inconsistent_batch_sizes_are_reported() {
    let err = vmap(|(a, b): (Tensor, Tensor)| ops::add(&a, &b))
        .in_dims([Some(0), Some(1)])
        .call((&t(&[3, 4]), &t(&[4, 4, 2])))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "vmap: inconsistent batch sizes: input 0 has size 3 at in_dim 0, input 1 has size 4 at in_dim 1; all batched inputs must have the same size along their in_dim"
    );
}

#[test]
fn bad_in_dims_out_dims_and_batch_size_are_reported() {
    let x = t(&[3, 4]);
    let e = vmap(|x: Tensor| ops::neg(&x))
        .in_dims(2)
        .call(&x)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("in_dim 2 of input 0 is out of range for its shape [3, 4] (valid: -2..=1)"),
        "{e}"
    );
    let e = vmap(|x: Tensor| ops::neg(&x))
        .out_dims(3)
        .call(&x)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("out_dim 3 of output 0 is out of range"),
        "{e}"
    );
    let e = vmap(|x: Tensor| ops::neg(&x))
        .in_dims(None::<i64>)
        .call(&x)
        .unwrap_err();
    assert!(e.to_string().contains("no input is batched"), "{e}");
    let e = vmap(|v: Vec<Tensor>| Ok(v))
        .in_dims([Some(0)])
        .call(vec![x.clone(), x.clone()])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("in_dims has 1 entries but the function takes 2 inputs"),
        "{e}"
    );
    let e = vmap(|x: Tensor| ops::neg(&x))
        .batch_size(7)
        .call(&x)
        .unwrap_err();
    assert!(e.to_string().contains("batch_size(7) disagrees"), "{e}");
    let e = vmap(|x: Tensor| ops::neg(&x))
        .call(Tensor::scalar(1.0f64))
        .unwrap_err();
    assert!(e.to_string().contains("0-d tensor"), "{e}");
}

#[test]
fn errors_from_the_function_get_the_level() {
    let x = t(&[3, 4]);
    let err = vmap(|x: Tensor| x.to_array::<f64>().map(Tensor::from))
        .call(&x)
        .unwrap_err();
    assert!(matches!(err, Error::InVmap { level: 1, .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("cannot read the data of a tensor batched at vmap level 1"),
        "{err}"
    );
    assert!(err.to_string().ends_with("(inside vmap level 1)"), "{err}");
}

#[test]
fn batched_tensors_hide_their_data_and_show_logical_shapes() {
    let x = t(&[6, 2, 3]);
    vmap(|x: Tensor| {
        assert_eq!(x.shape(), &[2, 3]);
        assert_eq!(x.vmap_level(), Some(1));
        assert!(x.data().is_err());
        Ok(x)
    })
    .call(&x)
    .unwrap();
}

#[test]
fn escaped_batched_tensor_is_an_error() {
    let leaked = Mutex::new(None);
    let x = t(&[3, 2]);
    vmap(|x: Tensor| {
        *leaked.lock().unwrap() = Some(x.clone());
        Ok(x)
    })
    .call(&x)
    .unwrap();
    let leaked = leaked.lock().unwrap().take().unwrap();
    let err = ops::neg(&leaked).unwrap_err();
    assert!(
        err.to_string().contains("outside the vmap that created it"),
        "{err}"
    );
    // Also inside a later vmap at the same depth.
    let err = vmap(|y: Tensor| ops::add(&y, &leaked))
        .call(&x)
        .unwrap_err();
    assert!(
        err.to_string().contains("outside the vmap that created it"),
        "{err}"
    );
}

#[test]
fn fallback_runs_the_loop_and_the_error_policy_names_the_op() {
    let x = t(&[4, 3]);
    let y = vmap(|x: Tensor| extra::double_no_rule(&x))
        .fallback(FallbackPolicy::Silent)
        .call(&x)
        .unwrap();
    assert_eq!(arr(&y), arr(&x) * 2.0);
    let err = vmap(|x: Tensor| extra::double_no_rule(&x))
        .fallback(FallbackPolicy::Error)
        .call(&x)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Fallback { op, level: 1 } if op == "double_no_rule"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("#[batching_rule(op = \"double_no_rule\")]"),
        "{err}"
    );
    // Under nested vmap the fallback loops at both levels.
    let x = t(&[2, 3, 4]);
    let y = vmap(|x: Tensor| vmap(|y: Tensor| extra::double_no_rule(&y)).call(&x))
        .fallback(FallbackPolicy::Silent)
        .call(&x);
    // The inner vmap has no policy of its own, so it uses the global one (Warn).
    assert_eq!(arr(&y.unwrap()), arr(&x) * 2.0);
}

#[test]
fn opted_out_composite_uses_the_fallback() {
    let x = t(&[5, 2]);
    let y = vmap(|x: Tensor| extra::halve_opt_out(&x))
        .fallback(FallbackPolicy::Silent)
        .call(&x)
        .unwrap();
    assert_eq!(arr(&y), arr(&x) / 2.0);
    let err = vmap(|x: Tensor| extra::halve_opt_out(&x))
        .fallback(FallbackPolicy::Error)
        .call(&x)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Fallback { op, .. } if op == "halve_opt_out"),
        "{err:?}"
    );
}

#[test]
fn composite_with_batched_constituents_never_reaches_the_fallback() {
    let x = t(&[6, 4, 5]);
    // Policy Error at every level: any fallback would fail the call.
    let y = vmap(|x: Tensor| {
        vmap(|r: Tensor| ops::softmax(&r, -1))
            .fallback(FallbackPolicy::Error)
            .call(&x)
    })
    .fallback(FallbackPolicy::Error)
    .call(&x)
    .unwrap();
    assert_eq!(arr(&y), arr(&ops::softmax(&x, -1).unwrap()));
    let cases = check_vmap(|x| Ok(vec![ops::softmax(&x[0], 0)?]), &[t(&[3, 2])]).unwrap();
    assert!(cases > 0);
}

/// The full comparison with the meta runs in debug builds only (release
/// builds run the structural checks, below).
#[cfg(debug_assertions)]
#[test]
fn rule_self_check_reports_a_wrong_rule() {
    let x = t(&[3, 4]);
    let err = vmap(|x: Tensor| extra::bad_rule(&x)).call(&x).unwrap_err();
    assert!(
        matches!(&err, Error::RuleBug { op, .. } if op == "bad_rule"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .ends_with("output 0 has logical shape [] and dtype f64, but the meta computes shape [4] and dtype f64"),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("bug in batching rule `bad_rule_rule` at tests/suite/vmap.rs:"),
        "{err}"
    );
}

#[test]
fn error_inputs_fail_under_every_in_dims() {
    let n = check_vmap_errors(|x| Ok(vec![ops::triu(&x[0], 0)?]), &[t(&[2])]).unwrap();
    assert!(n >= 4);
    check_vmap_errors(|x| Ok(vec![ops::add(&x[0], &x[1])?]), &[t(&[2]), t(&[3])]).unwrap();
    check_vmap_errors(|x| Ok(vec![ops::exp(&x[0])?]), &[Tensor::scalar(1i64)]).unwrap();
}

#[test]
fn vmap_on_several_threads() {
    let handles: Vec<_> = (0..4)
        .map(|k| {
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let x = t(&[3 + k, 2, 2]);
                    let y = vmap(|x: Tensor| {
                        vmap(|r: Tensor| ops::softmax(&r, 0)).call(&ops::triu(&x, 0)?)
                    })
                    .call(&x)
                    .unwrap();
                    let want = ops::softmax(&ops::triu(&x, 0).unwrap(), 2).unwrap();
                    assert_eq!(arr(&y), arr(&want));
                    assert_eq!(batchrules::vmap_depth(), 0);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn closure_argument_types_follow_from_the_call() {
    // No `: (Tensor, Tensor)` annotation: `call((&x, &w))` decides it.
    let x = Tensor::from(Array::from_shape_fn((4, 3), |(i, j)| (i * 3 + j) as f64).into_dyn());
    let w = Tensor::from(array![1.0f64, 0.0, -1.0].into_dyn());
    let y = vmap(|(x, w)| ops::sum(&ops::mul(&x, &w)?, None, false))
        .in_dims([Some(0), None])
        .call((&x, &w))
        .unwrap();
    assert_eq!(
        y.to_array::<f64>().unwrap(),
        array![-2.0, -2.0, -2.0, -2.0].into_dyn()
    );
    let z = vmap(|x| ops::neg(&x)).call(&x).unwrap();
    assert_eq!(z.shape(), &[4, 3]);
}

#[test]
fn in_dims_none_needs_no_type_annotation() {
    let w = Tensor::from(array![1.0f64, 2.0].into_dyn());
    let y = vmap(|w| ops::neg(&w))
        .in_dims(None)
        .batch_size(3)
        .call(&w)
        .unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(y.to_array::<f64>().unwrap()[[2, 1]], -2.0);
}

#[test]
fn huge_usize_in_dims_are_out_of_range_not_negative() {
    // usize::MAX used to wrap to -1 (the last dim) through an `as` cast.
    let x = Tensor::from(array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
    let err = vmap(|x| ops::neg(&x))
        .in_dims([Some(usize::MAX)])
        .call(&x)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("in_dim 9223372036854775807 or larger of input 0 is out of range"),
        "{err}"
    );
    let err = vmap(|x| ops::neg(&x))
        .out_dims(usize::MAX)
        .call(&x)
        .unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

#[test]
fn check_vmap_takes_any_output_shape() {
    let x = Tensor::from(array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
    // A tensor, a pair, and a list of outputs, without wrapping in `vec![...]`.
    check_vmap(|xs| ops::neg(&xs[0]), std::slice::from_ref(&x)).unwrap();
    check_vmap(
        |xs| Ok((ops::neg(&xs[0])?, ops::exp(&xs[0])?)),
        std::slice::from_ref(&x),
    )
    .unwrap();
    check_vmap(|xs| Ok(vec![ops::neg(&xs[0])?]), &[x]).unwrap();
}

/// `depth` nested vmaps around `ops::neg`, on a batch of 1 per level.
fn nested_neg(depth: usize, x: &Tensor) -> Result<Tensor> {
    if depth == 0 {
        return ops::neg(x);
    }
    vmap(|y: Tensor| nested_neg(depth - 1, &y)).call(x)
}

#[test]
fn nesting_is_bounded_by_an_error_not_a_stack_overflow() {
    let max = batchrules::dispatch::MAX_DEPTH;
    // Runs on a test thread (2 MiB of stack, like any spawned thread).
    let x = Tensor::from_shape_vec(&vec![1; max + 1], vec![2.0f64]).unwrap();
    let y = nested_neg(max, &x).unwrap();
    assert_eq!(y.to_array::<f64>().unwrap().iter().next(), Some(&-2.0));
    let x = Tensor::from_shape_vec(&vec![1; max + 2], vec![2.0f64]).unwrap();
    let err = nested_neg(max + 1, &x).unwrap_err();
    assert!(err.to_string().contains("cannot nest more than"), "{err}");
    // Far beyond the limit: still an error, never an overflow.
    let x = Tensor::from_shape_vec(&vec![1; 3001], vec![2.0f64]).unwrap();
    assert!(nested_neg(3000, &x).is_err());
}

mod structural {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "lost_batch_dim(Tensor self) -> Tensor"
kind = "primitive"
"#
    );
}

#[meta(op = "lost_batch_dim", table = structural)]
fn lost_batch_dim_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}
#[kernel(op = "lost_batch_dim", table = structural)]
fn lost_batch_dim_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}
#[batching_rule(op = "lost_batch_dim", table = structural)]
fn lost_batch_dim_rule(x: &Tensor, _bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    // Bug: a batch dim past the end of the output.
    Ok((x.clone(), Some(x.ndim())))
}

#[test]
fn rule_structural_checks_run_in_every_build() {
    // In a release build this used to panic (`index < len`) while wrapping.
    let err = vmap(|x: Tensor| structural::lost_batch_dim(&x))
        .call(&t(&[3, 4]))
        .unwrap_err();
    assert!(
        matches!(&err, Error::RuleBug { op, .. } if op == "lost_batch_dim"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .ends_with("output 0 has shape [3, 4] with batch dim 2, which is not a dim of size 3 (the batch size)"),
        "{err}"
    );
}

/// `scoped_fallback_policy` holds for the vmaps of its own thread while it
/// lives, and nowhere else: the other threads keep the global policy. (The
/// exhaustive sweeps rely on it to require batching rules without changing
/// the policy of the rest of this test binary.) `downstream_ops::cumsum` has
/// no batching rule, so vmap runs it in the fallback loop.
#[test]
fn a_scoped_fallback_policy_holds_on_its_own_thread_only() {
    use batchrules::{scoped_fallback_policy, FallbackPolicy};
    let x = Tensor::from(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
    let looped = |x: &Tensor| vmap(|x: Tensor| downstream_ops::ops::cumsum(&x, 0)).call(x);
    let want = looped(&x).expect("the fallback loop runs under the global policy");
    {
        let _policy = scoped_fallback_policy(FallbackPolicy::Error);
        let err = looped(&x).expect_err("the scope refuses the fallback loop");
        assert!(err.to_string().contains("cumsum"), "{err}");
        // Another thread is not in the scope.
        let there = std::thread::scope(|s| s.spawn(|| looped(&x)).join().unwrap());
        assert_eq!(
            there.unwrap().to_array::<f64>().unwrap(),
            want.to_array::<f64>().unwrap()
        );
        {
            let _inner = scoped_fallback_policy(FallbackPolicy::Silent);
            assert!(looped(&x).is_ok(), "the inner scope allows it again");
        }
        assert!(
            looped(&x).is_err(),
            "dropping the inner scope restores the outer one"
        );
    }
    assert!(
        looped(&x).is_ok(),
        "dropping the scope restores the global policy"
    );
}
