//! vjps of the triangle masks and the matrix products. A product's operand
//! gradients are products of the cotangent with the other operand
//! (transposed); `matmul`'s broadcast batch dims are summed back and its 1-d
//! operands restored by [`grad_for`] and a reshape.

use super::grad_for;
use crate::batching::shape_arg;
use crate::{ops, vjp, Result, Tensor};

#[vjp(op = "triu")]
fn triu_vjp(x: &Tensor, diagonal: i64, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || ops::triu(g, diagonal))
}

#[vjp(op = "tril")]
fn tril_vjp(x: &Tensor, diagonal: i64, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || ops::tril(g, diagonal))
}

type ProductGrads = (Option<Tensor>, Option<Tensor>);

/// The last two dims of `t` swapped.
fn t(t: &Tensor) -> Result<Tensor> {
    ops::transpose(t, -1, -2)
}

#[vjp(op = "mm")]
fn mm_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<ProductGrads> {
    Ok((
        grad_for(a, || ops::mm(g, &t(b)?))?,
        grad_for(b, || ops::mm(&t(a)?, g))?,
    ))
}

#[vjp(op = "bmm")]
fn bmm_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<ProductGrads> {
    Ok((
        grad_for(a, || ops::bmm(g, &t(b)?))?,
        grad_for(b, || ops::bmm(&t(a)?, g))?,
    ))
}

#[vjp(op = "mv")]
fn mv_vjp(a: &Tensor, v: &Tensor, _y: &Tensor, g: &Tensor) -> Result<ProductGrads> {
    Ok((
        grad_for(a, || ops::outer(g, v))?,
        grad_for(v, || ops::mv(&t(a)?, g))?,
    ))
}

#[vjp(op = "dot")]
fn dot_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<ProductGrads> {
    Ok((
        grad_for(a, || ops::mul(g, b))?,
        grad_for(b, || ops::mul(g, a))?,
    ))
}

#[vjp(op = "outer")]
fn outer_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<ProductGrads> {
    Ok((
        grad_for(a, || ops::mv(g, b))?,
        grad_for(b, || ops::mv(&t(g)?, a))?,
    ))
}

/// `matmul` with NumPy semantics: a 1-d left operand is a row and a 1-d
/// right operand a column (so the cotangent gets those dims back), the
/// products are taken as matrices, and the gradients are summed over the
/// broadcast batch dims and reshaped to the operands.
#[vjp(op = "matmul")]
fn matmul_vjp(a: &Tensor, b: &Tensor, _y: &Tensor, g: &Tensor) -> Result<ProductGrads> {
    let a2 = if a.ndim() == 1 {
        ops::unsqueeze(a, 0)?
    } else {
        a.clone()
    };
    let b2 = if b.ndim() == 1 {
        ops::unsqueeze(b, -1)?
    } else {
        b.clone()
    };
    let mut g2 = g.clone();
    if a.ndim() == 1 {
        g2 = ops::unsqueeze(&g2, if b.ndim() == 1 { 0 } else { -2 })?;
    }
    if b.ndim() == 1 {
        g2 = ops::unsqueeze(&g2, -1)?;
    }
    // The matrix gradient summed over the batch dims the operand was
    // broadcast along, then in the operand's own shape.
    let back = |m: Tensor, like2: &Tensor, like: &Tensor| -> Result<Tensor> {
        let m = if m.shape() == like2.shape() {
            m
        } else {
            ops::sum_to_size(&m, &shape_arg(None, like2.shape()))?
        };
        ops::reshape(&m, &shape_arg(None, like.shape()))
    };
    Ok((
        grad_for(a, || back(ops::matmul(&g2, &t(&b2)?)?, &a2, a))?,
        grad_for(b, || back(ops::matmul(&t(&a2)?, &g2)?, &b2, b))?,
    ))
}

/// `addmm(bias, a, b) = bias + a @ b`: the bias gets the cotangent (summed
/// back to its shape by [`grad_for`]), the operands a product's gradients
/// (an outer product for a 1-D row `a`). With the fused `relu`, the
/// cotangent first passes through the activation where the result is
/// positive, as `relu`'s own vjp.
#[vjp(op = "addmm")]
fn addmm_vjp(
    bias: &Tensor,
    a: &Tensor,
    b: &Tensor,
    relu: bool,
    y: &Tensor,
    g: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let g = if relu {
        crate::library::unary::relu::derivative(y, y, g)?
    } else {
        g.clone()
    };
    let g = &g;
    Ok((
        grad_for(bias, || Ok(g.clone()))?,
        grad_for(a, || ops::matmul(g, &t(b)?))?,
        // `a^T @ g` (`outer(a, g)` for a 1-D `a`), computed as the transpose
        // of `g^T @ a`: `linear` passes `b` as the transpose of its weight,
        // so the weight's gradient comes back in the weight's own row-major
        // layout (as PyTorch computes it), not as a transposed view that
        // every later reshape had to copy (DP-SGD's per-sample norms: 19% of
        // W14). An outer product is the same products either way round.
        grad_for(b, || {
            let gt_a = if a.ndim() == 1 {
                ops::outer(g, a)?
            } else {
                ops::matmul(&t(g)?, a)?
            };
            t(&gt_a)
        })?,
    ))
}
