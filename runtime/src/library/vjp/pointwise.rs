//! vjps of the pointwise ops: unary, broadcasting binary, `where`, `clamp` and
//! `to_dtype`. Binary gradients are un-broadcast and cast back by
//! [`grad_for`]; ties of `maximum`/`minimum` split the gradient evenly between
//! the operands, as PyTorch does.

use super::grad_for;
use crate::library::derivative::{
    self, clamp_pass, div_by_denominator, extreme_share, pow_by_base, pow_by_exponent, scalar,
};
use crate::{ops, vjp, DType, Result, Tensor};

// The vjps of the pointwise unary ops with one scalar factor (`exp`, `tanh`,
// `erf`, ...) are declared with the op, by `unary_derivative!`.

/// `softplus`: `sigmoid(beta * x)`, 1 above the threshold
/// ([`derivative::softplus`]).
#[vjp(op = "softplus")]
fn softplus_vjp(
    x: &Tensor,
    beta: f64,
    threshold: f64,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || derivative::softplus(x, beta, threshold, g))
}

/// `elu`: `alpha * exp(x)` where `x <= 0`, else 1 ([`derivative::elu`]).
#[vjp(op = "elu")]
fn elu_vjp(x: &Tensor, alpha: f64, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || derivative::elu(x, alpha, g))
}

/// `to_dtype`: the cotangent converted back to the input's dtype; nothing
/// flows through a conversion to or from an integer or bool dtype.
#[vjp(op = "to_dtype")]
fn to_dtype_vjp(x: &Tensor, _dtype: DType, y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    if !y.dtype().is_float() {
        return Ok(None);
    }
    grad_for(x, || Ok(g.clone()))
}

/// Gradients of a broadcasting binary op: `ga()` for `a` and `gb()` for `b`,
/// each computed only for a float operand and fitted to its shape and dtype.
type BinaryGrads = (Option<Tensor>, Option<Tensor>);

fn binary(
    a: &Tensor,
    b: &Tensor,
    ga: impl FnOnce() -> Result<Tensor>,
    gb: impl FnOnce() -> Result<Tensor>,
) -> Result<BinaryGrads> {
    Ok((grad_for(a, ga)?, grad_for(b, gb)?))
}

#[vjp(op = "add")]
fn add_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    binary(a, b, || Ok(g.clone()), || Ok(g.clone()))
}

#[vjp(op = "sub")]
fn sub_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    binary(a, b, || Ok(g.clone()), || ops::neg(g))
}

#[vjp(op = "mul")]
fn mul_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    binary(a, b, || ops::mul(g, b), || ops::mul(g, a))
}

#[vjp(op = "div")]
fn div_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    binary(a, b, || ops::div(g, b), || div_by_denominator(a, b, g))
}

/// `pow`: `b * a^(b - 1)` for the base and `a^b * log(a)` for the exponent,
/// 0 where PyTorch's are (see [`pow_by_base`] and [`pow_by_exponent`]).
#[vjp(op = "pow")]
fn pow_vjp(a: &Tensor, b: &Tensor, y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    binary(
        a,
        b,
        || pow_by_base(a, b, y, g),
        || pow_by_exponent(a, y, g),
    )
}

/// `maximum` (`wins = gt`) or `minimum` (`wins = lt`): the gradient goes to
/// the operand that is the result, split evenly on ties (PyTorch's rule).
fn extreme_vjp(
    a: &Tensor,
    b: &Tensor,
    g: &Tensor,
    wins: fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<BinaryGrads> {
    binary(
        a,
        b,
        || extreme_share(a, b, g, wins),
        || extreme_share(b, a, g, wins),
    )
}

#[vjp(op = "maximum")]
fn maximum_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    extreme_vjp(a, b, g, ops::gt)
}

#[vjp(op = "minimum")]
fn minimum_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    extreme_vjp(a, b, g, ops::lt)
}

#[vjp(op = "where")]
fn where_vjp(
    c: &Tensor,
    a: &Tensor,
    b: &Tensor,
    _y: &Tensor,
    g: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let zero = scalar(g, 0.0)?;
    let (ga, gb) = binary(
        a,
        b,
        || ops::where_(c, g, &zero),
        || ops::where_(c, &zero, g),
    )?;
    Ok((None, ga, gb))
}

/// `clamp`: the gradient flows where `min < x < max` (not where a bound
/// clipped `x`, not at exactly a bound, nor at NaN), as PyTorch
/// ([`clamp_pass`]).
#[vjp(op = "clamp")]
fn clamp_vjp(
    x: &Tensor,
    min: Option<f64>,
    max: Option<f64>,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || clamp_pass(x, min, max, g))
}
