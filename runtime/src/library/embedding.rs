//! `embedding` (`ops/embedding.toml`): a composite over `index_select`, whose
//! vjp is the scatter-add (`index_add`) of the cotangent's rows, batched under
//! vmap like any op. The rows at `padding_idx` are looked up through
//! `detach`, so they get no gradient: a `where` over the looked-up rows (the
//! size of the result), not over the whole weight.

use crate::{decompose, meta, ops, DType, Error, Result, Tensor, TensorMeta};

/// `padding_idx` as a row of a weight with `rows` rows (a negative one counts
/// from the end), or `None` if it is out of `-rows..rows`.
fn padding_row(padding_idx: i64, rows: usize) -> Option<i64> {
    let rows = i64::try_from(rows).ok()?;
    let row = if padding_idx < 0 {
        padding_idx.checked_add(rows)?
    } else {
        padding_idx
    };
    (0..rows).contains(&row).then_some(row)
}

#[meta(op = "embedding")]
fn embedding_meta(
    input: &TensorMeta,
    weight: &TensorMeta,
    padding_idx: Option<i64>,
) -> Result<TensorMeta> {
    if input.dtype() != DType::I64 {
        return Err(Error::invalid(format!(
            "input must hold i64 indices, got {}",
            input.dtype()
        )));
    }
    let &[rows, dim] = weight.shape() else {
        return Err(Error::invalid(format!(
            "weight must be 2-d [num_embeddings, embedding_dim], got shape {:?}",
            weight.shape()
        )));
    };
    if !weight.dtype().is_float() {
        return Err(Error::invalid(format!(
            "weight must be a floating-point tensor, got {}",
            weight.dtype()
        )));
    }
    if let Some(p) = padding_idx
        && padding_row(p, rows).is_none()
    {
        return Err(Error::invalid(format!(
            "padding_idx {p} is out of range for {rows} embeddings (valid: -{rows}..{rows})"
        )));
    }
    let mut shape = input.shape().to_vec();
    shape.push(dim);
    Ok(TensorMeta::new(shape, weight.dtype()))
}

#[decompose(op = "embedding")]
fn embedding_decomposition(
    input: &Tensor,
    weight: &Tensor,
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    let as_i64 = |s: usize| i64::try_from(s).unwrap_or(i64::MAX);
    let n = as_i64(input.shape().iter().product());
    let rows = ops::index_select(weight, 0, &ops::reshape(input, &[n])?)?;
    let mut shape: Vec<i64> = input.shape().iter().map(|&s| as_i64(s)).collect();
    shape.push(as_i64(weight.shape()[1]));
    let out = ops::reshape(&rows, &shape)?;
    let Some(row) = padding_idx.and_then(|p| padding_row(p, weight.shape()[0])) else {
        return Ok(out);
    };
    // The same values; no gradient where the index is the padding row.
    let padding = ops::unsqueeze(&ops::eq(input, &Tensor::scalar(row))?, -1)?;
    ops::where_(&padding, &ops::detach(&out)?, &out)
}
