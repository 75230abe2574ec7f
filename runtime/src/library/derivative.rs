//! The pieces of the derivatives that reverse mode (`vjp/`) and forward mode
//! (`jvp/`) share, so both follow one formula and one convention at points
//! where an op has no derivative.
//!
//! A pointwise op's Jacobian is diagonal, hence its own transpose: the vjp
//! multiplies the cotangent by the same elementwise factor as the jvp
//! multiplies the tangent by. The functions here apply that factor to a vector
//! `v` (a cotangent of the result's shape, or a tangent of the operand's shape
//! that the arithmetic broadcasts), so the vjp and the jvp of an op are exact
//! transposes of each other, ties included. Every function is written with
//! `ops::` calls only.

use crate::batching::shape_arg;
use crate::{ops, DType, Result, Tensor};

/// A 0-d tensor holding `value` in the dtype of `like` (a cotangent or a
/// tangent), so it does not promote `like` when combined with it.
pub(super) fn scalar(like: &Tensor, value: f64) -> Result<Tensor> {
    ops::full(&[], value, like.dtype())
}

/// `t` converted to the dtype of `like` if it is not already (`log` and `pow`
/// of an integer operand need it as a float; a tangent is computed in its
/// result's dtype).
pub(super) fn as_dtype_of(t: &Tensor, like: &Tensor) -> Result<Tensor> {
    if t.dtype() == like.dtype() {
        Ok(t.clone())
    } else {
        ops::to_dtype(t, like.dtype())
    }
}

/// `g` (a reduction's output, or its cotangent) brought back to the shape of
/// the reduced tensor `x`: the reduced dim re-inserted when `keepdim` was off,
/// then expanded. `dim: None` reduced every dim.
pub(super) fn unreduce(g: &Tensor, x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    let g = match dim {
        Some(d) if !keepdim && x.ndim() > 0 => ops::unsqueeze(g, d)?,
        _ => g.clone(),
    };
    ops::expand(&g, &shape_arg(None, x.shape()))
}

/// Declares a pointwise unary op's derivative once, inside the op's module:
///
/// ```text
/// unary_derivative!("tanh", derivative = |_x, y, v| {
///     ops::mul(v, &ops::sub(&scalar(y, 1.0)?, &ops::mul(y, y)?)?)
/// });
/// ```
///
/// The closure gives `v * f'(x)` for `y = f(x)`, from whichever of `x` and `y`
/// makes the cheaper (or safer) formula, where `v` is a cotangent of `y`'s
/// shape or a tangent of `x`'s. A pointwise op's Jacobian is diagonal, hence
/// its own transpose, so this one factor is both derivatives: the macro
/// writes `derivative(x, y, v)`, the op's `#[vjp]` (the cotangent times the
/// factor, kept for a float `x` whose gradient is wanted) and its `#[jvp]`
/// (the tangent times the factor). `linear_derivative = ...` writes the vjp
/// only, for an op its table marks `linear` (whose jvp is the op).
macro_rules! unary_derivative {
    ($op:tt, linear_derivative = |$x:ident, $y:ident, $v:ident| $factor:expr) => {
        /// `v * f'(x)` for this op's `y = f(x)` (see `unary_derivative!`).
        pub(crate) fn derivative($x: &Tensor, $y: &Tensor, $v: &Tensor) -> Result<Tensor> {
            #[allow(unused_imports)]
            use $crate::library::derivative::scalar;
            $factor
        }

        mod derivative_vjp {
            use $crate::{vjp, Result, Tensor};

            #[vjp(op = $op)]
            fn unary_vjp(x: &Tensor, y: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
                $crate::library::vjp::grad_for(x, || super::derivative(x, y, grad))
            }
        }
    };
    ($op:tt, derivative = |$x:ident, $y:ident, $v:ident| $factor:expr) => {
        $crate::library::derivative::unary_derivative!(
            $op,
            linear_derivative = |$x, $y, $v| $factor
        );

        mod derivative_jvp {
            use $crate::{jvp, Result, Tensor};

            #[jvp(op = $op)]
            fn unary_jvp(
                x: &Tensor,
                y: &Tensor,
                x_tangent: Option<&Tensor>,
            ) -> Result<Option<Tensor>> {
                use $crate::library::jvp::{output, through};
                output(y, through(y, x_tangent, |t| super::derivative(x, y, t))?)
            }
        }
    };
}
pub(crate) use unary_derivative;

/// `v` times the derivative of `softplus(x, beta, threshold)`: 1 where
/// `beta * x > threshold` (where the op is `x`), else `sigmoid(beta * x)`,
/// finite for every `x`, so the branch `where` discards is finite too (no `0
/// * inf` in a second derivative). `beta * x` and the comparison are computed
/// in `x`'s dtype, as the kernel (and PyTorch) does.
pub(super) fn softplus(x: &Tensor, beta: f64, threshold: f64, v: &Tensor) -> Result<Tensor> {
    let bx = ops::mul(x, &scalar(x, beta)?)?;
    let linear = ops::gt(&bx, &scalar(x, threshold)?)?;
    ops::where_(&linear, v, &ops::mul(v, &ops::sigmoid(&bx)?)?)
}

