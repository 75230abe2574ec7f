//! Jacobians by reverse mode: the pullback of the function, vmapped over the
//! rows of the identity of the output space ([`jacrev`](crate::jacrev()) is
//! this, put into structures by [`crate::jacobian`]), and the pieces both
//! modes share: the chunks of an identity and its blocks.

use std::ops::Range;

use crate::core::alloc::{check_alloc_in, checked_numel};
use crate::vmap::chunks::Joiner;
use crate::{vmap, DType, Error, Randomness, Result, Tensor, TensorTree};

use super::api::{outputs_of, primal, trace};
use crate::ops::usize_args;

/// Where a Jacobian is taken and how, for either mode: the transform
/// asking (for messages), the point (`inner`, one level down), the leaves to
/// differentiate (`ranges` of `inner`'s leaves), how many basis vectors go
/// through `f` at once, and how a random op draws across them (forward mode
/// only: reverse mode runs `f` once).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct At<'a, A> {
    pub what: &'static str,
    pub inner: &'a A,
    pub ranges: &'a [Range<usize>],
    pub chunk_size: Option<usize>,
    pub randomness: Randomness,
}

/// What a mode's Jacobian gives: `f`'s output (or its structure), for each
/// of its leaves one block `out ++ leaf` per differentiated leaf, and `f`'s
/// aux output.
#[doc(hidden)]
pub type Blocks<O, X> = Result<(O, Vec<Vec<Tensor>>, X)>;

/// The Jacobian of `f` at `inner` with respect to the leaves in `ranges`:
/// `f`'s output (one level down), for each of its leaves one tensor of shape
/// `out ++ leaf` per differentiated leaf, and `f`'s aux output (unwrapped).
pub(crate) fn reverse_jacobian<A: TensorTree, O: TensorTree, X: TensorTree>(
    f: impl FnOnce(A) -> Result<(O, X)>,
    at: At<'_, A>,
) -> Blocks<O, X> {
    let what = at.what;
    let ((out, aux), pullback) = trace(
        what,
        f,
        at.inner,
        at.ranges,
        true,
        |(o, x): (O, X), level| {
            let (outs, roots, o) = outputs_of(o, level)?;
            let x = x.map_leaves(&mut |t| primal(t, level).map(|(t, _)| t))?;
            Ok((outs, roots, (o, x)))
        },
    )?;
    let mut outs = Vec::new();
    out.leaves(&mut outs);
    if outs.is_empty() {
        return Err(no_outputs(what));
    }
    for t in &outs {
        float_output(what, t)?;
    }
    let sizes: Vec<usize> = outs
        .iter()
        .map(|t| checked_numel(t.shape()))
        .collect::<Result<_>>()?;
    let rows: usize = sizes.iter().sum();
    // Rows of the identity of the outputs' space, a chunk at a time (all at
    // once by default), each batch of rows pulled back under one vmap; the
    // rows are built per chunk, so a chunk bounds the memory of the basis.
    let grads = by_chunks(what, rows, at.chunk_size, "row", |start, len| {
        let basis = identity_blocks(what, start, len, &outs)?;
        // The vmap over the rows is this transform's, not the user's: its
        // errors are reported as `what`'s.
        let level = crate::dispatch::depth() + 1;
        vmap(|cts: Vec<Tensor>| pullback.call(what, &cts))
            .call(basis)
            .map_err(|e| e.reported_by(what, level))
    })?;
    // grads[j] is [rows, leaf_j..]: output k's rows, reshaped to its dims.
    let mut offset = 0;
    let mut per_output = Vec::with_capacity(outs.len());
    for (o, &n) in outs.iter().zip(&sizes) {
        let jac = grads
            .iter()
            .map(|g| {
                let block = usize_args::narrow(g, 0, offset, n)?;
                let mut shape = o.shape().to_vec();
                shape.extend_from_slice(&g.shape()[1..]);
                usize_args::reshape(&block, &shape)
            })
            .collect::<Result<_>>()?;
        per_output.push(jac);
        offset += n;
    }
    Ok((out, per_output, aux))
}

/// The error for a function whose output has no tensor (an empty `Vec`).
pub(crate) fn no_outputs(what: &str) -> Error {
    Error::Tensor(format!(
        "{what}: the function returned no tensor; a Jacobian needs at least one output tensor"
    ))
}

