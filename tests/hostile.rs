//! Hostile input: absurd sizes are errors naming the op (never an abort), and
//! an error raised inside an op's implementation names the op the user called.

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
    let err = ops::cross_entropy(&logits, &target, 1).unwrap_err();
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
