//! The testing helpers must fail on wrong batching rules. Each op here has a
//! correct kernel and a deliberately wrong rule that an earlier version of
//! `check_vmap` / `check_vmap_errors` let pass; each test asserts the helper
//! now reports it.

use batchrules::rules::TensorMeta;
use batchrules::testing::{check_vmap, check_vmap_errors, MAX_COMBINATIONS};
use batchrules::{batching_rule, kernel, meta, Error, Result, Tensor};

mod wrong {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "swap_examples(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "flip_infinity(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "off_by_one_when_huge(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "reject_negative(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "needs_an_example(Tensor self) -> Tensor"
kind = "primitive"
"#
    );
}

/// Every op here is the identity per example, with the same meta.
#[meta(op = "swap_examples", table = wrong)]
fn swap_examples_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}
#[meta(op = "flip_infinity", table = wrong)]
fn flip_infinity_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}
#[meta(op = "off_by_one_when_huge", table = wrong)]
fn off_by_one_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}
#[meta(op = "reject_negative", table = wrong)]
fn reject_negative_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}
#[meta(op = "needs_an_example", table = wrong)]
fn needs_an_example_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}

#[kernel(op = "swap_examples", table = wrong)]
fn swap_examples_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}
#[kernel(op = "flip_infinity", table = wrong)]
fn flip_infinity_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}
#[kernel(op = "off_by_one_when_huge", table = wrong)]
fn off_by_one_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}
#[kernel(op = "needs_an_example", table = wrong)]
fn needs_an_example_kernel(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}
/// A data-dependent check (kernels own those): negative values are rejected.
#[kernel(op = "reject_negative", table = wrong)]
fn reject_negative_kernel(x: &Tensor) -> Result<Tensor> {
    if x.to_array::<i64>()?.iter().any(|&v| v < 0) {
        return Err(Error::invalid("negative values are not allowed"));
    }
    Ok(x.clone())
}

/// Wrong: reverses the order of the examples.
#[batching_rule(op = "swap_examples", table = wrong)]
fn swap_examples_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    let x = batchrules::batching::bdim_to_front(x, bdim)?;
    let n = x.shape()[0] as i64;
    let reversed = Tensor::from_shape_vec(&[n as usize], (0..n).rev().collect())?;
    Ok((batchrules::ops::index_select(&x, 0, &reversed)?, Some(0)))
}

/// Wrong: `abs` turns `-inf` into `+inf` (and is the identity elsewhere on
/// the non-negative inputs used below).
#[batching_rule(op = "flip_infinity", table = wrong)]
fn flip_infinity_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    Ok((batchrules::ops::abs(x)?, bdim))
}

/// Wrong: adds 1 to values above 2^59, which f64 cannot tell apart near 2^60.
#[batching_rule(op = "off_by_one_when_huge", table = wrong)]
fn off_by_one_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    let big = batchrules::ops::gt(x, &Tensor::scalar(1i64 << 59))?;
    Ok((batchrules::ops::add(x, &big)?, bdim))
}

/// Wrong: instead of the example's error, reports a batch dim that does not
/// exist, which the dispatcher turns into a `RuleBug`.
#[batching_rule(op = "reject_negative", table = wrong)]
fn reject_negative_rule(x: &Tensor, _bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    Ok((x.clone(), Some(x.ndim() + 5)))
}

/// Wrong: reads example 0, so it fails on an empty batch.
#[batching_rule(op = "needs_an_example", table = wrong)]
fn needs_an_example_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    let b = bdim.unwrap_or(0);
    x.select(b, 0)?;
    Ok((x.clone(), bdim))
}

fn i64s(values: &[i64]) -> Tensor {
    Tensor::from_shape_vec(&[values.len()], values.to_vec()).unwrap()
}

#[test]
fn a_rule_that_mixes_up_integer_examples_fails() {
    // Integer inputs used to be repeated unchanged across the batch, so
    // reversing the examples changed nothing.
    let m = check_vmap(|x| wrong::swap_examples(&x[0]), &[i64s(&[1, 2, 3])]).unwrap_err();
    assert!(m.detail.contains("vmap gave"), "{m}");
}

#[test]
fn minus_infinity_is_not_plus_infinity() {
    let x = Tensor::from(ndarray::array![f64::NEG_INFINITY, 1.0].into_dyn());
    let m = check_vmap(|x| wrong::flip_infinity(&x[0]), &[x]).unwrap_err();
    assert!(m.detail.contains("-inf"), "{m}");
}

#[test]
fn large_integers_are_compared_exactly() {
    let x = i64s(&[1 << 60, (1 << 60) + 2]);
    let m = check_vmap(|x| wrong::off_by_one_when_huge(&x[0]), &[x]).unwrap_err();
    assert!(m.detail.contains("1152921504606846977"), "{m}");
}

#[test]
fn check_vmap_errors_requires_the_examples_error() {
    // Any error used to count; a RuleBug is not the example's error.
    let m = check_vmap_errors(|x| wrong::reject_negative(&x[0]), &[i64s(&[1, -2])]).unwrap_err();
    assert!(m.detail.contains("different error"), "{m}");
    assert!(m.detail.contains("bug in batching rule"), "{m}");
}

#[test]
fn an_empty_batch_is_checked() {
    let m = check_vmap(|x| wrong::needs_an_example(&x[0]), &[i64s(&[1, 2])]).unwrap_err();
    assert!(m.case.contains("batch size 0"), "{m}");
}

#[test]
fn ten_rank_2_inputs_are_checked_within_a_budget() {
    // Every in_dims combination of ten rank-2 inputs is 4^10 (about a
    // million) per batch size; the helper checks a bounded selection.
    let inputs: Vec<Tensor> = (0..10)
        .map(|i| Tensor::from_shape_vec(&[2, 2], vec![i as f64; 4]).unwrap())
        .collect();
    let cases = check_vmap(
        |xs| {
            xs.iter()
                .skip(1)
                .try_fold(xs[0].clone(), |acc, x| batchrules::ops::add(&acc, x))
        },
        &inputs,
    )
    .unwrap();
    let bound = MAX_COMBINATIONS * batchrules::testing::BATCH_SIZES.len() + MAX_COMBINATIONS;
    assert!(cases > 20 && cases <= bound, "{cases} cases, bound {bound}");
}
