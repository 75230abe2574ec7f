//! The structural views of a tensor (`permute`, `unsqueeze`, select, a new
//! broadcast dim) as calls of the built-in ops, for the level tensors of
//! transforms that must see every rearrangement as an op call: grad records
//! it, jvp applies it to the tangent. vmap's fallback loop and batching
//! helpers ask a level tensor for these views through [`LevelTensor`]
//! (crate::LevelTensor); such a transform answers with these functions.

use super::call_builtin;
use crate::core::value::Arg;
use crate::{Result, Tensor};

/// `t` with its dims permuted by `perm`.
pub(crate) fn permuted(t: Tensor, perm: &[usize]) -> Result<Tensor> {
    let perm: Vec<i64> = perm.iter().map(|&d| d as i64).collect();
    call_builtin("permute", &[Arg::Tensor(t), Arg::IntList(perm)])
}

/// `t` with a new size-1 dim at `dim`.
pub(crate) fn unsqueezed(t: Tensor, dim: usize) -> Result<Tensor> {
    call_builtin("unsqueeze", &[Arg::Tensor(t), Arg::Int(dim as i64)])
}

/// Index `index` of dim `dim` of `t`, that dim removed.
pub(crate) fn select(t: Tensor, dim: usize, index: usize) -> Result<Tensor> {
    let slice = call_builtin(
        "narrow",
        &[
            Arg::Tensor(t),
            Arg::Int(dim as i64),
            Arg::Int(index as i64),
            Arg::Int(1),
        ],
    )?;
    call_builtin(
        "squeeze",
        &[Arg::Tensor(slice), Arg::OptInt(Some(dim as i64))],
    )
}

/// `t` broadcast along a new dim `dim` of size `size`.
pub(crate) fn broadcast_new_dim(t: Tensor, dim: usize, size: usize) -> Result<Tensor> {
    let mut shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
    shape.insert(dim, size as i64);
    let one = unsqueezed(t, dim)?;
    call_builtin("expand", &[Arg::Tensor(one), Arg::IntList(shape)])
}

/// The view methods of [`LevelTensor`](crate::LevelTensor) for a level tensor
/// whose views are op calls: expands, inside the `impl`, to the four methods
/// calling the functions above on `self.handle()` (a new handle to the same
/// level tensor).
macro_rules! views_through_ops {
    () => {
        fn permuted(&self, perm: &[usize]) -> $crate::Result<$crate::Tensor> {
            $crate::dispatch::views::permuted(self.handle(), perm)
        }

        fn unsqueezed(&self, dim: usize) -> $crate::Result<$crate::Tensor> {
            $crate::dispatch::views::unsqueezed(self.handle(), dim)
        }

        fn select(&self, dim: usize, index: usize) -> $crate::Result<$crate::Tensor> {
            $crate::dispatch::views::select(self.handle(), dim, index)
        }

        fn broadcast_new_dim(&self, dim: usize, size: usize) -> $crate::Result<$crate::Tensor> {
            $crate::dispatch::views::broadcast_new_dim(self.handle(), dim, size)
        }
    };
}
pub(crate) use views_through_ops;
