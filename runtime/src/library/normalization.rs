//! Normalization (`ops/normalization.toml`): `batch_norm`, `group_norm` and
//! `rms_norm`, composites over `mean`, `sqrt`, `div` and pointwise ops (as
//! `layer_norm` is), so vmap batches them op by op and grad and jvp
//! differentiate them through their decompositions. Their metas check the
//! arguments once, on logical shapes: under vmap `batch_norm`'s statistics
//! are those of each example's own batch.

use super::composites::layer_norm_meta;
use super::like;
use crate::core::meta_rules::require_float;
use crate::{decompose, meta, ops, DType, Error, Result, Tensor, TensorMeta};

/// Checks that `input` is a float tensor of at least 2 dims `[N, C, ...]` and
/// that each of the named per-channel tensors is a float `[C]`; returns `C`.
fn channels_meta(input: &TensorMeta, per_channel: &[(&str, Option<&TensorMeta>)]) -> Result<usize> {
    require_float(input)?;
    let &[_, c, ..] = input.shape() else {
        return Err(Error::invalid(format!(
            "input must have at least 2 dims [N, C, ...], got shape {:?}",
            input.shape()
        )));
    };
    for &(name, t) in per_channel {
        if let Some(t) = t
            && (t.dtype() != input.dtype() || t.shape() != [c])
        {
            return Err(Error::invalid(format!(
                "{name} must be a tensor of the input's dtype {} and shape [{c}] (the input's channels), got {} {:?}",
                input.dtype(),
                t.dtype(),
                t.shape()
            )));
        }
    }
    Ok(c)
}

/// `[C, 1, ...]`: a per-channel `[C]` tensor's shape for broadcasting against
/// an input of `ndim` dims `[N, C, ...]`.
fn channel_shape(c: usize, ndim: usize) -> Vec<i64> {
    let mut shape = vec![1i64; ndim - 1];
    shape[0] = i64::try_from(c).unwrap_or(i64::MAX);
    shape
}

/// `y * weight + bias`, with `weight` and `bias` `[C]` broadcast over the
/// channel dim 1 of `y` `[N, C, ...]`.
fn affine_channels(y: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
    let shape = channel_shape(y.shape()[1], y.ndim());
    let y = match weight {
        Some(w) => ops::mul(&y, &ops::reshape(w, &shape)?)?,
        None => y,
    };
    match bias {
        Some(b) => ops::add(&y, &ops::reshape(b, &shape)?),
        None => Ok(y),
    }
}

/// The number of values each channel's statistics are taken over, `N * H *
/// W * ...` for `shape` `[N, C, H, W, ...]` (saturating: a product past
/// `usize` is no tensor that exists).
fn values_per_channel(shape: &[usize]) -> usize {
    shape
        .iter()
        .enumerate()
        .filter(|&(d, _)| d != 1)
        .fold(1usize, |n, (_, &s)| n.saturating_mul(s))
}