/// `v` times the derivative of `elu(x, alpha)`: `alpha * exp(x)` where `x <=
/// 0`, else 1 (at NaN too, as PyTorch). The `exp` is of `min(x, 0)`, so it
/// never overflows, not even where `where` discards it.
pub(super) fn elu(x: &Tensor, alpha: f64, v: &Tensor) -> Result<Tensor> {
    let zero = scalar(x, 0.0)?;
    let positive = ops::gt(x, &zero)?;
    let e = ops::exp(&ops::where_(&positive, &zero, x)?)?;
    let negative_side = ops::mul(v, &ops::mul(&scalar(x, alpha)?, &e)?)?;
    // `x <= 0` is "not positive and not NaN".
    let not_nan = ops::eq(x, x)?;
    ops::where_(&positive, v, &ops::where_(&not_nan, &negative_side, v)?)
}

/// `v` times `d(a / b)/db = -a / b^2` (not `-y / b`, which is NaN where `b`
/// is 0 and `a` is not).
pub(super) fn div_by_denominator(a: &Tensor, b: &Tensor, v: &Tensor) -> Result<Tensor> {
    ops::neg(&ops::div(&ops::mul(v, a)?, &ops::mul(b, b)?)?)
}

/// `v` times `d(a^b)/da = b * a^(b - 1)`, 0 where `b` is 0 (as PyTorch), with
/// the exponent `b - 1` replaced by `0` there, so a second derivative does not
/// meet `0 * inf = NaN` in the branch not taken. `y` is `a^b`.
pub(super) fn pow_by_base(a: &Tensor, b: &Tensor, y: &Tensor, v: &Tensor) -> Result<Tensor> {
    let (zero, one) = (scalar(y, 0.0)?, scalar(y, 1.0)?);
    let bf = as_dtype_of(b, y)?;
    let e = ops::where_(&ops::eq(&bf, &zero)?, &one, &bf)?;
    ops::mul(v, &ops::mul(&bf, &ops::pow(a, &ops::sub(&e, &one)?)?)?)
}

/// `v` times `d(a^b)/db = a^b * log(a)`, 0 where `a` is 0 (as PyTorch), with
/// `log(a)` computed as `log(1)` there for the same reason as in
/// [`pow_by_base`]. At `a = 0` with `b < 0` the result is infinite and this
/// NaN. `y` is `a^b`.
pub(super) fn pow_by_exponent(a: &Tensor, y: &Tensor, v: &Tensor) -> Result<Tensor> {
    let (zero, one) = (scalar(y, 0.0)?, scalar(y, 1.0)?);
    let af = as_dtype_of(a, y)?;
    let safe = ops::where_(&ops::eq(&af, &zero)?, &one, &af)?;
    ops::mul(v, &ops::mul(y, &ops::log(&safe)?)?)
}

/// The share of `v` that `maximum` (`wins = gt`) or `minimum` (`wins = lt`)
/// passes from the operand `this`: all of it where `this` is the result, half
/// on a tie with `other` (PyTorch's rule), none where `other` wins.
pub(super) fn extreme_share(
    this: &Tensor,
    other: &Tensor,
    v: &Tensor,
    wins: fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let zero = scalar(v, 0.0)?;
    let half = ops::mul(v, &scalar(v, 0.5)?)?;
    let tied = ops::where_(&ops::eq(this, other)?, &half, v)?;
    ops::where_(&wins(other, this)?, &zero, &tied)
}

/// `v` where `x` lies strictly between the bounds `clamp` was given (`min <
/// x < max`, or past the one bound given), 0 elsewhere: where a bound clipped
/// `x`, at exactly a bound, and at NaN. That is PyTorch's derivative of
/// `clamp` with scalar bounds (torch 2.15, recorded in
/// `tests/reference/torch_edge_values.json`); crossed bounds (`min > max`,
/// where `max` wins) leave no `x` strictly between, so the derivative is 0
/// everywhere, as there. The bounds are compared as f64 scalars, which
/// promote `x`, so a bound beyond the f32 range still compares.
pub(super) fn clamp_pass(
    x: &Tensor,
    min: Option<f64>,
    max: Option<f64>,
    v: &Tensor,
) -> Result<Tensor> {
    let zero = scalar(v, 0.0)?;
    let mut out = ops::where_(&ops::eq(x, x)?, v, &zero)?;
    if let Some(min) = min {
        let above = ops::gt(x, &ops::full(&[], min, DType::F64)?)?;
        out = ops::where_(&above, &out, &zero)?;
    }
    if let Some(max) = max {
        let below = ops::lt(x, &ops::full(&[], max, DType::F64)?)?;
        out = ops::where_(&below, &out, &zero)?;
    }
    Ok(out)
}

/// For `amax`/`amin` of `x` over `dim` with result `y`: which elements of `x`
/// equal their extreme (1 or 0, in `dtype`, of `x`'s shape) and how many do
/// (the reduction of those hits with `keepdim`, so it broadcasts against
/// `x`). The derivative shares the vector evenly among the hits (ties split
/// evenly, as PyTorch's `amax`); a NaN result has no hits, so a count of 0 and
/// NaN derivatives, as in PyTorch.
pub(super) fn extreme_hits(
    x: &Tensor,
    y: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    dtype: DType,
) -> Result<(Tensor, Tensor)> {
    let hit = ops::to_dtype(&ops::eq(x, &unreduce(y, x, dim, keepdim)?)?, dtype)?;
    let count = ops::sum(&hit, dim, true)?;
    Ok((hit, count))
}
