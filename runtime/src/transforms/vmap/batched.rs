//! The batched tensor: vmap's representation of a tensor at its level.

use std::sync::Arc;

use crate::core::value::Shape;
use crate::{DType, Error, LevelId, LevelTensor, Result, Tensor};

/// A tensor with a batch dim at one vmap level.
#[derive(Debug)]
pub(crate) struct Batched {
    /// The physical tensor (may itself be batched at a lower level).
    pub(crate) inner: Tensor,
    /// Where the batch dim is in `inner`'s (logical-at-the-lower-level) shape.
    pub(crate) bdim: usize,
    /// The vmap level this batch dim belongs to.
    pub(crate) level: LevelId,
    /// `inner`'s shape without `bdim`.
    logical_shape: Shape,
}

impl Batched {
    /// Wraps `inner` as batched at `level` with its batch dim at `bdim`.
    /// Errors (rather than panics) if `bdim` is not a dim of `inner`.
    pub(crate) fn wrap(inner: Tensor, bdim: usize, level: LevelId) -> Result<Tensor> {
        if bdim >= inner.ndim() {
            return Err(Error::Tensor(format!(
                "vmap: batch dim {bdim} is out of range for a tensor of shape {:?}",
                inner.shape()
            )));
        }
        let mut logical_shape = Shape::from_slice(inner.shape());
        logical_shape.remove(bdim);
        Ok(Tensor::from_level(Arc::new(Batched {
            inner,
            bdim,
            level,
            logical_shape,
        })))
    }

    /// The batched form of `t` if it is batched at `level`.
    pub(crate) fn at(t: &Tensor, level: LevelId) -> Option<&Batched> {
        t.downcast_level::<Batched>().filter(|b| b.level == level)
    }

    /// Splits `t` into its physical tensor and its batch dim at `level`
    /// (`None` if `t` is not batched at `level`).
    pub(crate) fn unwrap(t: &Tensor, level: LevelId) -> (Tensor, Option<usize>) {
        match Batched::at(t, level) {
            Some(b) => (b.inner.clone(), Some(b.bdim)),
            None => (t.clone(), None),
        }
    }

    /// Position of logical dim `dim` in `inner`, for a view that keeps the batch dim.
    fn physical(&self, dim: usize) -> usize {
        if dim < self.bdim {
            dim
        } else {
            dim + 1
        }
    }
}

impl LevelTensor for Batched {
    fn level(&self) -> LevelId {
        self.level
    }

    fn transform(&self) -> &'static str {
        "vmap"
    }

    fn kind(&self) -> &'static str {
        "batched"
    }

    fn shape(&self) -> &[usize] {
        &self.logical_shape
    }

    fn dtype(&self) -> DType {
        self.inner.dtype()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn permuted(&self, perm: &[usize]) -> Result<Tensor> {
        let mut inner_perm = Vec::with_capacity(perm.len() + 1);
        inner_perm.push(self.bdim);
        inner_perm.extend(perm.iter().map(|&d| self.physical(d)));
        Batched::wrap(self.inner.permuted(&inner_perm)?, 0, self.level)
    }

    fn unsqueezed(&self, dim: usize) -> Result<Tensor> {
        let (q, bdim) = if dim <= self.bdim {
            (dim, self.bdim + 1)
        } else {
            (dim + 1, self.bdim)
        };
        Batched::wrap(self.inner.unsqueezed(q)?, bdim, self.level)
    }

    fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        let (q, bdim) = if dim < self.bdim {
            (dim, self.bdim - 1)
        } else {
            (dim + 1, self.bdim)
        };
        Batched::wrap(self.inner.select(q, index)?, bdim, self.level)
    }

    fn broadcast_new_dim(&self, dim: usize, size: usize) -> Result<Tensor> {
        let (q, bdim) = if dim <= self.bdim {
            (dim, self.bdim + 1)
        } else {
            (dim + 1, self.bdim)
        };
        Batched::wrap(self.inner.broadcast_new_dim(q, size)?, bdim, self.level)
    }
}

impl Tensor {
    /// The depth of the tensor's outermost level if that level is a vmap, or
    /// `None` (a dense tensor, or one whose outermost level is another
    /// transform).
    pub fn vmap_level(&self) -> Option<usize> {
        self.downcast_level::<Batched>().map(|b| b.level.depth())
    }
}

/// Stacks tensors of equal logical shape and dtype along a new dim `dim`.
///
/// Tensors may be batched at lower vmap levels (as the fallback's per-example
/// results are under nested vmap); `level_size` gives the batch size of such a
/// level, for the tensors that are not batched at it.
pub(crate) fn stack(
    ts: &[Tensor],
    dim: usize,
    level_size: &dyn Fn(LevelId) -> Result<usize>,
) -> Result<Tensor> {
    let Some(first) = ts.first() else {
        return Err(Error::Tensor("cannot stack zero tensors".to_string()));
    };
    if let Some(t) = ts
        .iter()
        .find(|t| t.shape() != first.shape() || t.dtype() != first.dtype())
    {
        return Err(Error::Tensor(format!(
            "cannot stack a {} tensor of shape {:?} with a {} tensor of shape {:?}",
            first.dtype(),
            first.shape(),
            t.dtype(),
            t.shape()
        )));
    }
    let top = ts
        .iter()
        .filter_map(Tensor::level)
        .max_by_key(|l| l.depth());
    let Some(level) = top else {
        return Tensor::stack_dense(ts, dim);
    };
    if ts.iter().all(|t| t.downcast_level::<Batched>().is_none()) {
        // The top level is another transform's (grad's tracked tensors, say):
        // stack through the `stack` op, so that transform sees the call.
        return crate::ops::usize_args::stack(ts, dim);
    }
    if ts.iter().any(|t| {
        t.level().is_some_and(|l| l.depth() == level.depth()) && Batched::at(t, level).is_none()
    }) {
        return Err(Error::Tensor(format!(
            "vmap: cannot stack tensors of different transform levels at depth {}",
            level.depth()
        )));
    }
    let size = level_size(level)?;
    let inners = ts
        .iter()
        .map(|t| match Batched::at(t, level) {
            Some(b) => b.inner.moved_dim(b.bdim, 0),
            None => t.broadcast_new_dim(0, size),
        })
        .collect::<Result<Vec<_>>>()?;
    let stacked = stack(&inners, dim + 1, level_size)?;
    Batched::wrap(stacked, 0, level)
}
