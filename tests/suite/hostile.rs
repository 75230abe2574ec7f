//! Hostile input: absurd sizes are errors naming the op (never an abort), and
//! an error raised inside an op's implementation names the op the user called.

use batchrules::rules::Arg;
use batchrules::Reduction;
use batchrules::{ops, vmap, DType, Error, Tensor};
use ndarray::{array, Array};

fn f32s(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_shape_vec(shape, (0..n).map(|i| i as f32).collect()).unwrap()
}

/// `err` names `op` first, as the user called it.
fn names(err: &Error, op: &str) {
    assert_eq!(err.op(), Some(op), "{err}");
    assert!(err.to_string().starts_with(&format!("{op}: ")), "{err}");
}

#[test]
fn absurd_factory_sizes_are_errors_not_aborts() {
    for size in [[1i64 << 40], [1i64 << 62]] {
        for err in [
            ops::zeros(&size, DType::F32).unwrap_err(),
            ops::ones(&size, DType::I64).unwrap_err(),
            ops::full(&size, 1.0, DType::F64).unwrap_err(),
        ] {
            assert!(
                err.op()
                    .is_some_and(|o| ["zeros", "ones", "full"].contains(&o)),
                "{err}"
            );
            assert!(
                err.to_string().contains("too large")
                    || err.to_string().contains("allocation limit"),
                "{err}"
            );
        }
    }
    let err = ops::arange(0.0, 1e17, 1.0, DType::I64).unwrap_err();
    names(&err, "arange");
}

#[test]
fn absurd_views_and_products_are_errors_not_aborts() {
    let x = f32s(&[1]);
    let err = ops::expand(&x, &[1 << 40]).unwrap_err();
    names(&err, "expand");
    assert!(err.to_string().contains("allocation limit"), "{err}");

    // A [2^20, 2^20] f32 product is 4 TiB.
    let col = Tensor::from_shape_vec(&[1 << 20], vec![1.0f32; 1 << 20]).unwrap();
    names(&ops::outer(&col, &col).unwrap_err(), "outer");
    let a = col.unsqueezed(1).unwrap();
    let b = col.unsqueezed(0).unwrap();
    names(&ops::matmul(&a, &b).unwrap_err(), "matmul");

    // Reducing away the empty dim of a [0, 2^40] tensor leaves [2^40].
    let empty = ops::expand(&f32s(&[0, 1]), &[0, 1 << 40]).unwrap();
    names(&ops::sum(&empty, Some(0), false).unwrap_err(), "sum");
}

#[test]
fn a_huge_batch_of_an_unbatched_output_is_an_error() {
    let w = Tensor::from(array![1.0f64, 2.0].into_dyn());
    let err = vmap(|w| ops::neg(&w))
        .in_dims(None)
        .batch_size(1 << 40)
        .call(&w)
        .unwrap_err();
    assert!(err.to_string().contains("allocation limit"), "{err}");
}

#[test]
fn errors_inside_a_decomposition_name_the_op_called() {
    // cross_entropy decomposes into log_softmax and gather; a class id out of
    // range is found by gather's kernel.
    let logits = f32s(&[2, 3]);
    let target = Tensor::from(array![0i64, 7].into_dyn());
    let err = ops::cross_entropy(&logits, &target, Reduction::Mean).unwrap_err();
    names(&err, "cross_entropy");
    assert!(
        err.to_string().contains("gather"),
        "the inner op follows as context: {err}"
    );
}

#[test]
fn errors_inside_a_batching_rule_name_the_op_called() {
    let x = Tensor::from(Array::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f64).into_dyn());
    let index = Tensor::from(array![0i64, 9].into_dyn());
    let err = vmap(|x| ops::index_select(&x, 0, &index))
        .call(&x)
        .unwrap_err();
    names(&err, "index_select");
}

mod ragged {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "first_n(Tensor self) -> Tensor"
kind = "primitive"
doc = "The first x[0] elements of x: a data-dependent shape, so no batching rule (and a meta that cannot know the shape)."
"#
    );
}

#[batchrules::meta(op = "first_n", table = ragged)]
fn first_n_meta(
    x: &batchrules::rules::TensorMeta,
) -> batchrules::Result<batchrules::rules::TensorMeta> {
    Ok(x.clone())
}

#[batchrules::kernel(op = "first_n", table = ragged)]
fn first_n_kernel(x: &Tensor) -> batchrules::Result<Tensor> {
    let a = x.to_array::<i64>()?;
    let n = usize::try_from(a[[0]]).unwrap_or(0).min(a.len());
    Tensor::from_shape_vec(&[n], a.iter().take(n).copied().collect())
}

#[test]
fn a_fallback_whose_examples_differ_in_shape_names_the_op() {
    batchrules::set_fallback_policy(batchrules::FallbackPolicy::Silent);
    let x = Tensor::from(array![[1i64, 5, 6], [2, 7, 8]].into_dyn());
    let err = vmap(|x| ragged::first_n(&x)).call(&x).unwrap_err();
    assert!(
        err.to_string()
            .contains("op `first_n` (fallback loop): output 0 differs between examples"),
        "{err}"
    );
}

#[test]
fn erased_calls_are_checked_against_the_schema() {
    let reg = batchrules::registry::registry().unwrap();
    let neg = reg.find("batchrules::ops", "neg").unwrap();
    let x = Arg::Tensor(f32s(&[2]));
    // An extra trailing argument used to be ignored.
    let err = batchrules::dispatch::call_op(neg, &[x.clone(), Arg::Int(3)]).unwrap_err();
    names(&err, "neg");
    assert!(err.to_string().contains("expected 1 arguments"), "{err}");
    // The wrong kind of argument.
    let triu = reg.find("batchrules::ops", "triu").unwrap();
    let err = batchrules::dispatch::call_op(triu, &[x.clone(), Arg::Float(0.0)]).unwrap_err();
    names(&err, "triu");
    assert!(err.to_string().contains("argument 1 (`diagonal`)"), "{err}");
    assert!(batchrules::dispatch::call_op(neg, &[x]).is_ok());
}
