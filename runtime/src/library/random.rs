//! Random ops: `rand`, `randn`, `bernoulli` and `dropout`, composites over the
//! random primitive `random_key` and the keyed draws `random_uniform` and
//! `random_normal` (see `ops/random.toml`).
//!
//! The keyed draws are deterministic functions of their key tensor, so vmap
//! batches them with ordinary rules; only `random_key` is random, and vmap's
//! randomness policy turns it into one key per example (`Different`) or one
//! key for all (`Same`). A composite's decomposition therefore runs unchanged
//! under every policy and every transform.

use crate::core::alloc::checked_numel;
use crate::core::rng::{normal, uniform_f32, uniform_f64};
use crate::library::factories::shape_of;
use crate::{
    batching_rule, decompose, kernel, meta, ops, DType, Error, Result, Tensor, TensorMeta,
};

/// Rejects a dtype a draw cannot have.
fn float_dtype(dtype: DType) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "draws floats: dtype must be f32 or f64, got {dtype}"
        )))
    }
}

/// `size` as a shape (no negative size, within the allocation limit) for a
/// float `dtype`.
fn draw_meta(size: &[i64], dtype: DType) -> Result<TensorMeta> {
    let shape = shape_of(size)?;
    float_dtype(dtype)?;
    Ok(TensorMeta::new(shape, dtype))
}

/// The output of a keyed draw: `key`'s shape followed by `size`.
fn keyed_meta(key: &TensorMeta, size: &[i64], dtype: DType) -> Result<TensorMeta> {
    if key.dtype() != DType::I64 {
        return Err(Error::invalid(format!(
            "key must be an i64 tensor (from random_key), got {}",
            key.dtype()
        )));
    }
    let mut shape = key.shape().to_vec();
    shape.extend(draw_meta(size, dtype)?.shape());
    checked_numel(&shape)?;
    Ok(TensorMeta::new(shape, dtype))
}

/// Which distribution a keyed draw samples.
#[derive(Clone, Copy)]
enum Dist {
    Uniform,
    Normal,
}

/// The keyed draw: for each key (row-major), `size` elements of its stream.
fn draw(key: &Tensor, size: &[i64], dtype: DType, dist: Dist) -> Result<Tensor> {
    let keys = key.to_array::<i64>()?;
    let size = shape_of(size)?;
    let n = checked_numel(&size)? as u64;
    let mut shape = keys.shape().to_vec();
    shape.extend(&size);
    checked_numel(&shape)?;
    let keys: Vec<i64> = keys.iter().copied().collect();
    match dtype {
        DType::F64 => Tensor::from_shape_vec(
            &shape,
            counted(&keys, n, |k, c| match dist {
                Dist::Uniform => uniform_f64(k, c),
                Dist::Normal => normal(k, c),
            })?,
        ),
        DType::F32 => Tensor::from_shape_vec(
            &shape,
            counted(&keys, n, |k, c| match dist {
                Dist::Uniform => uniform_f32(k, c),
                Dist::Normal => normal(k, c) as f32,
            })?,
        ),
        other => float_dtype(other).map(|()| key.clone()),
    }
}

/// `value(key, counter)` for each key in order and each counter `0..n`. Each
/// value depends on its key and counter only, so pieces of the output are
/// drawn on the pool (with the `rayon` feature) when there are enough: a
/// normal value (Box-Muller's log, sin and cos) costs about as much as
/// sixteen simple elementwise ones, and DP-SGD's noise was drawn by the
/// calling thread alone.
fn counted<T: crate::core::buffers::Cached>(
    keys: &[i64],
    n: u64,
    value: impl Fn(i64, u64) -> T + Sync + Send,
) -> Result<Vec<T>> {
    let per = usize::try_from(n).unwrap_or(usize::MAX);
    let total = keys.len().saturating_mul(per);
    let at = |i: usize| value(keys[i / per], (i % per) as u64);
    #[cfg(feature = "rayon")]
    if crate::core::broadcast::parallel(total.saturating_mul(16)) {
        let piece = crate::core::buffers::piece_rows(total, 1, 1 << 10);
        return crate::core::buffers::par_build(total, piece, |start, out| {
            out.extend((start..start + out.len()).map(at));
        });
    }
    Ok((0..total).map(at).collect())
}

// ---------------------------------------------------------------------------
// The random primitive: a seed's key.

#[meta(op = "random_key")]
fn random_key_meta(_seed: i64) -> Result<TensorMeta> {
    Ok(TensorMeta::new(Vec::new(), DType::I64))
}

