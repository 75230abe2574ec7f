//! Composite ops: implemented by decomposing into other ops. Under vmap each
//! constituent op is batched on its own, so none of these needs a rule. Their
//! metas check the arguments once, on logical shapes, before the decomposition
//! runs.

use crate::core::cast::scalar_like;
use crate::core::meta_rules::{broadcast_meta, reduce_meta, require_float};
use crate::core::wrap_dim::check_dim;
use crate::{decompose, meta, ops, Error, Reduction, Result, Tensor, TensorMeta};

/// Meta of an op that maps a float tensor to one of the same shape along `dim`.
pub(super) fn along_dim_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    require_float(x)?;
    check_dim(dim, x.ndim())?;
    Ok(x.clone())
}

#[meta(op = "softmax")]
fn softmax_meta(x: &TensorMeta, dim: i64) -> Result<TensorMeta> {
    along_dim_meta(x, dim)
}

/// Whether `dim` of `x` (its logical shape, under vmap too) has size 0. A 0-d
/// tensor's dim holds its one element.
fn empty_dim(x: &Tensor, dim: i64) -> Result<bool> {
    Ok(x.ndim() > 0 && x.shape()[check_dim(dim, x.ndim())?] == 0)
}

/// The number of elements a reduction of `x` over `dim` (all dims when
/// `None`) combines: the size of `dim`, or every element.
pub(super) fn reduced_count(x: &Tensor, dim: Option<i64>) -> Result<usize> {
    Ok(match dim {
        Some(d) if x.ndim() > 0 => x.shape()[check_dim(d, x.ndim())?],
        _ => x.shape().iter().product(),
    })
}

/// `m` with its infinite entries replaced by 0 (NaN stays): the shift that
/// keeps `x - m` from being `inf - inf` (PyTorch's `logsumexp` does the same).
fn finite_shift(m: &Tensor) -> Result<Tensor> {
    let like = TensorMeta::of(m);
    let infinite = ops::eq(&ops::abs(m)?, &scalar_like(&like, f64::INFINITY))?;
    ops::where_(&infinite, &scalar_like(&like, 0.0), m)
}

#[decompose(op = "softmax")]
fn softmax_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    if empty_dim(x, dim)? {
        // As in PyTorch: nothing to normalize, so the (empty) input's shape.
        return Ok(x.clone());
    }
    // The shift changes no value, so no gradient flows through it (detach).
    let shifted = ops::sub(x, &ops::detach(&ops::amax(x, Some(dim), true)?)?)?;
    let e = ops::exp(&shifted)?;
    ops::div(&e, &ops::sum(&e, Some(dim), true)?)
}

#[meta(op = "logsumexp")]
fn logsumexp_meta(x: &TensorMeta, dim: i64, keepdim: bool) -> Result<TensorMeta> {
    along_dim_meta(x, dim)?;
    reduce_meta(x, Some(dim), keepdim, false)
}

#[decompose(op = "logsumexp")]
fn logsumexp_decomposition(x: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    if empty_dim(x, dim)? {
        // As in PyTorch: the log of an empty sum, log(0) = -inf.
        return ops::log(&ops::sum(&ops::exp(x)?, Some(dim), keepdim)?);
    }
    // Shifted by the maximum, unless it is infinite: all -inf gives
    // log(0) + 0 = -inf and a +inf gives log(inf) + 0 = +inf (not NaN).
    // The shift cancels out of the value, so no gradient flows through it
    // (detach); the gradient of the result is then softmax(x).
    let m = ops::detach(&finite_shift(&ops::amax(x, Some(dim), true)?)?)?;
    let s = ops::sum(&ops::exp(&ops::sub(x, &m)?)?, Some(dim), keepdim)?;
    // The maximum once, squeezed to the result's shape when keepdim is off (a
    // 0-d input has no dim to squeeze).
    let m = if keepdim || x.ndim() == 0 {
        m
    } else {
        ops::squeeze(&m, Some(dim))?
    };
    ops::add(&ops::log(&s)?, &m)
}

