//! Losses (`ops/losses.toml`): `nll_loss`, `binary_cross_entropy_with_logits`,
//! `smooth_l1_loss` and `huber_loss`, composites over ops whose derivatives
//! are finite wherever PyTorch's are: masked elements are dropped with
//! `where` (whose discarded branch gets an exact 0, never `0 * inf`), the
//! logits loss goes through the stable `logsigmoid`, and the quadratic branch
//! of `smooth_l1_loss` is not built when `beta` is 0. vmap batches them op by
//! op; grad and jvp differentiate them through their decompositions.

use super::composites::reduce_losses;
use super::like;
use crate::core::meta_rules::{broadcast_meta, require_float};
use crate::{decompose, meta, ops, DType, Error, Reduction, Result, Tensor, TensorMeta};

/// The meta of a loss whose per-element losses have `shape`.
fn loss_meta(shape: &[usize], dtype: DType, reduction: Reduction) -> TensorMeta {
    match reduction {
        Reduction::None => TensorMeta::new(shape, dtype),
        Reduction::Mean | Reduction::Sum => TensorMeta::new(Vec::new(), dtype),
    }
}

// ---------------------------------------------------------------------------
// nll_loss

#[meta(op = "nll_loss")]
fn nll_loss_meta(
    input: &TensorMeta,
    target: &TensorMeta,
    weight: Option<&TensorMeta>,
    _ignore_index: i64,
    reduction: Reduction,
) -> Result<TensorMeta> {
    require_float(input)?;
    if target.dtype() != DType::I64 {
        return Err(Error::invalid(format!(
            "target must hold i64 class indices, got {}",
            target.dtype()
        )));
    }
    // [C] with a 0-d target, or [N, C, d1, ...] with a target [N, d1, ...].
    let (x, t) = (input.shape(), target.shape());
    let fits = match x {
        [c] => t.is_empty() && *c > 0,
        [n, c, rest @ ..] => *c > 0 && t.first() == Some(n) && &t[1..] == rest,
        [] => false,
    };
    if !fits {
        return Err(Error::invalid(format!(
            "expects input [N, C, d1, ...] with target [N, d1, ...], or input [C] with a 0-d target (C > 0), got {x:?} and {t:?}"
        )));
    }
    let c = if x.len() == 1 { x[0] } else { x[1] };
    if let Some(w) = weight
        && (w.dtype() != input.dtype() || w.shape() != [c])
    {
        return Err(Error::invalid(format!(
            "weight must be a tensor of the input's dtype {} and shape [{c}] (one per class), got {} {:?}",
            input.dtype(),
            w.dtype(),
            w.shape()
        )));
    }
    Ok(loss_meta(t, input.dtype(), reduction))
}

#[decompose(op = "nll_loss")]
fn nll_loss_decomposition(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    let class_dim = if input.ndim() == 1 { 0 } else { 1 };
    // The ignored targets look up class 0 instead (any valid class: their
    // losses are dropped), so that gather sees only valid indices.
    let ignored = ops::eq(target, &Tensor::scalar(ignore_index))?;
    let safe = ops::where_(&ignored, &Tensor::scalar(0i64), target)?;
    let picked = ops::gather(input, class_dim, &ops::unsqueeze(&safe, class_dim)?)?;
    let picked = ops::squeeze(&picked, Some(class_dim))?;
    // Each element's class weight, of the target's shape.
    let class_weight = match weight {
        Some(w) => {
            let n = i64::try_from(safe.shape().iter().product::<usize>()).unwrap_or(i64::MAX);
            let rows = ops::index_select(w, 0, &ops::reshape(&safe, &[n])?)?;
            let shape: Vec<i64> = safe.shape().iter().map(|&s| s as i64).collect();
            Some(ops::reshape(&rows, &shape)?)
        }
        None => None,
    };
    let zero = like(input, 0.0);
    let weighted = match &class_weight {
        Some(w) => ops::mul(w, &picked)?,
        None => picked,
    };
    let losses = ops::where_(&ignored, &zero, &ops::neg(&weighted)?)?;
    if reduction != Reduction::Mean {
        return reduce_losses(losses, reduction);
    }
    // The mean divides by the summed weights of the kept elements (their
    // count without weights): 0/0 = NaN when every element is ignored.
    let kept = match &class_weight {
        Some(w) => ops::where_(&ignored, &zero, w)?,
        None => ops::where_(&ignored, &zero, &like(input, 1.0))?,
    };
    ops::div(
        &ops::sum(&losses, None, false)?,
        &ops::sum(&kept, None, false)?,
    )
}

// ---------------------------------------------------------------------------
// binary_cross_entropy_with_logits

/// Checks that `t`, if given, broadcasts to `shape` (the input's) without
/// growing it.
fn broadcasts_to(name: &str, t: Option<&TensorMeta>, input: &TensorMeta) -> Result<()> {
    let Some(t) = t else { return Ok(()) };
    let fits = t.dtype() == input.dtype()
        && broadcast_meta(input, t).is_ok_and(|m| m.shape() == input.shape());
    if fits {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{name} must be a tensor of the input's dtype {} that broadcasts to the input's shape {:?}, got {} {:?}",
            input.dtype(),
            input.shape(),
            t.dtype(),
            t.shape()
        )))
    }
}

