//! The built-in op calls the transforms themselves make, with dims and sizes
//! as `usize`: zeros and scalars (grad seeds and accumulates gradients, jvp
//! fills missing tangents), reshapes and slices (the Jacobian builders), joins
//! (vmap stacks the fallback loop's results and joins chunks), and
//! the structural views of a tensor (`permute`, `unsqueeze`, select, a new
//! broadcast dim) for the level tensors of transforms that must see every
//! rearrangement as an op call: grad records it, jvp applies it to the
//! tangent. vmap's fallback loop and batching helpers ask a level tensor for
//! these views through [`LevelTensor`](crate::LevelTensor); such a transform
//! answers with [`level_tensor_through_ops`].
//!
//! Each is a call of a typed op function of this table, so it goes through
//! the dispatcher and is transformed like any other call.

use crate::{DType, Result, Tensor};

/// A dim or size as an op argument (sizes of real tensors fit an `i64`; a
/// larger one becomes `i64::MAX`, which the op's meta rejects).
pub(crate) fn int(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn ints(vs: &[usize]) -> Vec<i64> {
    vs.iter().map(|&v| int(v)).collect()
}

/// A tensor of zeros (dense: it depends on nothing).
pub(crate) fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    super::zeros(&ints(shape), dtype)
}

/// A 0-d tensor holding `value`.
pub(crate) fn full_scalar(value: f64, dtype: DType) -> Result<Tensor> {
    match dtype {
        DType::F32 => Ok(Tensor::scalar(value as f32)),
        DType::F64 => Ok(Tensor::scalar(value)),
        _ => super::full(&[], value, dtype),
    }
}

/// `t` reshaped to `shape`.
pub(crate) fn reshape(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    super::reshape(t, &ints(shape))
}

/// `len` entries of `t` along `dim` from `start`.
pub(crate) fn narrow(t: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    super::narrow(t, int(dim), int(start), int(len))
}

/// `ts` joined along their dim `dim`.
pub(crate) fn cat(ts: &[Tensor], dim: usize) -> Result<Tensor> {
    super::cat(ts, int(dim))
}

/// `ts` stacked along a new dim `dim`.
pub(crate) fn stack(ts: &[Tensor], dim: usize) -> Result<Tensor> {
    super::stack(ts, int(dim))
}

/// `t` with its dims permuted by `perm`.
pub(crate) fn permuted(t: &Tensor, perm: &[usize]) -> Result<Tensor> {
    super::permute(t, &ints(perm))
}

/// Index `index` of dim `dim` of `t`, that dim removed.
pub(crate) fn select(t: &Tensor, dim: usize, index: usize) -> Result<Tensor> {
    super::squeeze(&narrow(t, dim, index, 1)?, Some(int(dim)))
}

/// `t` with a new size-1 dim at `dim`.
pub(crate) fn unsqueezed(t: &Tensor, dim: usize) -> Result<Tensor> {
    super::unsqueeze(t, int(dim))
}

/// `t` broadcast along a new dim `dim` of size `size`.
pub(crate) fn broadcast_new_dim(t: &Tensor, dim: usize, size: usize) -> Result<Tensor> {
    let mut shape = ints(t.shape());
    shape.insert(dim, int(size));
    super::expand(&unsqueezed(t, dim)?, &shape)
}

/// A level tensor whose views are op calls, so its level transforms them
/// like any other call (grad's tracked and jvp's dual tensors are such):
/// declares the struct with the given fields and a field `level`, its
/// `wrap(fields..., level)`, which makes it a [`Tensor`], its `at(t, level)`
/// (the level tensor `t` is, if it lives at `level`), and its
/// [`LevelTensor`](crate::LevelTensor) impl, whose shape and dtype are those
/// of the field named by `value` and whose views are op calls on a new handle
/// to the same parts.
macro_rules! level_tensor_through_ops {
    (
        $(#[$attr:meta])*
        struct $ty:ident {
            $($(#[$fattr:meta])* $field:ident: $fty:ty,)+
        }
        value: $value:ident, transform: $transform:literal, kind: $kind:literal
    ) => {
        $(#[$attr])*
        #[derive(Debug)]
        pub(crate) struct $ty {
            $($(#[$fattr])* pub(crate) $field: $fty,)+
            #[doc = concat!("The ", $transform, " level.")]
            pub(crate) level: $crate::LevelId,
        }

        impl $ty {
            #[doc = concat!("Wraps the parts as one ", $kind, " tensor at `level`.")]
            pub(crate) fn wrap($($field: $fty,)+ level: $crate::LevelId) -> $crate::Tensor {
                $crate::Tensor::from_level(std::sync::Arc::new($ty { $($field,)+ level }))
            }

            #[doc = concat!("The ", $kind, " form of `t` if it lives at `level`.")]
            pub(crate) fn at(t: &$crate::Tensor, level: $crate::LevelId) -> Option<&$ty> {
                t.downcast_level::<$ty>().filter(|x| x.level == level)
            }

            /// `self` as a tensor again (a new handle to the same parts).
            fn handle(&self) -> $crate::Tensor {
                $ty::wrap($(self.$field.clone(),)+ self.level)
            }
        }

        impl $crate::LevelTensor for $ty {
            fn level(&self) -> $crate::LevelId {
                self.level
            }

            fn transform(&self) -> &'static str {
                $transform
            }

            fn kind(&self) -> &'static str {
                $kind
            }

            fn shape(&self) -> &[usize] {
                self.$value.shape()
            }

            fn dtype(&self) -> $crate::DType {
                self.$value.dtype()
            }

            fn as_any(&self) -> &dyn std::any::Any {
                self
            }

            fn permuted(&self, perm: &[usize]) -> $crate::Result<$crate::Tensor> {
                $crate::ops::usize_args::permuted(&self.handle(), perm)
            }

            fn unsqueezed(&self, dim: usize) -> $crate::Result<$crate::Tensor> {
                $crate::ops::usize_args::unsqueezed(&self.handle(), dim)
            }

            fn select(&self, dim: usize, index: usize) -> $crate::Result<$crate::Tensor> {
                $crate::ops::usize_args::select(&self.handle(), dim, index)
            }

            fn broadcast_new_dim(&self, dim: usize, size: usize) -> $crate::Result<$crate::Tensor> {
                $crate::ops::usize_args::broadcast_new_dim(&self.handle(), dim, size)
            }
        }
    };
}
pub(crate) use level_tensor_through_ops;
