// A table declared inline, using every schema type, optional forms, defaults
// and every return form, with a correct registration for each role.
// The signatures are spelled out as the schema maps them, nested tuples included.
#![allow(clippy::type_complexity)]
use batchrules::rules::TensorMeta;
use batchrules::{batching_rule, decompose, kernel, meta, DType, Result, Tensor};

mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "everything(Tensor self, Tensor[] others, int n, int[] dims, float alpha, bool flag, ScalarType dtype, int? k=None, int[]? sizes=None, float? beta=None, bool? strict=None, ScalarType? out_dtype=None, Tensor? weight=None, int step=1, float scale=1.5, bool keep=True, int[] pads=[0, 1], ScalarType acc=f64) -> Tensor"
kind = "primitive"
doc = "Takes one argument of every type."

[[op]]
schema = "split2(Tensor self, int dim=0) -> (Tensor, Tensor)"
kind = "primitive"

[[op]]
schema = "chunk(Tensor self, int chunks, int dim=0) -> Tensor[]"
kind = "primitive"

[[op]]
schema = "concat(Tensor[] tensors, int dim=0) -> Tensor"
kind = "primitive"

[[op]]
schema = "masked_minmax(Tensor self, Tensor? mask=None) -> (Tensor values, Tensor indices)"
kind = "composite"

[[op]]
schema = "unbind(Tensor self, int dim=0) -> Tensor[]"
kind = "composite"
"#
    );
}

// everything: one parameter per schema argument; the rule adds a batch dim
// after each tensor (`Option<usize>`) and tensor list (`&[Option<usize>]`).

#[kernel(op = "everything", table = crate::ops)]
#[allow(clippy::too_many_arguments)]
fn everything_kernel(
    x: &Tensor,
    others: &[Tensor],
    n: i64,
    dims: &[i64],
    alpha: f64,
    flag: bool,
    dtype: DType,
    k: Option<i64>,
    sizes: Option<&[i64]>,
    beta: Option<f64>,
    strict: Option<bool>,
    out_dtype: Option<DType>,
    weight: Option<&Tensor>,
    step: i64,
    scale: f64,
    keep: bool,
    pads: &[i64],
    acc: DType,
) -> Result<Tensor> {
    let _ = (
        x, others, n, dims, alpha, flag, dtype, k, sizes, beta, strict, out_dtype,
    );
    let _ = (weight, step, scale, keep, pads, acc);
    todo!()
}

#[meta(op = "everything", table = crate::ops)]
#[allow(clippy::too_many_arguments)]
fn everything_meta(
    x: &TensorMeta,
    others: &[TensorMeta],
    n: i64,
    dims: &[i64],
    alpha: f64,
    flag: bool,
    dtype: DType,
    k: Option<i64>,
    sizes: Option<&[i64]>,
    beta: Option<f64>,
    strict: Option<bool>,
    out_dtype: Option<DType>,
    weight: Option<&TensorMeta>,
    step: i64,
    scale: f64,
    keep: bool,
    pads: &[i64],
    acc: DType,
) -> Result<TensorMeta> {
    let _ = (
        others, n, dims, alpha, flag, dtype, k, sizes, beta, strict, out_dtype,
    );
    let _ = (weight, step, scale, keep, pads, acc);
    Ok(x.clone())
}

#[batching_rule(op = "everything", table = crate::ops)]
#[allow(clippy::too_many_arguments)]
fn everything_rule(
    x: &Tensor,
    x_bdim: Option<usize>,
    others: &[Tensor],
    others_bdims: &[Option<usize>],
    n: i64,
    dims: &[i64],
    alpha: f64,
    flag: bool,
    dtype: DType,
    k: Option<i64>,
    sizes: Option<&[i64]>,
    beta: Option<f64>,
    strict: Option<bool>,
    out_dtype: Option<DType>,
    weight: Option<&Tensor>,
    weight_bdim: Option<usize>,
    step: i64,
    scale: f64,
    keep: bool,
    pads: &[i64],
    acc: DType,
) -> Result<(Tensor, Option<usize>)> {
    let _ = (
        x,
        x_bdim,
        others,
        others_bdims,
        n,
        dims,
        alpha,
        flag,
        dtype,
        k,
        sizes,
    );
    let _ = (
        beta,
        strict,
        out_dtype,
        weight,
        weight_bdim,
        step,
        scale,
        keep,
        pads,
        acc,
    );
    todo!()
}

