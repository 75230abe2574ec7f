//! jvps of the pointwise ops that are not linear: the unary ones, the
//! broadcasting binary `mul`, `div`, `pow`, `maximum` and `minimum`, and
//! `clamp`. A pointwise op's Jacobian is diagonal, so each jvp multiplies the
//! tangents by the factors the vjp multiplies the cotangent by (shared in
//! `library/derivative.rs`); a broadcast operand's tangent is broadcast by
//! that arithmetic or by [`output`].

use super::{bilinear_jvp, binary, binary_jvp, output, through};
use crate::library::derivative::{
    self, clamp_pass, div_by_denominator, extreme_share, pow_by_base, pow_by_exponent,
};
use crate::{jvp, ops, Result, Tensor};

// The jvps of the pointwise unary ops with one scalar factor (`exp`, `tanh`,
// `erf`, ...) are declared with the op, by `unary_derivative!`.

/// `softplus`: the tangent times the vjp's factor ([`derivative::softplus`]).
#[jvp(op = "softplus")]
fn softplus_jvp(
    x: &Tensor,
    beta: f64,
    threshold: f64,
    y: &Tensor,
    x_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    output(
        y,
        through(y, x_tangent, |t| {
            derivative::softplus(x, beta, threshold, t)
        })?,
    )
}

/// `elu`: the tangent times the vjp's factor ([`derivative::elu`]).
#[jvp(op = "elu")]
fn elu_jvp(
    x: &Tensor,
    alpha: f64,
    y: &Tensor,
    x_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    output(y, through(y, x_tangent, |t| derivative::elu(x, alpha, t))?)
}

bilinear_jvp! {
    mul_jvp "mul" => ops::mul;
}

// `d(a / b) = da / b - a db / b^2`; `d(a^b) = b a^(b - 1) da + a^b log(a) db`,
// each term 0 where the vjp's is (see `pow_by_base` and `pow_by_exponent`);
// `maximum` (`wins = gt`) and `minimum` (`wins = lt`) pass the tangent of
// the operand that is the result, and the mean `(ta + tb) / 2` on a tie (the
// transpose of the vjp's even split).
binary_jvp! {
    div_jvp "div": |a, b, _y, t| ops::div(t, b), div_by_denominator(a, b, t);
    pow_jvp "pow": |a, b, y, t| pow_by_base(a, b, y, t), pow_by_exponent(a, y, t);
    maximum_jvp "maximum":
        |a, b, _y, t| extreme_share(a, b, t, ops::gt), extreme_share(b, a, t, ops::gt);
    minimum_jvp "minimum":
        |a, b, _y, t| extreme_share(a, b, t, ops::lt), extreme_share(b, a, t, ops::lt);
}

/// `clamp`: the tangent where `min < x < max` (as the vjp), 0 where a bound
/// clipped `x`, at exactly a bound, or where `x` is NaN ([`clamp_pass`]).
#[jvp(op = "clamp")]
fn clamp_jvp(
    x: &Tensor,
    min: Option<f64>,
    max: Option<f64>,
    y: &Tensor,
    x_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    output(y, through(y, x_tangent, |t| clamp_pass(x, min, max, t))?)
}