#[meta(op = "binary_cross_entropy_with_logits")]
fn bce_with_logits_meta(
    input: &TensorMeta,
    target: &TensorMeta,
    weight: Option<&TensorMeta>,
    reduction: Reduction,
    pos_weight: Option<&TensorMeta>,
) -> Result<TensorMeta> {
    require_float(input)?;
    if target.dtype() != input.dtype() || target.shape() != input.shape() {
        return Err(Error::invalid(format!(
            "target must have the input's dtype {} and shape {:?}, got {} {:?}",
            input.dtype(),
            input.shape(),
            target.dtype(),
            target.shape()
        )));
    }
    broadcasts_to("weight", weight, input)?;
    broadcasts_to("pos_weight", pos_weight, input)?;
    Ok(loss_meta(input.shape(), input.dtype(), reduction))
}

/// `(1 - t) * x - (1 + (pos_weight - 1) * t) * logsigmoid(x)`, times
/// `weight`: PyTorch's formula. `logsigmoid` is finite (and its derivative
/// `sigmoid(-x)` too) for every finite `x`.
#[decompose(op = "binary_cross_entropy_with_logits")]
fn bce_with_logits_decomposition(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    pos_weight: Option<&Tensor>,
) -> Result<Tensor> {
    let one = like(input, 1.0);
    let log_sig = ops::logsigmoid(input)?;
    let log_sig = match pos_weight {
        Some(pw) => {
            let log_weight = ops::add(&ops::mul(&ops::sub(pw, &one)?, target)?, &one)?;
            ops::mul(&log_weight, &log_sig)?
        }
        None => log_sig,
    };
    let losses = ops::sub(&ops::mul(&ops::sub(&one, target)?, input)?, &log_sig)?;
    let losses = match weight {
        Some(w) => ops::mul(&losses, w)?,
        None => losses,
    };
    reduce_losses(losses, reduction)
}

// ---------------------------------------------------------------------------
// smooth_l1_loss and huber_loss

/// The meta of an elementwise loss of `input` and `target` (broadcast) with a
/// threshold parameter `name` that must be at least 0 (`positive`: above
/// 0), and not NaN.
fn threshold_loss_meta(
    input: &TensorMeta,
    target: &TensorMeta,
    reduction: Reduction,
    name: &str,
    value: f64,
    positive: bool,
) -> Result<TensorMeta> {
    require_float(input)?;
    let m = broadcast_meta(input, target)?;
    let ok = if positive { value > 0.0 } else { value >= 0.0 };
    if !ok {
        let what = if positive { "positive" } else { "non-negative" };
        return Err(Error::invalid(format!(
            "{name} must be {what}, got {value}"
        )));
    }
    Ok(loss_meta(m.shape(), m.dtype(), reduction))
}

/// `0.5 * d^2 / beta` where `|d| < beta`, else `|d| - 0.5 * beta`, for `d =
/// input - target`; `scale` multiplies the result (huber's `delta`). With
/// `beta = 0` only `|d|` (the quadratic branch would divide by 0, and its
/// discarded gradient be `0 * inf`).
fn smooth_l1(input: &Tensor, target: &Tensor, beta: f64, scale: Option<f64>) -> Result<Tensor> {
    let d = ops::sub(input, target)?;
    let z = ops::abs(&d)?;
    if beta == 0.0 {
        return Ok(z);
    }
    let half = like(&d, 0.5);
    let beta_t = like(&d, beta);
    let square = ops::mul(&half, &ops::mul(&d, &d)?)?;
    let quadratic = match scale {
        Some(_) => square,
        None => ops::div(&square, &beta_t)?,
    };
    let linear = ops::sub(&z, &ops::mul(&half, &beta_t)?)?;
    let linear = match scale {
        Some(s) => ops::mul(&like(&d, s), &linear)?,
        None => linear,
    };
    ops::where_(&ops::lt(&z, &beta_t)?, &quadratic, &linear)
}

#[meta(op = "smooth_l1_loss")]
fn smooth_l1_loss_meta(
    input: &TensorMeta,
    target: &TensorMeta,
    reduction: Reduction,
    beta: f64,
) -> Result<TensorMeta> {
    threshold_loss_meta(input, target, reduction, "beta", beta, false)
}

#[decompose(op = "smooth_l1_loss")]
fn smooth_l1_loss_decomposition(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    reduce_losses(smooth_l1(input, target, beta, None)?, reduction)
}

#[meta(op = "huber_loss")]
fn huber_loss_meta(
    input: &TensorMeta,
    target: &TensorMeta,
    reduction: Reduction,
    delta: f64,
) -> Result<TensorMeta> {
    threshold_loss_meta(input, target, reduction, "delta", delta, true)
}

#[decompose(op = "huber_loss")]
fn huber_loss_decomposition(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    reduce_losses(smooth_l1(input, target, delta, Some(delta))?, reduction)
}
