//! vjps of the pointwise ops: unary, broadcasting binary, `where`, `clamp` and
//! `to_dtype`. Binary gradients are un-broadcast and cast back by
//! [`grad_for`]; ties of `maximum`/`minimum` split the gradient evenly between
//! the operands, as PyTorch does.

use super::{grad_for, scalar};
use crate::{ops, vjp, DType, Result, Tensor};

/// The vjp of a pointwise unary op `y = f(x)` from its derivative written
/// with ops: `$grad(x, y, g)` is the gradient for a float `x`.
macro_rules! unary_vjp {
    ($($name:ident $op:tt: |$x:ident, $y:ident, $g:ident| $grad:expr;)*) => {
        $(
            mod $name {
                use super::*;

                #[vjp(op = $op)]
                fn vjp(x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
                    let ($x, $y, $g) = (x, y, g);
                    grad_for(x, || $grad)
                }
            }
        )*
    };
}

unary_vjp! {
    neg_vjp "neg": |_x, _y, g| ops::neg(g);
    // The sign of x as gt - lt (0 at 0, as PyTorch's sgn).
    abs_vjp "abs": |x, _y, g| {
        let zero = scalar(x, 0.0)?;
        ops::mul(g, &ops::sub(&ops::gt(x, &zero)?, &ops::lt(x, &zero)?)?)
    };
    // Through where the result is positive (0 at 0, as PyTorch).
    relu_vjp "relu": |_x, y, g| ops::where_(&ops::gt(y, &scalar(y, 0.0)?)?, g, &scalar(g, 0.0)?);
    exp_vjp "exp": |_x, y, g| ops::mul(g, y);
    log_vjp "log": |x, _y, g| ops::div(g, x);
    sqrt_vjp "sqrt": |_x, y, g| ops::div(g, &ops::mul(y, &scalar(y, 2.0)?)?);
    sin_vjp "sin": |x, _y, g| ops::mul(g, &ops::cos(x)?);
    cos_vjp "cos": |x, _y, g| ops::neg(&ops::mul(g, &ops::sin(x)?)?);
    tanh_vjp "tanh": |_x, y, g| ops::mul(g, &ops::sub(&scalar(y, 1.0)?, &ops::mul(y, y)?)?);
    sigmoid_vjp "sigmoid": |_x, y, g| ops::mul(&ops::mul(g, y)?, &ops::sub(&scalar(y, 1.0)?, y)?);
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
    // d(a / b)/db = -a / b^2 (not -y / b, which is NaN where b is 0 and a is not).
    binary(
        a,
        b,
        || ops::div(g, b),
        || ops::neg(&ops::div(&ops::mul(g, a)?, &ops::mul(b, b)?)?),
    )
}

/// `t` converted to the dtype of `like` (a float) if it is not already: `log`
/// and `pow` of an integer operand need it as a float.
fn as_dtype_of(t: &Tensor, like: &Tensor) -> Result<Tensor> {
    if t.dtype() == like.dtype() {
        Ok(t.clone())
    } else {
        ops::to_dtype(t, like.dtype())
    }
}

/// `pow`: `b * a^(b - 1)` for the base and `a^b * log(a)` for the exponent.
/// Both are 0 where PyTorch's are (at `b = 0` for the base, at `a = 0` for the
/// exponent), but computed without an infinity in the branch not taken: the
/// exponent `b - 1` is `0` where `b` is 0 and `log(a)` is `log(1)` where `a` is
/// 0, so a second derivative (grad of grad) does not meet `0 * inf = NaN`. At
/// `a = 0` with `b < 0` the result is infinite and the exponent's gradient NaN.
#[vjp(op = "pow")]
fn pow_vjp(a: &Tensor, b: &Tensor, y: &Tensor, g: &Tensor) -> Result<BinaryGrads> {
    let (zero, one) = (scalar(y, 0.0)?, scalar(y, 1.0)?);
    binary(
        a,
        b,
        || {
            let bf = as_dtype_of(b, y)?;
            let e = ops::where_(&ops::eq(&bf, &zero)?, &one, &bf)?;
            ops::mul(g, &ops::mul(&bf, &ops::pow(a, &ops::sub(&e, &one)?)?)?)
        },
        || {
            let af = as_dtype_of(a, y)?;
            let safe = ops::where_(&ops::eq(&af, &zero)?, &one, &af)?;
            ops::mul(g, &ops::mul(y, &ops::log(&safe)?)?)
        },
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
    let share = |this: &Tensor, other: &Tensor| -> Result<Tensor> {
        let zero = scalar(g, 0.0)?;
        let half = ops::mul(g, &scalar(g, 0.5)?)?;
        let tied = ops::where_(&ops::eq(this, other)?, &half, g)?;
        ops::where_(&wins(other, this)?, &zero, &tied)
    };
    binary(a, b, || share(a, b), || share(b, a))
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

/// `clamp`: the gradient flows where `min <= x <= max` (not where a bound
/// clipped `x`, nor at NaN), as PyTorch. The bounds are compared as f64
/// scalars, which promote `x`, so a bound beyond the f32 range still compares.
#[vjp(op = "clamp")]
fn clamp_vjp(
    x: &Tensor,
    min: Option<f64>,
    max: Option<f64>,
    _y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let zero = scalar(g, 0.0)?;
        let mut out = ops::where_(&ops::eq(x, x)?, g, &zero)?;
        if let Some(min) = min {
            let below = ops::lt(x, &ops::full(&[], min, DType::F64)?)?;
            out = ops::where_(&below, &zero, &out)?;
        }
        if let Some(max) = max {
            let above = ops::gt(x, &ops::full(&[], max, DType::F64)?)?;
            out = ops::where_(&above, &zero, &out)?;
        }
        Ok(out)
    })
}
