//! vjps of the shape, dim, join and indexing ops: each moves the cotangent
//! back to where its input's elements came from (the reverse view, a pad for
//! `narrow`, a narrow for `pad_dim` and `cat`, an accumulation for the
//! indexing ops). Index tensors get no gradient.

use super::{grad_for, zeros_like};
use crate::batching::{shape_arg, wrap_dim};
use crate::{ops, vjp, Result, Tensor};

/// The vjp of an op that only rearranges its input's elements into another
/// shape (`reshape`, `squeeze`, `unsqueeze`): the cotangent reshaped back.
fn reshaped_back(x: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || ops::reshape(g, &shape_arg(None, x.shape())))
}

#[vjp(op = "reshape")]
fn reshape_vjp(x: &Tensor, _s: &[i64], _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    reshaped_back(x, g)
}

#[vjp(op = "squeeze")]
fn squeeze_vjp(x: &Tensor, _dim: Option<i64>, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    reshaped_back(x, g)
}

#[vjp(op = "unsqueeze")]
fn unsqueeze_vjp(x: &Tensor, _dim: i64, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    reshaped_back(x, g)
}

/// `expand` copies elements, so its vjp sums the copies (`sum_to_size`,
/// which [`grad_for`] applies to any cotangent larger than its input).
#[vjp(op = "expand")]
fn expand_vjp(x: &Tensor, _size: &[i64], _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || Ok(g.clone()))
}

#[vjp(op = "permute")]
fn permute_vjp(x: &Tensor, dims: &[i64], _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || {
        // The inverse permutation: dim `dims[i]` of x is dim `i` of the result.
        let mut inverse = vec![0i64; dims.len()];
        for (i, &d) in dims.iter().enumerate() {
            inverse[wrap_dim(d, dims.len())?] = i as i64;
        }
        ops::permute(g, &inverse)
    })
}

#[vjp(op = "transpose")]
fn transpose_vjp(
    x: &Tensor,
    dim0: i64,
    dim1: i64,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || ops::transpose(g, dim0, dim1))
}

/// `narrow` keeps a range of one dim; its vjp pads the cotangent with zeros
/// back to the whole dim.
#[vjp(op = "narrow")]
fn narrow_vjp(
    x: &Tensor,
    dim: i64,
    start: i64,
    length: i64,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let size = x.shape()[wrap_dim(dim, x.ndim())?] as i64;
        let start = if start < 0 { start + size } else { start };
        ops::pad_dim(g, dim, start, size - start - length)
    })
}

/// `split_with_sizes` cuts its input into pieces along `dim`; its vjp joins
/// the pieces' cotangents back with one `cat` (the backward pass gives zeros
/// for pieces that got none), so it costs what the input does however many
/// pieces there are.
#[vjp(op = "split_with_sizes")]
fn split_with_sizes_vjp(
    x: &Tensor,
    _split_sizes: &[i64],
    dim: i64,
    _pieces: &[Tensor],
    grads: &[Tensor],
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        if grads.is_empty() {
            zeros_like(x)
        } else {
            ops::cat(grads, dim)
        }
    })
}

/// `pad_dim` adds zeros around its input; its vjp narrows them away.
#[vjp(op = "pad_dim")]
fn pad_dim_vjp(
    x: &Tensor,
    dim: i64,
    before: i64,
    _after: i64,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let size = x.shape()[wrap_dim(dim, x.ndim())?] as i64;
        ops::narrow(g, dim, before, size)
    })
}

/// `cat`: each tensor's range of the joined dim. A 1-d empty tensor that
/// `cat` skipped (shape `[0]`, beside tensors of another shape) gets an empty
/// gradient.
#[vjp(op = "cat")]
fn cat_vjp(tensors: &[Tensor], dim: i64, _y: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let skipped = |t: &Tensor| t.shape() == [0] && g.shape() != [0];
    let mut offset = 0i64;
    tensors
        .iter()
        .map(|t| {
            if skipped(t) {
                return grad_for(t, || zeros_like(t));
            }
            let d = wrap_dim(dim, t.ndim())?;
            let len = t.shape()[d] as i64;
            let start = offset;
            offset += len;
            grad_for(t, || ops::narrow(g, dim, start, len))
        })
        .collect()
}

/// `stack`: each tensor's slice of the new dim.
#[vjp(op = "stack")]
fn stack_vjp(tensors: &[Tensor], dim: i64, _y: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            grad_for(t, || {
                let slice = ops::narrow(g, dim, i as i64, 1)?;
                ops::reshape(&slice, &shape_arg(None, t.shape()))
            })
        })
        .collect()
}

/// An indexed read (`index_select`, `gather`) and the accumulation that is
/// its transpose (`index_add`, `scatter_add`): the vjp of each is the other.
/// The read's cotangent is accumulated into zeros of `self`'s shape. The
/// accumulation passes its cotangent through to `self`, and its source gets
/// the cotangent read at the indices, which `$fit` fits to the source's shape.
macro_rules! transposed_pair {
    (
        $read:literal: $read_vjp:ident by $add_fn:path,
        $add:literal: $add_vjp:ident by $read_fn:path, $fit:path
    ) => {
        #[vjp(op = $read)]
        fn $read_vjp(
            x: &Tensor,
            dim: i64,
            index: &Tensor,
            _y: &Tensor,
            g: &Tensor,
        ) -> Result<(Option<Tensor>, Option<Tensor>)> {
            let gx = grad_for(x, || $add_fn(&zeros_like(x)?, dim, index, g))?;
            Ok((gx, None))
        }

        #[vjp(op = $add)]
        fn $add_vjp(
            x: &Tensor,
            dim: i64,
            index: &Tensor,
            source: &Tensor,
            _y: &Tensor,
            g: &Tensor,
        ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
            let gx = grad_for(x, || Ok(g.clone()))?;
            let gs = grad_for(source, || $fit($read_fn(g, dim, index)?, index, source))?;
            Ok((gx, None, gs))
        }
    };
}

transposed_pair! {
    "index_select": index_select_vjp by ops::index_add,
    "index_add": index_add_vjp by ops::index_select, as_read
}
transposed_pair! {
    "gather": gather_vjp by ops::scatter_add,
    "scatter_add": scatter_add_vjp by ops::gather, padded_to_src
}

/// `index_add`'s source has the shape `index_select` reads.
fn as_read(read: Tensor, _index: &Tensor, _source: &Tensor) -> Result<Tensor> {
    Ok(read)
}

/// `scatter_add`'s `src` may extend beyond the index (those elements were
/// not added, so their cotangent is zero): the values `gather` read sit at
/// the front of each dim of `src`, zeros after them. 0-d tensors count as
/// shape [1].
fn padded_to_src(read: Tensor, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    if index.shape().contains(&0) {
        return zeros_like(src);
    }
    let as_1d = |t: &Tensor| {
        if t.ndim() == 0 {
            vec![1]
        } else {
            t.shape().to_vec()
        }
    };
    let (have, want) = (as_1d(index), as_1d(src));
    let mut picked = ops::reshape(&read, &shape_arg(None, &have))?;
    for (k, (&h, &w)) in have.iter().zip(&want).enumerate() {
        if h < w {
            picked = ops::pad_dim(&picked, k as i64, 0, (w - h) as i64)?;
        }
    }
    ops::reshape(&picked, &shape_arg(None, src.shape()))
}
