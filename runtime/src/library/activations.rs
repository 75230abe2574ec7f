//! Activation functions (`ops/activations.toml`). `erf`, `softplus`, `elu` and
//! `logsigmoid` are primitives: their kernels are written to stay finite where
//! a composite would overflow (`exp` of a large argument), and their
//! derivatives (in `vjp/pointwise.rs` and `jvp/pointwise.rs`, from
//! `derivative.rs`) never evaluate such an `exp`, not even in a branch a
//! `where` discards (whose zero cotangent times an infinity would be NaN).
//! `gelu`, `silu`, `leaky_relu` and `hardtanh` are composites over ops whose
//! derivatives are finite wherever PyTorch's are, so they are batched and
//! differentiated through their decompositions.
//!
//! Every kernel computes in the tensor's own dtype, with the float arguments
//! converted to it first, as PyTorch does, so f32 results round as its do.
//! The kernels' `exp`, `expm1`, `log1p` and `erf` are the vectorized
//! functions of `core::vmath` (the same bits on every CPU, the accuracy in
//! ulp in that module's documentation).

use super::like;
use super::unary::{float_meta, map_array, map_float};
use crate::core::meta_rules::require_float;
use crate::core::vmath::VMath;
use crate::{batching_rule, decompose, kernel, meta, ops, Data, Error, Result, Tensor, TensorMeta};

/// The float argument `value` as the kernel uses it for a tensor like `x`:
/// converted to f32 for an f32 tensor (as PyTorch converts it to the
/// tensor's dtype). Rejects it if that is NaN, or infinite unless
/// `infinite_ok` (a value beyond the f32 range is infinite for an f32
/// tensor).
fn check_arg(x: &TensorMeta, name: &str, value: f64, infinite_ok: bool) -> Result<f64> {
    let used = if x.dtype() == crate::DType::F32 {
        value as f32 as f64
    } else {
        value
    };
    if used.is_nan() || (!infinite_ok && used.is_infinite()) {
        let allowed = if infinite_ok {
            "a number (not NaN)"
        } else {
            "a finite number"
        };
        return Err(Error::invalid(format!(
            "`{name}` must be {allowed} in the tensor's dtype {}, got {value}",
            x.dtype()
        )));
    }
    Ok(used)
}

// ---------------------------------------------------------------------------
// The primitives: meta, kernel and batching rule (the op applied to the
// physical tensor as it is).

#[meta(op = "erf")]
fn erf_meta(x: &TensorMeta) -> Result<TensorMeta> {
    float_meta(x)
}

#[kernel(op = "erf")]
fn erf_kernel(x: &Tensor) -> Result<Tensor> {
    map_float!(x, |v, _c| v.v_erf())
}

#[batching_rule(op = "erf")]
fn erf_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    crate::batching::unary_pointwise(ops::erf, x, bdim)
}

mod erf {
    use crate::library::derivative::unary_derivative;
    use crate::{ops, Result, Tensor};

    // `2/sqrt(pi) * exp(-x^2)`: 0 at ±inf (the `exp` underflows), NaN at NaN.
    unary_derivative!(
        "erf",
        derivative = |x, _y, v| {
            let e = ops::exp(&ops::neg(&ops::mul(x, x)?)?)?;
            ops::mul(
                v,
                &ops::mul(&scalar(x, std::f64::consts::FRAC_2_SQRT_PI)?, &e)?,
            )
        }
    );
}

#[meta(op = "softplus")]
fn softplus_meta(x: &TensorMeta, beta: f64, threshold: f64) -> Result<TensorMeta> {
    require_float(x)?;
    if check_arg(x, "beta", beta, false)? == 0.0 {
        return Err(Error::invalid(format!(
            "`beta` must not be 0 in the tensor's dtype {} (the result divides by it), got {beta}",
            x.dtype()
        )));
    }
    check_arg(x, "threshold", threshold, true)?;
    Ok(x.clone())
}

/// `log1p(exp(beta * x)) / beta`, or `x` where `beta * x > threshold` (where
/// the two agree to the dtype's precision, and `exp` could overflow).
#[kernel(op = "softplus")]
fn softplus_kernel(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    map_float!(x, |v, c| v.v_softplus(c(beta), c(threshold)))
}

#[batching_rule(op = "softplus")]
fn softplus_rule(
    x: &Tensor,
    bdim: Option<usize>,
    beta: f64,
    threshold: f64,
) -> Result<(Tensor, Option<usize>)> {
    crate::batching::unary_pointwise(|t| ops::softplus(t, beta, threshold), x, bdim)
}

#[meta(op = "elu")]
fn elu_meta(x: &TensorMeta, alpha: f64) -> Result<TensorMeta> {
    require_float(x)?;
    check_arg(x, "alpha", alpha, false)?;
    Ok(x.clone())
}

/// `x` where `x > 0`, else `alpha * expm1(x)`: `exp` only ever sees `x <= 0`.
#[kernel(op = "elu")]
fn elu_kernel(x: &Tensor, alpha: f64) -> Result<Tensor> {
    map_float!(x, |v, c| v.v_elu(c(alpha)))
}

