//! Sample and error inputs of the ops of `runtime/src/library/linalg.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

fn triangle_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 3]), 0i64],
        args![&f64s(&[2, 4]), 1i64],
        args![&f64s(&[4, 2]), -1i64],
        args![&i64s(&[2, 2, 3], 9), 0i64],
        args![&bools(&[3, 3]), 2i64],
        args![&f64s(&[0, 2]), 0i64],
        // Diagonals at and near the i64 limits: everything or nothing kept.
        args![&f64s(&[3, 4]), i64::MAX],
        args![&f64s(&[3, 4]), i64::MAX - 1],
        args![&f64s(&[3, 4]), i64::MIN],
        args![&i64s(&[2, 4, 3], 9), i64::MIN + 1],
    ]
}

fn triangle_errors() -> Vec<Sample> {
    vec![args![&f64s(&[2]), 0i64], args![&f64s(&[]), 0i64]]
}

register_samples! {
    "triu" => triangle_samples, triangle_errors;
    "tril" => triangle_samples, triangle_errors;
}

/// Every rank combination, batch dims broadcasting in both directions and
/// across ranks, size-1 and size-0 dims (inner dim 0 gives zeros), and mixed
/// dtypes.
fn matmul_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &f64s(&[3])],
        args![&f64s(&[2, 3]), &f64s(&[3, 4])],
        args![&f64s(&[3]), &f64s(&[3, 4])],
        args![&f64s(&[2, 3]), &f64s(&[3])],
        args![&f64s(&[2, 2, 3]), &f64s(&[3])],
        args![&f64s(&[3]), &f64s(&[2, 3, 4])],
        args![&f64s(&[2, 2, 3]), &f64s(&[2, 3, 4])],
        args![&f64s(&[1, 2, 3]), &f64s(&[4, 3, 2])],
        args![&f64s(&[4, 2, 3]), &f64s(&[1, 3, 2])],
        args![&f64s(&[2, 3]), &f64s(&[2, 3, 2])],
        args![&f64s(&[2, 2, 3]), &f64s(&[3, 2])],
        args![&f64s(&[2, 1, 2, 3]), &f64s(&[3, 3, 2])],
        args![&f64s(&[1, 1]), &f64s(&[1, 1])],
        args![&f64s(&[1]), &f64s(&[1])],
        args![&f64s(&[3, 1]), &f64s(&[1, 2])],
        args![&f64s(&[0, 3]), &f64s(&[3, 2])],
        args![&f64s(&[2, 0]), &f64s(&[0, 3])],
        args![&f64s(&[0]), &f64s(&[0])],
        args![&f64s(&[0, 2, 3]), &f64s(&[3, 2])],
        args![&i64s(&[2, 3], 5), &i64s(&[3, 2], 7)],
        args![&i64s(&[3], 5), &i64s(&[2, 3, 2], 4)],
        args![&f32s(&[2, 3]), &f32s(&[3])],
        args![&f32s(&[2, 3]), &f64s(&[3, 2])],
        args![&i64s(&[2, 2], 5), &f64s(&[2])],
        args![&bools(&[2, 3]), &f32s(&[3, 2])],
        args![&bools(&[3]), &i64s(&[3, 2], 4)],
    ]
}

fn matmul_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[]), &f64s(&[3])],
        args![&f64s(&[3]), &f64s(&[])],
        args![&f64s(&[2, 3]), &f64s(&[4, 5])],
        args![&f64s(&[3]), &f64s(&[4])],
        args![&f64s(&[2, 3]), &f64s(&[2])],
        args![&f64s(&[4]), &f64s(&[3, 2])],
        args![&f64s(&[2, 2, 3]), &f64s(&[3, 3, 2])],
        args![&bools(&[2, 3]), &bools(&[3, 2])],
    ]
}

fn dot_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &f64s(&[3])],
        args![&f64s(&[1]), &f64s(&[1])],
        args![&f64s(&[0]), &f64s(&[0])],
        args![&i64s(&[4], 9), &i64s(&[4], 5)],
        args![&f32s(&[3]), &f64s(&[3])],
        args![&bools(&[3]), &i64s(&[3], 4)],
    ]
}

fn dot_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &f64s(&[2])],
        args![&f64s(&[2, 3]), &f64s(&[3])],
        args![&f64s(&[3]), &f64s(&[3, 1])],
        args![&f64s(&[]), &f64s(&[])],
        args![&bools(&[3]), &bools(&[3])],
    ]
}

fn mm_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s(&[3, 4])],
        args![&f64s(&[1, 1]), &f64s(&[1, 1])],
        args![&f64s(&[0, 3]), &f64s(&[3, 2])],
        args![&f64s(&[2, 0]), &f64s(&[0, 3])],
        args![&f64s(&[3, 2]), &f64s(&[2, 0])],
        args![&i64s(&[2, 2], 9), &i64s(&[2, 3], 5)],
        args![&f32s(&[2, 3]), &f64s(&[3, 1])],
        args![&bools(&[2, 2]), &f32s(&[2, 2])],
    ]
}

fn mm_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s(&[4, 5])],
        args![&f64s(&[3]), &f64s(&[3, 4])],
        args![&f64s(&[2, 3]), &f64s(&[3])],
        args![&f64s(&[2, 2, 3]), &f64s(&[3, 4])],
        args![&bools(&[2, 2]), &bools(&[2, 2])],
    ]
}

