//! Jacobians by forward mode: the jvp of the function, vmapped over the
//! columns of the identity of the input space ([`jacfwd`](crate::jacfwd())
//! is this, put into structures by [`crate::jacobian`]).

use std::cell::RefCell;

use crate::core::alloc::checked_numel;
use crate::grad::jacrev::{by_chunks, float_output, identity_blocks, no_outputs, At, Blocks};
use crate::grad::{inconsistent_ranges, position};
use crate::ops::usize_args;
use crate::{vmap, Error, Result, Tensor, TensorTree};

use super::api::push_forward;

/// The Jacobian of `f` at `inner` with respect to the leaves in `ranges` by
/// forward mode: the structure of `f`'s output (its leaves are placeholders,
/// not its values), for each of its leaves one tensor of shape `out ++ leaf`
/// per differentiated leaf, and `f`'s aux output (that of the first chunk of
/// columns; it does not depend on them).
pub(crate) fn forward_jacobian<A: TensorTree, O: TensorTree, X: TensorTree>(
    f: &impl Fn(A) -> Result<(O, X)>,
    at: At<'_, A>,
) -> Blocks<O, X> {
    let At {
        what,
        inner,
        ranges,
        chunk_size,
        randomness,
    } = at;
    let mut all = Vec::new();
    inner.leaves(&mut all);
    let mut leaves = Vec::new();
    for r in ranges {
        let part = all
            .get(r.clone())
            .ok_or_else(|| inconsistent_ranges(what, ranges, all.len()))?;
        for (k, t) in part.iter().enumerate() {
            if !t.dtype().is_float() {
                return Err(Error::Tensor(format!(
                    "{what}: input leaf {} (`{}`) has dtype {}; only floating-point inputs can be \
                     differentiated (choose another argument with argnums, or pass integer data in \
                     an argument that is not differentiated)",
                    r.start + k,
                    inner.leaf_path(r.start + k),
                    t.dtype()
                )));
            }
        }
        leaves.extend_from_slice(part);
    }
    // Column j of the identity is the tangent that is 1 at input element j
    // (counting through the selected leaves in order) and 0 elsewhere.
    let sizes: Vec<usize> = leaves
        .iter()
        .map(|t| checked_numel(t.shape()))
        .collect::<Result<_>>()?;
    let columns: usize = sizes.iter().sum();
    // The output's structure, with placeholder leaves: its values live at
    // the levels of the vmap below and may not leave it.
    let structure: RefCell<Option<O>> = RefCell::new(None);
    let mut first_aux: Option<X> = None;
    let jacs = by_chunks(what, columns, chunk_size, "column", |start, len| {
        let basis = identity_blocks(what, start, len, &leaves)?;
        let push = |tangents: Vec<Tensor>| -> Result<(Vec<Tensor>, X)> {
            let ((out, aux), pushed) = push_forward(what, f, inner, |i, _| {
                Ok(position(ranges, i).map(|p| tangents[p].clone()))
            })?;
            let mut outs = Vec::new();
            out.leaves(&mut outs);
            if outs.is_empty() {
                return Err(no_outputs(what));
            }
            let tangents = outs
                .iter()
                .zip(pushed)
                .map(|(o, t)| {
                    float_output(what, o)?;
                    match t {
                        Some(t) => Ok(t),
                        None => usize_args::zeros(o.shape(), o.dtype()),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let placeholder = out.map_leaves(&mut |_| Ok(Tensor::scalar(0.0f32)))?;
            structure.borrow_mut().get_or_insert(placeholder);
            Ok((tangents, aux))
        };
        // The vmap over the columns is this transform's, not the user's:
        // its errors are reported as `what`'s.
        let level = crate::dispatch::depth() + 1;
        // The aux output does not depend on the columns: out_dim None.
        let (part, aux): (Vec<Tensor>, X) = vmap(push)
            .randomness(randomness)
            .out_dims([Some(0), None])
            .call(basis)
            .map_err(|e| e.reported_by(what, level))?;
        first_aux.get_or_insert(aux);
        Ok(part)
    })?;
    let aux = first_aux.ok_or_else(|| Error::Tensor(format!("{what}: no chunk ran")))?;
    let out = structure
        .into_inner()
        .ok_or_else(|| Error::Tensor(format!("{what}: no chunk ran")))?;
    // Output k's Jacobian is [columns, out_k..]: each selected leaf's
    // columns, reshaped to the leaf's dims and moved after the output's.
    let per_output = jacs
        .into_iter()
        .map(|jac| {
            let out_rank = jac.shape().len() - 1;
            let mut offset = 0;
            leaves
                .iter()
                .zip(&sizes)
                .map(|(t, &n)| {
                    let cols = usize_args::narrow(&jac, 0, offset, n)?;
                    offset += n;
                    let mut shape = t.shape().to_vec();
                    shape.extend_from_slice(&jac.shape()[1..]);
                    let cols = usize_args::reshape(&cols, &shape)?;
                    let in_rank = t.shape().len();
                    let perm: Vec<usize> =
                        (in_rank..in_rank + out_rank).chain(0..in_rank).collect();
                    usize_args::permuted(&cols, &perm)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((out, per_output, aux))
}
