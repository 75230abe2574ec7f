//! Reading the values recorded from PyTorch (`tests/reference/*.json`, by the
//! scripts in `scripts/reference/`), shared by the suites that compare with
//! them.

use batchrules::prelude::*;

/// A recorded list of floats: numbers, and the strings "nan", "inf", "-inf"
/// (JSON has no non-finite numbers).
pub(crate) fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| match x.as_str() {
            Some("nan") => f64::NAN,
            Some("inf") => f64::INFINITY,
            Some("-inf") => f64::NEG_INFINITY,
            Some(other) => panic!("unexpected string {other:?}"),
            None => x.as_f64().expect("a number"),
        })
        .collect()
}

/// A recorded `{shape, values}` (finite numbers, row-major) as a tensor of
/// `dtype`.
pub(crate) fn tensor(v: &serde_json::Value, dtype: DType) -> Tensor {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap() as usize)
        .collect();
    let values: Vec<f64> = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let t = Tensor::from_shape_vec(&shape, values).unwrap();
    ops::to_dtype(&t, dtype).unwrap()
}

/// The elements of `t` as f64, in logical (row-major) order whatever its
/// layout: an op's result may be a view that is not in standard layout.
pub(crate) fn values(t: &Tensor) -> Vec<f64> {
    let t = ops::to_dtype(t, DType::F64).unwrap();
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

/// The first index where `got` and `want` disagree beyond `tol` (relative
/// where `|want| > 1`; NaN only with NaN, an infinity only with itself, and
/// `-0.0` only with `-0.0` when `tol` is 0). `got` and `want` must have the
/// same length.
pub(crate) fn disagreement(got: &[f64], want: &[f64], tol: f64) -> Option<usize> {
    assert_eq!(got.len(), want.len(), "number of values");
    (0..got.len()).find(|&i| {
        let (g, w) = (got[i], want[i]);
        if w.is_nan() || g.is_nan() {
            !(w.is_nan() && g.is_nan())
        } else if w.is_infinite() || g.is_infinite() || tol == 0.0 {
            g != w || g.is_sign_negative() != w.is_sign_negative()
        } else {
            (g - w).abs() > tol * w.abs().max(1.0)
        }
    })
}

/// The error of `result`, which must name the op and contain `word`.
pub(crate) fn assert_error<T: std::fmt::Debug>(op: &str, word: &str, result: Result<T>) {
    let e = result
        .expect_err(&format!("{op} should fail ({word})"))
        .to_string();
    assert!(e.contains(op), "{op}: the error names the op: {e}");
    assert!(e.contains(word), "{op}: the error says {word:?}: {e}");
}
