//! jvps of the matrix products. Each is bilinear in its operands, so its jvp
//! is the product rule `f(ta, b) + f(a, tb)`; the tangents have their
//! operands' shapes, so the products have the result's shape (`matmul`
//! broadcasts its batch dims as the op does).

use super::{bilinear_jvp, binary};
use crate::{jvp, ops, Result, Tensor};

bilinear_jvp! {
    matmul_jvp "matmul" => ops::matmul;
    dot_jvp "dot" => ops::dot;
    mm_jvp "mm" => ops::mm;
    mv_jvp "mv" => ops::mv;
    outer_jvp "outer" => ops::outer;
    bmm_jvp "bmm" => ops::bmm;
}