#[meta(op = "var")]
fn var_meta(
    x: &TensorMeta,
    dim: Option<i64>,
    _correction: i64,
    keepdim: bool,
) -> Result<TensorMeta> {
    require_float(x)?;
    reduce_meta(x, dim, keepdim, false)
}

#[decompose(op = "var")]
fn var_decomposition(
    x: &Tensor,
    dim: Option<i64>,
    correction: i64,
    keepdim: bool,
) -> Result<Tensor> {
    // `x.shape()` is the logical shape, under vmap too.
    let n = reduced_count(x, dim)?;
    let centered = ops::sub(x, &ops::mean(x, dim, true)?)?;
    let squares = ops::sum(&ops::mul(&centered, &centered)?, dim, keepdim)?;
    // As PyTorch: divide by max(0, N - correction), in i128 so no correction
    // overflows; a correction of N or more divides by 0 (inf, or NaN where the
    // squares sum to 0). An empty reduction is NaN whatever the correction
    // (PyTorch fills it with NaN): 0 / 0.
    let divisor = if n == 0 {
        0.0
    } else {
        (n as i128 - i128::from(correction)).max(0) as f64
    };
    ops::div(&squares, &scalar_like(&TensorMeta::of(x), divisor))
}

#[meta(op = "mse_loss")]
fn mse_loss_meta(x: &TensorMeta, target: &TensorMeta, reduction: Reduction) -> Result<TensorMeta> {
    require_float(x)?;
    let m = broadcast_meta(x, target)?;
    Ok(match reduction {
        Reduction::None => m,
        Reduction::Mean | Reduction::Sum => TensorMeta::new(Vec::new(), m.dtype()),
    })
}

/// The per-element `losses` reduced as `reduction` says.
pub(super) fn reduce_losses(losses: Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::None => Ok(losses),
        Reduction::Mean => ops::mean(&losses, None, false),
        Reduction::Sum => ops::sum(&losses, None, false),
    }
}

#[decompose(op = "mse_loss")]
fn mse_loss_decomposition(x: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    let diff = ops::sub(x, target)?;
    reduce_losses(ops::mul(&diff, &diff)?, reduction)
}

#[meta(op = "linear")]
fn linear_meta(x: &TensorMeta, w: &TensorMeta, bias: Option<&TensorMeta>) -> Result<TensorMeta> {
    require_float(x)?;
    let (Some(&n_in), [n_out, w_in]) = (x.shape().last(), w.shape()) else {
        return Err(Error::invalid(format!(
            "expects input [..., in] and weight [out, in], got {:?} and {:?}",
            x.shape(),
            w.shape()
        )));
    };
    if n_in != *w_in {
        return Err(Error::invalid(format!(
            "input has {n_in} features but weight {:?} expects {w_in}",
            w.shape()
        )));
    }
    if let Some(b) = bias
        && b.shape() != [*n_out]
    {
        return Err(Error::invalid(format!(
            "bias must have shape [{n_out}], got {:?}",
            b.shape()
        )));
    }
    let mut shape = x.shape().to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = *n_out;
    Ok(TensorMeta::new(shape, x.dtype().promote(w.dtype())))
}

#[decompose(op = "linear")]
fn linear_decomposition(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let wt = ops::transpose(w, 0, 1)?;
    match bias {
        // The bias add fused into the product's output pass.
        Some(b) if x.ndim() <= 2 => ops::addmm(b, x, &wt, false),
        Some(b) => ops::add(&ops::matmul(x, &wt)?, b),
        None => ops::matmul(x, &wt),
    }
}

/// `linear_relu` checks what `linear` checks.
#[meta(op = "linear_relu")]
fn linear_relu_meta(
    x: &TensorMeta,
    w: &TensorMeta,
    bias: Option<&TensorMeta>,
) -> Result<TensorMeta> {
    linear_meta(x, w, bias)
}