#[kernel(op = "random_key")]
fn random_key_kernel(seed: i64) -> Result<Tensor> {
    Ok(Tensor::scalar(seed))
}

// ---------------------------------------------------------------------------
// The keyed draws: deterministic in the key, batched by moving the key's
// batch dim to the front (the key's dims lead the output).

/// A keyed draw from `$dist`: meta, kernel and batching rule of `$op`.
macro_rules! keyed_draw {
    ($($name:ident $op:tt $dist:expr;)*) => {$(
        mod $name {
            use super::*;

            #[meta(op = $op)]
            fn meta(key: &TensorMeta, size: &[i64], dtype: DType) -> Result<TensorMeta> {
                keyed_meta(key, size, dtype)
            }

            #[kernel(op = $op)]
            fn kernel(key: &Tensor, size: &[i64], dtype: DType) -> Result<Tensor> {
                draw(key, size, dtype, $dist)
            }

            #[batching_rule(op = $op)]
            fn rule(
                key: &Tensor,
                bdim: Option<usize>,
                size: &[i64],
                dtype: DType,
            ) -> Result<(Tensor, Option<usize>)> {
                let front = crate::batching::bdim_to_front(key, bdim)?;
                Ok((ops::$name(&front, size, dtype)?, bdim.map(|_| 0)))
            }
        }
    )*};
}

keyed_draw! {
    random_uniform "random_uniform" Dist::Uniform;
    random_normal "random_normal" Dist::Normal;
}

// ---------------------------------------------------------------------------
// The user-facing random ops.

#[meta(op = "rand")]
fn rand_meta(size: &[i64], _seed: i64, dtype: DType) -> Result<TensorMeta> {
    draw_meta(size, dtype)
}

#[decompose(op = "rand")]
fn rand(size: &[i64], seed: i64, dtype: DType) -> Result<Tensor> {
    ops::random_uniform(&ops::random_key(seed)?, size, dtype)
}

#[meta(op = "randn")]
fn randn_meta(size: &[i64], _seed: i64, dtype: DType) -> Result<TensorMeta> {
    draw_meta(size, dtype)
}

#[decompose(op = "randn")]
fn randn(size: &[i64], seed: i64, dtype: DType) -> Result<Tensor> {
    ops::random_normal(&ops::random_key(seed)?, size, dtype)
}

#[meta(op = "bernoulli")]
fn bernoulli_meta(p: &TensorMeta, _seed: i64) -> Result<TensorMeta> {
    float_dtype(p.dtype()).map_err(|_| {
        Error::invalid(format!(
            "p must hold probabilities as f32 or f64, got {}",
            p.dtype()
        ))
    })?;
    Ok(p.clone())
}

/// One uniform per element of `p` (shared by every example under
/// `Randomness::Same`, one stream per example under `Different`), compared
/// with `p`.
#[decompose(op = "bernoulli")]
fn bernoulli(p: &Tensor, seed: i64) -> Result<Tensor> {
    let u = ops::random_uniform(
        &ops::random_key(seed)?,
        &crate::batching::shape_arg(None, p.shape()),
        p.dtype(),
    )?;
    ops::to_dtype(&ops::lt(&u, p)?, p.dtype())
}

#[meta(op = "dropout")]
fn dropout_meta(x: &TensorMeta, p: f64, _seed: i64) -> Result<TensorMeta> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::invalid(format!(
            "the drop probability p must be in [0, 1], got {p}"
        )));
    }
    if !x.dtype().is_float() {
        return Err(Error::invalid(format!(
            "needs a float tensor, got {}",
            x.dtype()
        )));
    }
    Ok(x.clone())
}

/// `self * bernoulli(1 - p) / (1 - p)`: differentiable with respect to `self`
/// through `mul` (the mask carries no gradient).
#[decompose(op = "dropout")]
fn dropout(x: &Tensor, p: f64, seed: i64) -> Result<Tensor> {
    let shape = crate::batching::shape_arg(None, x.shape());
    let dtype = x.dtype();
    if p == 0.0 {
        return Ok(x.clone());
    }
    if p == 1.0 {
        return ops::mul(x, &ops::zeros(&shape, dtype)?);
    }
    let keep = ops::bernoulli(&ops::full(&shape, 1.0 - p, dtype)?, seed)?;
    let scale = ops::full(&[], 1.0 / (1.0 - p), dtype)?;
    ops::mul(&ops::mul(x, &keep)?, &scale)
}
