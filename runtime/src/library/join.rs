//! Joining ops: `cat` and `stack`, which promote their inputs to a common dtype
//! (`bool < i64 < f32 < f64`) and copy. Semantics follow PyTorch.
//!
//! Their rules batch every operand at the front ([`materialize_at_front`]:
//! unbatched operands are repeated over the batch), then join along the
//! physical dim.

use ndarray::Axis;

use super::dims::{dim_in, new_dim_in};
use crate::batching::{materialize_at_front, physical_dim, physical_new_dim};
use crate::core::cast::cast;
use crate::{
    batching_rule, kernel, meta, ops, DType, Data, Element, Error, Result, Tensor, TensorMeta,
};

/// The dtype all of `dtypes` promote to (bool < i64 < f32 < f64).
fn promoted(mut dtypes: impl Iterator<Item = DType>) -> Result<DType> {
    let first = dtypes
        .next()
        .ok_or_else(|| Error::invalid("expected a non-empty list of tensors, got an empty list"))?;
    Ok(dtypes.fold(first, DType::promote))
}

/// A dense 1-d tensor of shape `[0]`.
fn empty_1d(dtype: DType) -> Result<Tensor> {
    Tensor::empty(&[0], dtype)
}

// ---------------------------------------------------------------------------
// cat and stack

/// As in PyTorch, `cat` skips 1-d empty tensors (shape `[0]`) when some other
/// tensor has another shape.
fn skipped_by_cat(shape: &[usize]) -> bool {
    shape == [0]
}

/// The indices of the tensors `cat` concatenates: those not skipped, or all of
/// them if every one is skipped.
fn cat_operands(shapes: &[&[usize]]) -> Vec<usize> {
    let kept: Vec<usize> = (0..shapes.len())
        .filter(|&i| !skipped_by_cat(shapes[i]))
        .collect();
    if kept.is_empty() {
        (0..shapes.len()).collect()
    } else {
        kept
    }
}

/// The output shape of `cat`, and the resolved dim.
fn cat_shape(shapes: &[&[usize]], dim: i64) -> Result<(Vec<usize>, usize)> {
    if shapes.is_empty() {
        return Err(Error::invalid(
            "expected a non-empty list of tensors, got an empty list",
        ));
    }
    if let Some(i) = shapes.iter().position(|s| s.is_empty()) {
        return Err(Error::invalid(format!(
            "tensor {i} is 0-d and cannot be concatenated (unsqueeze it first, or use stack)"
        )));
    }
    let kept = cat_operands(shapes);
    let i0 = kept[0];
    let first = shapes[i0];
    let d = dim_in(dim, first)?;
    let mut out = first.to_vec();
    out[d] = 0;
    for &i in &kept {
        let s = shapes[i];
        if s.len() != first.len() {
            return Err(Error::invalid(format!(
                "tensor {i} has shape {s:?} and tensor {i0} has shape {first:?}: \
                 the tensors must have the same number of dims"
            )));
        }
        if let Some(k) = (0..s.len()).find(|&k| k != d && s[k] != first[k]) {
            return Err(Error::invalid(format!(
                "tensor {i} has shape {s:?} and tensor {i0} has shape {first:?}: \
                 they must agree in every dim but dim {d}, and differ in dim {k}"
            )));
        }
        // Checked: sizes of tensors with no elements can be huge, and their sum
        // can overflow.
        out[d] = out[d].checked_add(s[d]).ok_or_else(|| {
            Error::invalid(format!(
                "the concatenated dim {d} would have more than {} entries",
                usize::MAX
            ))
        })?;
    }
    Ok((out, d))
}

#[meta(op = "cat")]
fn cat_meta(tensors: &[TensorMeta], dim: i64) -> Result<TensorMeta> {
    let shapes: Vec<&[usize]> = tensors.iter().map(TensorMeta::shape).collect();
    let (shape, _) = cat_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(TensorMeta::dtype))?;
    Ok(TensorMeta::new(shape, dtype))
}

/// How [`join`] combines arrays.
#[derive(Clone, Copy)]
enum Join {
    Concatenate,
    Stack,
}

