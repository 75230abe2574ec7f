//! vjps of the reductions: the cotangent expanded back over the reduced dims
//! (divided by the count for `mean`; for `amax`/`amin`, shared evenly among
//! the elements equal to the extreme, as PyTorch's `amax` does).

use super::grad_for;
use crate::batching::shape_arg;
use crate::library::composites::reduced_count;
use crate::library::derivative::{extreme_hits, scalar, unreduce};
use crate::{ops, vjp, Result, Tensor};

/// The vjps of the reductions over `dim`: `$name` registers the vjp of
/// `$op`, the gradient `$grad` of `x` for the cotangent `g` of the result
/// `y`.
macro_rules! reduction_vjp {
    ($($name:ident $op:tt |$x:ident, $dim:ident, $keepdim:ident, $y:ident, $g:ident| $grad:expr;)*) => {$(
        mod $name {
            use super::*;

            #[vjp(op = $op)]
            fn vjp(
                $x: &Tensor,
                $dim: Option<i64>,
                $keepdim: bool,
                $y: &Tensor,
                $g: &Tensor,
            ) -> Result<Option<Tensor>> {
                grad_for($x, || $grad)
            }
        }
    )*};
}

reduction_vjp! {
    sum "sum" |x, dim, keepdim, _y, g| unreduce(g, x, dim, keepdim);
    mean "mean" |x, dim, keepdim, _y, g| {
        let n = reduced_count(x, dim)? as f64;
        ops::div(&unreduce(g, x, dim, keepdim)?, &scalar(g, n)?)
    };
    // Each element equal to the result gets an even share of the cotangent
    // (ties split evenly; a NaN result gives NaN gradients, as in PyTorch).
    amax "amax" |x, dim, keepdim, y, g| extreme_grad(x, dim, keepdim, y, g);
    amin "amin" |x, dim, keepdim, y, g| extreme_grad(x, dim, keepdim, y, g);
}

/// The gradient of `amax`/`amin`: the cotangent shared evenly among the
/// elements equal to the extreme.
fn extreme_grad(
    x: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    y: &Tensor,
    g: &Tensor,
) -> Result<Tensor> {
    let (hit, count) = extreme_hits(x, y, dim, keepdim, g.dtype())?;
    let share = ops::div(&unreduce(g, x, dim, keepdim)?, &count)?;
    ops::mul(&share, &hit)
}

/// `sum_to_size` is the reverse of `expand`, and its vjp is `expand`.
#[vjp(op = "sum_to_size")]
fn sum_to_size_vjp(x: &Tensor, _size: &[i64], _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || ops::expand(g, &shape_arg(None, x.shape())))
}

/// `y = log_softmax(x)` along `dim`: `g - exp(y) * sum(g, dim)` (`exp(y)` is
/// the softmax).
#[vjp(op = "log_softmax")]
fn log_softmax_vjp(x: &Tensor, dim: i64, y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    grad_for(x, || {
        let total = ops::sum(g, Some(dim), true)?;
        ops::sub(g, &ops::mul(&ops::exp(y)?, &total)?)
    })
}
