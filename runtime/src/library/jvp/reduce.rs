//! jvps of the reductions that are not linear: `amax` and `amin`. Their
//! tangent is the mean of the tangents of the elements equal to the extreme
//! (the transpose of the vjp's even split among ties).

use super::{output, through};
use crate::library::derivative::extreme_hits;
use crate::{jvp, ops, Result, Tensor};

/// The registered jvps of `amax` and `amin`: the tangent of the extreme of
/// `x` over `dim` (result `y`) is the tangent summed over the elements that
/// hit the extreme, divided by their count. A NaN extreme has no hits, so a
/// NaN tangent (as the vjp's NaN gradient).
macro_rules! extreme {
    ($($name:ident $op:tt),*) => {$(
        mod $name {
            use super::*;

            #[jvp(op = $op)]
            fn jvp(
                x: &Tensor,
                dim: Option<i64>,
                keepdim: bool,
                y: &Tensor,
                x_tangent: Option<&Tensor>,
            ) -> Result<Option<Tensor>> {
                let t = through(y, x_tangent, |t| {
                    let (hit, count) = extreme_hits(x, y, dim, keepdim, t.dtype())?;
                    ops::sum(&ops::div(&ops::mul(t, &hit)?, &count)?, dim, keepdim)
                })?;
                output(y, t)
            }
        }
    )*};
}

extreme!(amax "amax", amin "amin");

/// `y = log_softmax(x)` along `dim`: `t - sum(exp(y) * t, dim)`, the
/// transpose of its vjp.
#[jvp(op = "log_softmax")]
fn log_softmax_jvp(
    _x: &Tensor,
    dim: i64,
    y: &Tensor,
    x_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let t = through(y, x_tangent, |t| {
        let mean = ops::sum(&ops::mul(&ops::exp(y)?, t)?, Some(dim), true)?;
        ops::sub(t, &mean)
    })?;
    output(y, t)
}
