//! Sample and error inputs of the ops of `runtime/src/library/sorting.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

// Samples for the sweeps: few and tiny. The generated values are distinct
// (no ties, where the derivative of a selection would jump); ties are in the
// tests against PyTorch.

fn max_dim_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 1i64, false],
        args![&f64s(&[3, 2]), -2i64, true],
        args![&f64s(&[]), 0i64, false],
        args![&f32s(&[4]), 0i64, true],
        args![&i64s(&[2, 3], 4), 0i64, false],
    ]
}

fn max_dim_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 2i64, false],
        args![&f64s(&[2, 0]), 1i64, false],
        args![&f64s(&[]), 1i64, true],
    ]
}

fn argsort_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), -1i64, false, false],
        args![&f64s(&[3, 2]), 0i64, true, true],
        args![&f64s(&[]), 0i64, false, false],
        args![&i64s(&[4], 3), 0i64, true, false],
        args![&bools(&[3]), 0i64, false, true],
    ]
}

fn argsort_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 2i64, false, false],
        args![&f64s(&[]), -2i64, false, false],
    ]
}

fn sort_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), -1i64, false, false],
        args![&f64s(&[3, 2]), 0i64, true, true],
        args![&f64s(&[]), 0i64, false, false],
        args![&f32s(&[4]), 0i64, true, false],
    ]
}

fn topk_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 4]), 2i64, -1i64, true, true],
        args![&f64s(&[3, 2]), 1i64, 0i64, false, true],
        args![&f64s(&[3]), 0i64, 0i64, true, false],
        args![&f64s(&[]), 1i64, 0i64, true, true],
        args![&f32s(&[4]), 3i64, 0i64, false, true],
    ]
}

fn topk_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 4i64, -1i64, true, true],
        args![&f64s(&[2, 3]), -1i64, -1i64, true, true],
        args![&f64s(&[2, 3]), 1i64, 2i64, true, true],
        args![&f64s(&[]), 2i64, 0i64, true, true],
    ]
}

register_samples! {
    "max_dim" => max_dim_samples, max_dim_errors;
    "min_dim" => max_dim_samples, max_dim_errors;
    "argsort" => argsort_samples, argsort_errors;
    "sort" => sort_samples, argsort_errors;
    "topk" => topk_samples, topk_errors;
}