/// Errs unless `t`, an output being differentiated, has a float dtype.
pub(crate) fn float_output(what: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::Tensor(format!(
            "{what}: the function returned a {} tensor; only floating-point outputs can be differentiated",
            t.dtype()
        )))
    }
}

/// The results of `part` over the rows (or columns) of an identity of
/// `total`, `chunk_size` at a time (see [`chunks`]): `part(start, len)`
/// gives each result's block `[len, ..]` for one chunk, and the blocks of
/// each result are joined along dim 0 into `[total, ..]`.
pub(crate) fn by_chunks(
    what: &'static str,
    total: usize,
    chunk_size: Option<usize>,
    unit: &str,
    mut part: impl FnMut(usize, usize) -> Result<Vec<Tensor>>,
) -> Result<Vec<Tensor>> {
    let mut joins: Vec<Joiner> = Vec::new();
    for (start, len) in chunks(what, total, chunk_size, unit)? {
        let blocks = part(start, len)?;
        if joins.is_empty() {
            joins = blocks.iter().map(|_| Joiner::new(what, 0, total)).collect();
        }
        for (join, block) in joins.iter_mut().zip(blocks) {
            join.push(block, len)?;
        }
    }
    joins.into_iter().map(Joiner::finish).collect()
}

/// The chunks `(start, len)` of `total` rows (or columns) of an identity,
/// `chunk_size` at a time, all at once by default: at least one chunk, of
/// length 0 when `total` is 0. Errs on a chunk size of 0.
pub(crate) fn chunks(
    what: &str,
    total: usize,
    chunk_size: Option<usize>,
    unit: &str,
) -> Result<Vec<(usize, usize)>> {
    let chunk = match chunk_size {
        Some(0) => {
            return Err(Error::Tensor(format!(
                "{what}: chunk_size(0): a chunk must hold at least one {unit}"
            )))
        }
        Some(c) => c.min(total.max(1)),
        None => total.max(1),
    };
    Ok((0..total.max(1))
        .step_by(chunk)
        .map(|start| (start, chunk.min(total - start.min(total))))
        .collect())
}

/// Rows `start..start + len` of the identity of the space of `leaves` (their
/// elements counted through the leaves in order), as one block per leaf:
/// `[len, leaf..]`, 1 where the row is one of the leaf's elements.
pub(crate) fn identity_blocks(
    what: &str,
    start: usize,
    len: usize,
    leaves: &[Tensor],
) -> Result<Vec<Tensor>> {
    let mut offset = 0;
    leaves
        .iter()
        .map(|t| {
            let block = identity_block(what, start, len, offset, t.shape(), t.dtype());
            offset += checked_numel(t.shape())?;
            block
        })
        .collect()
}

/// Rows `start..start + len` of the identity, restricted to one leaf of
/// shape `shape` whose elements are rows `offset..offset + numel`.
fn identity_block(
    what: &str,
    start: usize,
    len: usize,
    offset: usize,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let mut full = vec![len];
    full.extend_from_slice(shape);
    check_alloc_in(what, &full, dtype)?;
    let numel = checked_numel(shape)?;
    let one_at = |row: usize| {
        let col = start + row;
        (offset..offset + numel)
            .contains(&col)
            .then(|| row * numel + col - offset)
    };
    match dtype {
        DType::F32 => Tensor::from_shape_vec(&full, unit_rows(len, numel, one_at, 1.0f32)),
        DType::F64 => Tensor::from_shape_vec(&full, unit_rows(len, numel, one_at, 1.0f64)),
        other => Err(Error::Tensor(format!(
            "{what}: a {other} tensor cannot be differentiated"
        ))),
    }
}

/// `len` rows of `numel` zeros, with a one where `one_at(row)` says.
fn unit_rows<T: Copy + Default + crate::core::buffers::Cached>(
    len: usize,
    numel: usize,
    one_at: impl Fn(usize) -> Option<usize>,
    one: T,
) -> Vec<T> {
    let mut v = crate::core::buffers::filled(len * numel, T::default());
    for i in (0..len).filter_map(one_at) {
        v[i] = one;
    }
    v
}
