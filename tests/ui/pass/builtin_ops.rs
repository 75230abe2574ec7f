// Every attribute on ops of the built-in table (`batchrules::ops`, the default),
// spelled in the ways the signature check accepts: imported or fully qualified
// types, named lifetimes, `Result<T>` or `Result<T, Error>`.
//
// These register second kernels for built-in ops, which the registry's runtime
// audit reports; this program only has to compile, so it never calls an op.
use batchrules::rules::TensorMeta;
use batchrules::{batching_rule, decompose, kernel, meta, Error, Result, Tensor};

#[kernel(op = "triu")]
fn triu_kernel(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    let _ = (x, diagonal);
    todo!()
}

#[meta(op = "triu")]
fn triu_meta(x: &TensorMeta, _diagonal: i64) -> Result<TensorMeta> {
    Ok(x.clone())
}

#[batching_rule(op = "triu")]
fn triu_rule(x: &Tensor, bdim: Option<usize>, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim, diagonal);
    todo!()
}

#[decompose(op = "softmax")]
fn softmax_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

#[decompose(op = "softmax", vmap = "fallback")]
fn softmax_decomposition_fallback(x: &Tensor, dim: i64) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

#[decompose(op = "softmax", vmap = "decompose", table = batchrules::ops)]
fn softmax_decomposition_explicit(x: &Tensor, dim: i64) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

#[meta(op = "softmax")]
fn softmax_meta(x: &TensorMeta, _dim: i64) -> Result<TensorMeta> {
    Ok(x.clone())
}

#[kernel(op = "sum", table = ::batchrules::ops)]
#[allow(clippy::needless_lifetimes)] // an explicit lifetime is part of what this case checks
fn sum_kernel<'a>(
    x: &'a batchrules::Tensor,
    dim: Option<i64>,
    keepdim: bool,
) -> std::result::Result<batchrules::Tensor, Error> {
    let _ = (x, dim, keepdim);
    todo!()
}

#[batching_rule(op = "add")]
fn add_rule(
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
) -> batchrules::Result<(Tensor, Option<usize>)> {
    let _ = (a, a_bdim, b, b_bdim);
    todo!()
}

#[meta(op = "amax")]
fn amax_meta(x: &TensorMeta, _dim: Option<i64>, _keepdim: bool) -> Result<TensorMeta> {
    Ok(x.clone())
}

fn main() {}