fn join_as<T: Element>(datas: &[Data], axis: usize, how: Join) -> Result<Tensor> {
    let views = datas
        .iter()
        .map(|d| {
            T::unwrap(d).map(|a| a.view()).ok_or_else(|| {
                Error::invalid(format!("expected {} data, got {}", T::DTYPE, d.dtype()))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let out = match how {
        Join::Concatenate => ndarray::concatenate(Axis(axis), &views),
        Join::Stack => ndarray::stack(Axis(axis), &views),
    };
    out.map(Tensor::from)
        .map_err(|e| Error::invalid(format!("cannot join the tensors along dim {axis}: {e}")))
}

/// `tensors` converted to `dtype` and concatenated or stacked along `axis`.
fn join(tensors: &[&Tensor], dtype: DType, axis: usize, how: Join) -> Result<Tensor> {
    let datas = tensors
        .iter()
        .map(|t| cast(t, dtype).map(std::borrow::Cow::into_owned))
        .collect::<Result<Vec<_>>>()?;
    crate::each_dtype!(type dtype, T => join_as::<T>(&datas, axis, how))
}

#[kernel(op = "cat")]
fn cat_kernel(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let shapes: Vec<&[usize]> = tensors.iter().map(Tensor::shape).collect();
    let (_, d) = cat_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(Tensor::dtype))?;
    let kept: Vec<&Tensor> = cat_operands(&shapes)
        .into_iter()
        .map(|i| &tensors[i])
        .collect();
    join(&kept, dtype, d, Join::Concatenate)
}

#[batching_rule(op = "cat")]
fn cat_rule(
    tensors: &[Tensor],
    bdims: &[Option<usize>],
    dim: i64,
) -> Result<(Tensor, Option<usize>)> {
    let mut physical = materialize_at_front(tensors, bdims)?;
    let logical: Vec<&[usize]> = physical.iter().map(|t| &t.shape()[1..]).collect();
    let kept = cat_operands(&logical);
    let d = physical_dim(&physical[kept[0]], true, dim)?;
    if kept.len() < physical.len() {
        // The skipped examples are [0]-shaped; stand in an unbatched [0] tensor
        // of the same dtype, which the physical cat skips too (and promotes).
        for (i, t) in physical.iter_mut().enumerate() {
            if !kept.contains(&i) {
                *t = empty_1d(t.dtype())?;
            }
        }
    }
    Ok((ops::cat(&physical, d as i64)?, Some(0)))
}

/// The output shape of `stack`, and the resolved new dim.
fn stack_shape(shapes: &[&[usize]], dim: i64) -> Result<(Vec<usize>, usize)> {
    let Some(first) = shapes.first() else {
        return Err(Error::invalid(
            "expected a non-empty list of tensors, got an empty list",
        ));
    };
    if let Some(i) = shapes.iter().position(|s| s != first) {
        return Err(Error::invalid(format!(
            "the tensors must have equal shapes, but tensor 0 has shape {first:?} and tensor {i} \
             has shape {:?}",
            shapes[i]
        )));
    }
    let d = new_dim_in(dim, first)?;
    let mut out = first.to_vec();
    out.insert(d, shapes.len());
    Ok((out, d))
}

#[meta(op = "stack")]
fn stack_meta(tensors: &[TensorMeta], dim: i64) -> Result<TensorMeta> {
    let shapes: Vec<&[usize]> = tensors.iter().map(TensorMeta::shape).collect();
    let (shape, _) = stack_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(TensorMeta::dtype))?;
    Ok(TensorMeta::new(shape, dtype))
}

#[kernel(op = "stack")]
fn stack_kernel(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let shapes: Vec<&[usize]> = tensors.iter().map(Tensor::shape).collect();
    let (_, d) = stack_shape(&shapes, dim)?;
    let dtype = promoted(tensors.iter().map(Tensor::dtype))?;
    join(&tensors.iter().collect::<Vec<_>>(), dtype, d, Join::Stack)
}

#[batching_rule(op = "stack")]
fn stack_rule(
    tensors: &[Tensor],
    bdims: &[Option<usize>],
    dim: i64,
) -> Result<(Tensor, Option<usize>)> {
    let physical = materialize_at_front(tensors, bdims)?;
    let d = physical_new_dim(&physical[0], true, dim)?;
    Ok((ops::stack(&physical, d as i64)?, Some(0)))
}
