// Every attribute on ops of a downstream crate's table
// (`table = downstream_ops::ops`).
use batchrules::rules::TensorMeta;
use batchrules::{batching_rule, decompose, kernel, meta, Result, Tensor};

#[kernel(op = "scale", table = downstream_ops::ops)]
fn scale_kernel(x: &Tensor, factor: f64) -> Result<Tensor> {
    let _ = (x, factor);
    todo!()
}

#[meta(op = "scale", table = downstream_ops::ops)]
fn scale_meta(x: &TensorMeta, _factor: f64) -> Result<TensorMeta> {
    Ok(x.clone())
}

#[batching_rule(op = "scale", table = downstream_ops::ops)]
fn scale_rule(x: &Tensor, bdim: Option<usize>, factor: f64) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim, factor);
    todo!()
}

#[batching_rule(op = "cumsum", table = ::downstream_ops::ops)]
fn cumsum_rule(x: &Tensor, bdim: Option<usize>, dim: i64) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim, dim);
    todo!()
}

#[decompose(op = "sum_of_squares", table = downstream_ops::ops)]
fn sum_of_squares(x: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

#[decompose(op = "sum_of_squares", table = downstream_ops::ops, vmap = "fallback")]
fn sum_of_squares_fallback(x: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

#[meta(op = "sum_of_squares", table = downstream_ops::ops)]
fn sum_of_squares_meta(x: &TensorMeta, _dim: Option<i64>) -> Result<TensorMeta> {
    Ok(x.clone())
}

fn main() {}
