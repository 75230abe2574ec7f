//! Linear algebra: triangular masks.

use ndarray::{ArcArray, IxDyn};

use crate::batching::leading_batch;
use crate::{
    batching_rule, each_dtype, kernel, meta, ops, Element, Error, Result, Tensor, TensorMeta,
};

/// Both triangle ops need a matrix per example: at least 2 (logical) dims.
fn triangle_meta(x: &TensorMeta) -> Result<TensorMeta> {
    if x.ndim() < 2 {
        return Err(Error::invalid(format!(
            "expected a tensor with at least 2 dims, got shape {:?}",
            x.shape()
        )));
    }
    Ok(x.clone())
}

/// Zeroes the elements of the last two dims where `keep(col - row)` is false.
fn mask<T: Element>(a: &ArcArray<T, IxDyn>, keep: impl Fn(i64) -> bool) -> Tensor {
    let mut out = a.to_owned();
    let n = out.ndim();
    for (idx, v) in out.indexed_iter_mut() {
        let (row, col) = (idx[n - 2] as i64, idx[n - 1] as i64);
        if !keep(col - row) {
            *v = T::default();
        }
    }
    Tensor::from(out)
}

#[meta(op = "triu")]
fn triu_meta(x: &TensorMeta, _diagonal: i64) -> Result<TensorMeta> {
    triangle_meta(x)
}

#[kernel(op = "triu")]
fn triu_kernel(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    Ok(each_dtype!(x.data()?, a => mask(a, |d| d >= diagonal)))
}

#[batching_rule(op = "triu")]
fn triu_rule(x: &Tensor, bdim: Option<usize>, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    leading_batch(|t| ops::triu(t, diagonal), x, bdim)
}

#[meta(op = "tril")]
fn tril_meta(x: &TensorMeta, _diagonal: i64) -> Result<TensorMeta> {
    triangle_meta(x)
}

#[kernel(op = "tril")]
fn tril_kernel(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    Ok(each_dtype!(x.data()?, a => mask(a, |d| d <= diagonal)))
}

#[batching_rule(op = "tril")]
fn tril_rule(x: &Tensor, bdim: Option<usize>, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    leading_batch(|t| ops::tril(t, diagonal), x, bdim)
}

fn triangle_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[3, 3]), 0i64],
        crate::args![&f64s(&[2, 4]), 1i64],
        crate::args![&f64s(&[4, 2]), -1i64],
        crate::args![&i64s(&[2, 2, 3], 9), 0i64],
        crate::args![&bools(&[3, 3]), 2i64],
        crate::args![&f64s(&[0, 2]), 0i64],
    ]
}

fn triangle_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2]), 0i64],
        crate::args![&f64s(&[]), 0i64],
    ]
}

crate::op_samples!(
    op = "triu",
    samples = triangle_samples,
    errors = triangle_errors
);
crate::op_samples!(
    op = "tril",
    samples = triangle_samples,
    errors = triangle_errors
);
