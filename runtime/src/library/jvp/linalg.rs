//! jvps of the matrix products. Each is bilinear in its operands, so its jvp
//! is the product rule `f(ta, b) + f(a, tb)`; the tangents have their
//! operands' shapes, so the products have the result's shape (`matmul`
//! broadcasts its batch dims as the op does).

use super::{add_tangents, bilinear_jvp, binary, output, through};
use crate::{jvp, ops, Result, Tensor};

bilinear_jvp! {
    matmul_jvp "matmul" => ops::matmul;
    dot_jvp "dot" => ops::dot;
    mm_jvp "mm" => ops::mm;
    mv_jvp "mv" => ops::mv;
    outer_jvp "outer" => ops::outer;
    bmm_jvp "bmm" => ops::bmm;
}

/// `addmm(bias, a, b) = bias + a @ b`: the bias's tangent plus the product
/// rule for `a @ b`; with the fused `relu`, that tangent passes through the
/// activation where the result is positive, as `relu`'s own jvp.
#[jvp(op = "addmm")]
#[allow(clippy::too_many_arguments)]
fn addmm_jvp(
    _bias: &Tensor,
    a: &Tensor,
    b: &Tensor,
    relu: bool,
    y: &Tensor,
    bias_tangent: Option<&Tensor>,
    a_tangent: Option<&Tensor>,
    b_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let product = add_tangents(
        through(y, a_tangent, |t| ops::matmul(t, b))?,
        through(y, b_tangent, |t| ops::matmul(a, t))?,
    )?;
    let sum = add_tangents(through(y, bias_tangent, |t| Ok(t.clone()))?, product)?;
    let sum = match sum {
        Some(t) if relu => Some(crate::library::unary::relu::derivative(y, y, &t)?),
        other => other,
    };
    output(y, sum)
}