#[decompose(op = "linear_relu")]
fn linear_relu_decomposition(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let float = [Some(x), Some(w), bias]
        .into_iter()
        .flatten()
        .all(|t| t.dtype().is_float());
    if x.ndim() > 2 || !float {
        return ops::relu(&ops::linear(x, w, bias)?);
    }
    // The bias add and the activation fused into the product's output.
    let wt = ops::transpose(w, 0, 1)?;
    match bias {
        Some(b) => ops::addmm(b, x, &wt, true),
        None => ops::addmm(&scalar_like(&TensorMeta::of(x), 0.0), x, &wt, true),
    }
}

#[meta(op = "cross_entropy")]
fn cross_entropy_meta(
    logits: &TensorMeta,
    target: &TensorMeta,
    reduction: Reduction,
) -> Result<TensorMeta> {
    require_float(logits)?;
    if target.dtype() != crate::DType::I64 {
        return Err(Error::invalid(format!(
            "target must hold i64 class indices, got {}",
            target.dtype()
        )));
    }
    let rows_ok = match (logits.shape(), target.shape()) {
        ([c], []) => *c > 0,
        ([n, c], [m]) => n == m && *c > 0,
        _ => false,
    };
    if !rows_ok {
        return Err(Error::invalid(format!(
            "expects logits [N, C] with target [N], or logits [C] with a 0-d target (C > 0), got {:?} and {:?}",
            logits.shape(),
            target.shape()
        )));
    }
    Ok(match reduction {
        Reduction::None => TensorMeta::new(target.shape(), logits.dtype()),
        Reduction::Mean | Reduction::Sum => TensorMeta::new(Vec::new(), logits.dtype()),
    })
}

#[decompose(op = "cross_entropy")]
fn cross_entropy_decomposition(
    logits: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<Tensor> {
    let logp = ops::log_softmax(logits, -1)?;
    let picked = ops::gather(&logp, -1, &ops::unsqueeze(target, -1)?)?;
    reduce_losses(ops::neg(&ops::squeeze(&picked, Some(-1))?)?, reduction)
}

#[meta(op = "layer_norm")]
pub(super) fn layer_norm_meta(
    x: &TensorMeta,
    normalized_shape: &[i64],
    weight: Option<&TensorMeta>,
    bias: Option<&TensorMeta>,
    _eps: f64,
) -> Result<TensorMeta> {
    require_float(x)?;
    let k = normalized_shape.len();
    let trailing = &x.shape()[x.ndim().saturating_sub(k)..];
    let fits = k > 0
        && k <= x.ndim()
        && trailing
            .iter()
            .zip(normalized_shape)
            .all(|(&s, &n)| s as i64 == n);
    if !fits {
        return Err(Error::invalid(format!(
            "normalized_shape {normalized_shape:?} must be non-empty and match the trailing dims of the input {:?}",
            x.shape()
        )));
    }
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t
            && t.shape() != trailing
        {
            return Err(Error::invalid(format!(
                "{name} must have shape {trailing:?} (normalized_shape), got {:?}",
                t.shape()
            )));
        }
    }
    Ok(x.clone())
}

#[decompose(op = "layer_norm")]
fn layer_norm_decomposition(
    x: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    // Mean over the trailing k dims, one dim at a time (equal group sizes, so the
    // mean of means is the mean).
    let mean_trailing = |t: &Tensor| -> Result<Tensor> {
        (1..=normalized_shape.len() as i64)
            .try_fold(t.clone(), |m, d| ops::mean(&m, Some(-d), true))
    };
    let centered = ops::sub(x, &mean_trailing(x)?)?;
    let var = mean_trailing(&ops::mul(&centered, &centered)?)?;
    let eps = scalar_like(&TensorMeta::of(x), eps);
    let y = ops::div(&centered, &ops::sqrt(&ops::add(&var, &eps)?)?)?;
    let y = match weight {
        Some(w) => ops::mul(&y, w)?,
        None => y,
    };
    match bias {
        Some(b) => ops::add(&y, b),
        None => Ok(y),
    }
}