#[batching_rule(op = "elu")]
fn elu_rule(x: &Tensor, bdim: Option<usize>, alpha: f64) -> Result<(Tensor, Option<usize>)> {
    crate::batching::unary_pointwise(|t| ops::elu(t, alpha), x, bdim)
}

#[meta(op = "logsigmoid")]
fn logsigmoid_meta(x: &TensorMeta) -> Result<TensorMeta> {
    float_meta(x)
}

/// `min(x, 0) - log1p(exp(-|x|))`: `exp` only ever sees `-|x| <= 0`. The
/// minimum is written out (`f64::min` would turn NaN into 0; here NaN stays
/// NaN through the second term).
#[kernel(op = "logsigmoid")]
fn logsigmoid_kernel(x: &Tensor) -> Result<Tensor> {
    map_float!(x, |v, _c| (if v < 0.0 { v } else { 0.0 })
        - (-v.abs()).v_exp().v_ln1p())
}

#[batching_rule(op = "logsigmoid")]
fn logsigmoid_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
    crate::batching::unary_pointwise(ops::logsigmoid, x, bdim)
}

mod logsigmoid {
    use crate::library::derivative::unary_derivative;
    use crate::{ops, Result, Tensor};

    // `sigmoid(-x)`, whose kernel is finite for every `x` (0 at `+inf`).
    unary_derivative!(
        "logsigmoid",
        derivative = |x, _y, v| ops::mul(v, &ops::sigmoid(&ops::neg(x)?)?)
    );
}

// ---------------------------------------------------------------------------
// The composites: a meta (the checks, once, naming the op) and the
// decomposition.

#[meta(op = "gelu")]
fn gelu_meta(x: &TensorMeta, _approximate: bool) -> Result<TensorMeta> {
    float_meta(x)
}

/// Exact: `x * 0.5 * (1 + erf(x / sqrt(2)))`. Tanh: `0.5 * x * (1 +
/// tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`. Both in PyTorch's order of
/// operations.
#[decompose(op = "gelu")]
fn gelu_decomposition(x: &Tensor, approximate: bool) -> Result<Tensor> {
    let half_x = ops::mul(x, &like(x, 0.5))?;
    let inner = if approximate {
        // sqrt(2) * (2 / sqrt(pi)) * 0.5 = sqrt(2 / pi), as PyTorch's kBeta.
        let beta = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
        let cube = ops::mul(&ops::mul(x, x)?, x)?;
        let arg = ops::add(x, &ops::mul(&like(x, 0.044715), &cube)?)?;
        ops::tanh(&ops::mul(&like(x, beta), &arg)?)?
    } else {
        ops::erf(&ops::mul(x, &like(x, std::f64::consts::FRAC_1_SQRT_2))?)?
    };
    ops::mul(&half_x, &ops::add(&like(x, 1.0), &inner)?)
}

#[meta(op = "silu")]
fn silu_meta(x: &TensorMeta) -> Result<TensorMeta> {
    float_meta(x)
}

#[decompose(op = "silu")]
fn silu_decomposition(x: &Tensor) -> Result<Tensor> {
    ops::mul(x, &ops::sigmoid(x)?)
}

#[meta(op = "leaky_relu")]
fn leaky_relu_meta(x: &TensorMeta, negative_slope: f64) -> Result<TensorMeta> {
    require_float(x)?;
    check_arg(x, "negative_slope", negative_slope, false)?;
    Ok(x.clone())
}

/// `where(x > 0, x, negative_slope * x)`: both branches are finite wherever
/// `x` is, so the gradient of the branch not taken is an exact 0; at 0 and at
/// NaN the second branch is taken (derivative `negative_slope`, as PyTorch).
#[decompose(op = "leaky_relu")]
fn leaky_relu_decomposition(x: &Tensor, negative_slope: f64) -> Result<Tensor> {
    let positive = ops::gt(x, &like(x, 0.0))?;
    ops::where_(&positive, x, &ops::mul(x, &like(x, negative_slope))?)
}

#[meta(op = "hardtanh")]
fn hardtanh_meta(x: &TensorMeta, min_val: f64, max_val: f64) -> Result<TensorMeta> {
    require_float(x)?;
    check_arg(x, "min_val", min_val, true)?;
    check_arg(x, "max_val", max_val, true)?;
    if min_val > max_val {
        return Err(Error::invalid(format!(
            "`min_val` ({min_val}) must not be greater than `max_val` ({max_val})"
        )));
    }
    Ok(x.clone())
}

/// `clamp`, whose derivative is already hardtanh's: 1 strictly between the
/// bounds, 0 at and beyond them, and at NaN.
#[decompose(op = "hardtanh")]
fn hardtanh_decomposition(x: &Tensor, min_val: f64, max_val: f64) -> Result<Tensor> {
    ops::clamp(x, Some(min_val), Some(max_val))
}