// split2: `-> (Tensor, Tensor)`.

#[kernel(op = "split2", table = crate::ops)]
fn split2_kernel(x: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    let _ = (x, dim);
    todo!()
}

#[meta(op = "split2", table = crate::ops)]
fn split2_meta(x: &TensorMeta, _dim: i64) -> Result<(TensorMeta, TensorMeta)> {
    Ok((x.clone(), x.clone()))
}

#[batching_rule(op = "split2", table = crate::ops)]
fn split2_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: i64,
) -> Result<((Tensor, Option<usize>), (Tensor, Option<usize>))> {
    let _ = (x, bdim, dim);
    todo!()
}

// chunk: `-> Tensor[]`.

#[kernel(op = "chunk", table = crate::ops)]
fn chunk_kernel(x: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    let _ = (x, chunks, dim);
    todo!()
}

#[meta(op = "chunk", table = crate::ops)]
fn chunk_meta(x: &TensorMeta, chunks: i64, _dim: i64) -> Result<Vec<TensorMeta>> {
    Ok(vec![x.clone(); chunks as usize])
}

#[batching_rule(op = "chunk", table = crate::ops)]
fn chunk_rule(
    x: &Tensor,
    bdim: Option<usize>,
    chunks: i64,
    dim: i64,
) -> Result<(Vec<Tensor>, Vec<Option<usize>>)> {
    let _ = (x, bdim, chunks, dim);
    todo!()
}

// concat: a `Tensor[]` argument.

#[kernel(op = "concat", table = crate::ops)]
fn concat_kernel(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let _ = (tensors, dim);
    todo!()
}

#[meta(op = "concat", table = crate::ops)]
fn concat_meta(tensors: &[TensorMeta], _dim: i64) -> Result<TensorMeta> {
    Ok(tensors[0].clone())
}

#[batching_rule(op = "concat", table = crate::ops)]
fn concat_rule(
    tensors: &[Tensor],
    bdims: &[Option<usize>],
    dim: i64,
) -> Result<(Tensor, Option<usize>)> {
    let _ = (tensors, bdims, dim);
    todo!()
}

// Composite ops: a decomposition (kernel signature) and a meta.

#[decompose(op = "masked_minmax", table = crate::ops)]
fn masked_minmax(x: &Tensor, mask: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
    let _ = (x, mask);
    todo!()
}

#[meta(op = "masked_minmax", table = crate::ops)]
fn masked_minmax_meta(
    x: &TensorMeta,
    _mask: Option<&TensorMeta>,
) -> Result<(TensorMeta, TensorMeta)> {
    Ok((x.clone(), x.clone()))
}

#[decompose(op = "unbind", table = crate::ops, vmap = "fallback")]
fn unbind(x: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let _ = (x, dim);
    todo!()
}

#[meta(op = "unbind", table = crate::ops)]
fn unbind_meta(x: &TensorMeta, _dim: i64) -> Result<Vec<TensorMeta>> {
    Ok(vec![x.clone()])
}

fn main() {
    // The typed op functions exist with the kernel signatures.
    let _: fn(&Tensor, i64) -> Result<(Tensor, Tensor)> = ops::split2;
    let _: fn(&Tensor, i64, i64) -> Result<Vec<Tensor>> = ops::chunk;
    let _: fn(&[Tensor], i64) -> Result<Tensor> = ops::concat;
    let _: fn(&Tensor, Option<&Tensor>) -> Result<(Tensor, Tensor)> = ops::masked_minmax;
}