#[meta(op = "batch_norm")]
#[allow(clippy::too_many_arguments)]
fn batch_norm_meta(
    input: &TensorMeta,
    running_mean: Option<&TensorMeta>,
    running_var: Option<&TensorMeta>,
    weight: Option<&TensorMeta>,
    bias: Option<&TensorMeta>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(TensorMeta, TensorMeta, TensorMeta)> {
    let c = channels_meta(
        input,
        &[
            ("running_mean", running_mean),
            ("running_var", running_var),
            ("weight", weight),
            ("bias", bias),
        ],
    )?;
    if running_mean.is_some() != running_var.is_some() {
        return Err(Error::invalid(
            "running_mean and running_var must be given together (or both None)",
        ));
    }
    if running_mean.is_none() && !training {
        return Err(Error::invalid(
            "running_mean and running_var are required when training is false",
        ));
    }
    if momentum.is_nan() || eps.is_nan() {
        return Err(Error::invalid(format!(
            "momentum and eps must not be NaN, got {momentum} and {eps}"
        )));
    }
    if training && values_per_channel(input.shape()) <= 1 {
        return Err(Error::invalid(format!(
            "expected more than 1 value per channel when training, got input of shape {:?}",
            input.shape()
        )));
    }
    let stats = TensorMeta::new(vec![c], input.dtype());
    Ok((input.clone(), stats.clone(), stats))
}

/// The mean of `x` `[N, C, ...]` over every dim but 1, kept as `[1, C, 1,
/// ...]` (dim by dim: the groups are of equal size, so the mean of the means
/// is the mean).
fn channel_mean(x: &Tensor) -> Result<Tensor> {
    let dims = (2..x.ndim() as i64).rev().chain([0]);
    dims.into_iter()
        .try_fold(x.clone(), |m, d| ops::mean(&m, Some(d), true))
}

#[decompose(op = "batch_norm")]
#[allow(clippy::too_many_arguments)]
fn batch_norm_decomposition(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let c = input.shape()[1];
    let shape = channel_shape(c, input.ndim());
    let eps = like(input, eps);
    if !training {
        let (Some(rm), Some(rv)) = (running_mean, running_var) else {
            return Err(Error::invalid(
                "running_mean and running_var are required when training is false",
            ));
        };
        let centered = ops::sub(input, &ops::reshape(rm, &shape)?)?;
        let std = ops::sqrt(&ops::add(&ops::reshape(rv, &shape)?, &eps)?)?;
        let y = affine_channels(ops::div(&centered, &std)?, weight, bias)?;
        return Ok((y, rm.clone(), rv.clone()));
    }
    // The statistics of the batch: the mean and the biased variance.
    let mean = channel_mean(input)?;
    let centered = ops::sub(input, &mean)?;
    let var = channel_mean(&ops::mul(&centered, &centered)?)?;
    let y = ops::div(&centered, &ops::sqrt(&ops::add(&var, &eps)?)?)?;
    let y = affine_channels(y, weight, bias)?;
    // The running statistics blend in the mean and the unbiased variance
    // (n > 1: the meta checked it).
    let n = values_per_channel(input.shape());
    let mean = ops::reshape(&mean, &[c as i64])?;
    let unbiased = ops::mul(
        &ops::reshape(&var, &[c as i64])?,
        &like(input, n as f64 / (n as f64 - 1.0)),
    )?;
    let (new_mean, new_var) = match (running_mean, running_var) {
        (Some(rm), Some(rv)) => {
            let blend = |running: &Tensor, batch: &Tensor| -> Result<Tensor> {
                ops::add(
                    &ops::mul(running, &like(running, 1.0 - momentum))?,
                    &ops::mul(batch, &like(batch, momentum))?,
                )
            };
            (blend(rm, &mean)?, blend(rv, &unbiased)?)
        }
        _ => (mean, unbiased),
    };
    Ok((y, new_mean, new_var))
}

#[meta(op = "group_norm")]
fn group_norm_meta(
    input: &TensorMeta,
    num_groups: i64,
    weight: Option<&TensorMeta>,
    bias: Option<&TensorMeta>,
    _eps: f64,
) -> Result<TensorMeta> {
    let c = channels_meta(input, &[("weight", weight), ("bias", bias)])?;
    let divides = usize::try_from(num_groups).is_ok_and(|g| g > 0 && c % g == 0);
    if !divides {
        return Err(Error::invalid(format!(
            "num_groups must be positive and divide the number of channels {c}, got {num_groups}"
        )));
    }
    Ok(input.clone())
}

#[decompose(op = "group_norm")]
fn group_norm_decomposition(
    input: &Tensor,
    num_groups: i64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    // [N, C, ...] as [N, G, C / G * ...]: each group's values in one row.
    let n = input.shape()[0];
    let per_group = input.shape()[1..].iter().product::<usize>() / num_groups as usize;
    let grouped = ops::reshape(input, &[n as i64, num_groups, per_group as i64])?;
    let centered = ops::sub(&grouped, &ops::mean(&grouped, Some(-1), true)?)?;
    let var = ops::mean(&ops::mul(&centered, &centered)?, Some(-1), true)?;
    let y = ops::div(&centered, &ops::sqrt(&ops::add(&var, &like(input, eps))?)?)?;
    let shape: Vec<i64> = input.shape().iter().map(|&s| s as i64).collect();
    affine_channels(ops::reshape(&y, &shape)?, weight, bias)
}

/// The `eps` `rms_norm` uses for `x`: the given one, or the machine epsilon
/// of its dtype.
fn rms_eps(x: DType, eps: Option<f64>) -> f64 {
    eps.unwrap_or(match x {
        DType::F32 => f64::from(f32::EPSILON),
        _ => f64::EPSILON,
    })
}

#[meta(op = "rms_norm")]
fn rms_norm_meta(
    input: &TensorMeta,
    normalized_shape: &[i64],
    weight: Option<&TensorMeta>,
    eps: Option<f64>,
) -> Result<TensorMeta> {
    if eps.is_some_and(f64::is_nan) {
        return Err(Error::invalid("eps must not be NaN"));
    }
    layer_norm_meta(
        input,
        normalized_shape,
        weight,
        None,
        rms_eps(input.dtype(), eps),
    )
}

#[decompose(op = "rms_norm")]
fn rms_norm_decomposition(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    // The mean over the trailing dims one at a time, as layer_norm's.
    let square_mean = (1..=normalized_shape.len() as i64)
        .try_fold(ops::mul(input, input)?, |m, d| {
            ops::mean(&m, Some(-d), true)
        })?;
    let eps = like(input, rms_eps(input.dtype(), eps));
    let y = ops::div(input, &ops::sqrt(&ops::add(&square_mean, &eps)?)?)?;
    match weight {
        Some(w) => ops::mul(&y, w),
        None => Ok(y),
    }
}
