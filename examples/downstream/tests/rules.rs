//! The downstream crate's ops checked with batchrules' public testing helpers,
//! as a kernel author would check their own rules.

use batchrules::testing::{check_grad, check_grad_compositions, check_vmap, check_vmap_errors};
use batchrules::{vmap, FallbackPolicy, Tensor};
use downstream_ops::ops;

fn sample(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_shape_vec(shape, (0..n).map(|i| i as f64 - 1.5).collect()).unwrap()
}

#[test]
fn scale_rule_matches_the_loop() {
    let cases = check_vmap(|x| ops::scale(&x[0], -0.5), &[sample(&[2, 3])]).unwrap();
    assert!(cases > 10, "{cases}");
}

#[test]
fn scale_has_a_rule_not_the_loop() {
    let x = sample(&[4, 3]);
    vmap(|x: Tensor| ops::scale(&x, 2.0))
        .fallback(FallbackPolicy::Error)
        .call(&x)
        .unwrap();
}

#[test]
fn scale_rejects_integers_under_vmap_too() {
    let ints = Tensor::from_shape_vec(&[3], vec![1i64, 2, 3]).unwrap();
    check_vmap_errors(|x| Ok(vec![ops::scale(&x[0], 2.0)?]), &[ints]).unwrap();
}

#[test]
fn composite_decomposes_under_vmap() {
    check_vmap(
        |x| Ok(vec![ops::sum_of_squares(&x[0], Some(-1))?]),
        &[sample(&[3, 2])],
    )
    .unwrap();
    check_vmap(
        |x| Ok(vec![ops::sum_of_squares(&x[0], None)?]),
        &[sample(&[3])],
    )
    .unwrap();
}

#[test]
fn op_without_rule_is_correct_through_the_fallback() {
    batchrules::set_fallback_policy(FallbackPolicy::Silent);
    check_vmap(|x| ops::cumsum(&x[0], 0), &[sample(&[4])]).unwrap();
    check_vmap_errors(|x| Ok(vec![ops::cumsum(&x[0], 1)?]), &[sample(&[4])]).unwrap();
}

#[test]
fn vjps_match_finite_differences() {
    let x = sample(&[2, 3]);
    check_grad(
        |x| Ok(vec![ops::scale(&x[0], -0.5)?]),
        std::slice::from_ref(&x),
    )
    .unwrap();
    check_grad(
        |x| Ok(vec![ops::cumsum(&x[0], 1)?]),
        std::slice::from_ref(&x),
    )
    .unwrap();
    // The composite is differentiated through its decomposition.
    check_grad(|x| Ok(vec![ops::sum_of_squares(&x[0], Some(0))?]), &[x]).unwrap();
}

#[test]
fn scale_vjp_composes_with_vmap_and_itself() {
    // vmap∘vjp, vjp∘vmap, vjp∘vjp and vmap∘vjp∘vjp, on every in_dims combination.
    let f = |x: &[Tensor]| Ok(vec![ops::scale(&x[0], 3.0)?]);
    let cases = check_grad_compositions(f, &[sample(&[2, 3])]).unwrap();
    assert!(cases > 10, "{cases}");
}

#[test]
fn scale_jvp_through_the_registry_is_scale_of_the_tangent() {
    use batchrules::coverage::{jvp_status, JvpStatus};
    use batchrules::registry::registry;
    use batchrules::rules::Arg;
    use batchrules::transform::jvps;
    let reg = registry().unwrap();
    let entry = reg.find(ops::__PATH, "scale").unwrap();
    assert_eq!(jvp_status(entry).unwrap(), JvpStatus::Jvp);
    assert_eq!(
        jvps::TABLE.location(entry).unwrap().unwrap().function,
        "scale_jvp"
    );
    let jvp = jvps::TABLE.get(entry).unwrap().unwrap();
    let x = sample(&[2, 3]);
    let factor = -2.5;
    let tangent = Tensor::from_shape_vec(&[2, 3], vec![1.0f64, 0.5, -3.0, 2.0, 0.0, 7.25]).unwrap();
    let args = [Arg::Tensor(x.clone()), Arg::Float(factor)];
    let out = [ops::scale(&x, factor).unwrap()];
    let tangents = jvp(&args, &out, &[vec![Some(tangent.clone())]]).unwrap();
    assert_eq!(tangents.len(), 1);
    let got = tangents[0].as_ref().unwrap().to_array::<f64>().unwrap();
    let want = ops::scale(&tangent, factor)
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    assert_eq!(got, want);
    assert_eq!(got.shape(), &[2, 3]);
    assert_eq!(got[[1, 2]], 7.25 * factor);
    // A zero tangent stays zero.
    let zero = jvp(&args, &out, &[vec![None]]).unwrap();
    assert_eq!(zero.len(), 1);
    assert!(zero[0].is_none());
}

#[test]
fn cumsum_is_linear_so_its_jvp_is_derived() {
    use batchrules::coverage::{jvp_status, missing_jvps, JvpStatus};
    use batchrules::registry::registry;
    use batchrules::transform::jvps;
    let reg = registry().unwrap();
    let entry = reg.find(ops::__PATH, "cumsum").unwrap();
    assert!(entry.schema.linear);
    assert!(jvps::TABLE.get(entry).unwrap().is_none());
    assert_eq!(jvp_status(entry).unwrap(), JvpStatus::Linear);
    assert!(missing_jvps()
        .unwrap()
        .iter()
        .all(|e| e.table.path != ops::__PATH));
}