fn mv_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s(&[3])],
        args![&f64s(&[1, 1]), &f64s(&[1])],
        args![&f64s(&[0, 3]), &f64s(&[3])],
        args![&f64s(&[2, 0]), &f64s(&[0])],
        args![&i64s(&[3, 2], 9), &i64s(&[2], 5)],
        args![&f32s(&[2, 3]), &i64s(&[3], 4)],
    ]
}

fn mv_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s(&[2])],
        args![&f64s(&[3]), &f64s(&[3])],
        args![&f64s(&[2, 3]), &f64s(&[3, 1])],
        args![&f64s(&[2, 2, 3]), &f64s(&[3])],
        args![&bools(&[2, 3]), &bools(&[3])],
    ]
}

fn outer_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &f64s(&[4])],
        args![&f64s(&[1]), &f64s(&[1])],
        args![&f64s(&[0]), &f64s(&[3])],
        args![&f64s(&[3]), &f64s(&[0])],
        args![&i64s(&[3], 9), &i64s(&[2], 5)],
        args![&f32s(&[2]), &f32s(&[3])],
        args![&bools(&[3]), &f64s(&[2])],
    ]
}

fn outer_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s(&[3])],
        args![&f64s(&[3]), &f64s(&[])],
        args![&bools(&[2]), &bools(&[2])],
    ]
}

fn bmm_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 2, 3]), &f64s(&[2, 3, 4])],
        args![&f64s(&[1, 1, 1]), &f64s(&[1, 1, 1])],
        args![&f64s(&[0, 2, 3]), &f64s(&[0, 3, 4])],
        args![&f64s(&[2, 0, 3]), &f64s(&[2, 3, 1])],
        args![&f64s(&[2, 2, 0]), &f64s(&[2, 0, 3])],
        args![&i64s(&[2, 2, 2], 9), &i64s(&[2, 2, 3], 5)],
        args![&f32s(&[3, 1, 2]), &f64s(&[3, 2, 2])],
    ]
}

fn bmm_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 2, 3]), &f64s(&[3, 3, 4])],
        args![&f64s(&[1, 2, 3]), &f64s(&[2, 3, 4])],
        args![&f64s(&[2, 2, 3]), &f64s(&[2, 4, 4])],
        args![&f64s(&[2, 3]), &f64s(&[2, 3, 4])],
        args![&bools(&[2, 2, 2]), &bools(&[2, 2, 2])],
    ]
}

batchrules::op_samples!(
    op = "matmul",
    samples = matmul_samples,
    errors = matmul_errors
);

fn addmm_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &f64s(&[2, 4]), &f64s(&[4, 3]), false],
        args![&f64s(&[3]), &f64s(&[4]), &f64s(&[4, 3]), false],
        args![&f64s(&[2, 3]), &f64s(&[2, 4]), &f64s(&[4, 3]), false],
        args![&f64s(&[2, 1]), &f64s(&[2, 4]), &f64s(&[4, 3]), false],
        args![&f64s(&[]), &f64s(&[2, 4]), &f64s(&[4, 3]), false],
        args![&f64s(&[1]), &f64s(&[4]), &f64s(&[4, 3]), false],
        // Large enough for the gemm crate (at least 16^3 multiply-adds).
        args![&f64s(&[17]), &f64s(&[18, 19]), &f64s(&[19, 17]), false],
        args![&f32s(&[17]), &f32s(&[18, 19]), &f32s(&[19, 17]), false],
        args![&f32s(&[3]), &f64s(&[2, 4]), &f32s(&[4, 3]), false],
        // Empty dims: the bias alone, or nothing.
        args![&f64s(&[3]), &f64s(&[2, 0]), &f64s(&[0, 3]), false],
        args![&f64s(&[3]), &f64s(&[0, 4]), &f64s(&[4, 3]), false],
        // The fused activation: small and gemm-crate products, a row, a
        // matrix bias, and empty dims.
        args![&f64s(&[3]), &f64s(&[2, 4]), &f64s(&[4, 3]), true],
        args![&f64s(&[3]), &f64s(&[4]), &f64s(&[4, 3]), true],
        args![&f64s(&[2, 3]), &f64s(&[2, 4]), &f64s(&[4, 3]), true],
        args![&f32s(&[17]), &f32s(&[18, 19]), &f32s(&[19, 17]), true],
        args![&f64s(&[3]), &f64s(&[0, 4]), &f64s(&[4, 3]), true],
    ]
}

fn addmm_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &f64s(&[2, 4]), &f64s(&[5, 3]), false],
        args![&f64s(&[4]), &f64s(&[2, 4]), &f64s(&[4, 3]), false],
        args![&f64s(&[2, 2, 3]), &f64s(&[2, 4]), &f64s(&[4, 3]), false],
        args![&f64s(&[3]), &f64s(&[2, 2, 4]), &f64s(&[4, 3]), false],
        args![&f64s(&[3]), &f64s(&[2, 4]), &f64s(&[4]), false],
        args![&f64s(&[]), &f64s(&[]), &f64s(&[4, 3]), false],
        args![&i64s(&[3], 5), &i64s(&[2, 4], 5), &i64s(&[4, 3], 5), false],
        args![&i64s(&[3], 5), &i64s(&[2, 4], 5), &i64s(&[4, 3], 5), true],
        args![&f64s(&[3]), &bools(&[2, 4]), &f64s(&[4, 3]), false],
    ]
}

register_samples! {
    "addmm" => addmm_samples, addmm_errors;
    "dot" => dot_samples, dot_errors;
    "mm" => mm_samples, mm_errors;
    "mv" => mv_samples, mv_errors;
    "outer" => outer_samples, outer_errors;
    "bmm" => bmm_samples, bmm_errors;
}
