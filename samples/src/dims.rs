//! Sample and error inputs of the ops of `runtime/src/library/dims.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

fn permute_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3, 4]);
    vec![
        args![&x, &[2i64, 0, 1][..]],
        args![&x, &[-1i64, 0, -2][..]],
        args![&x, &[0i64, 1, 2][..]],
        args![&f64s(&[]), &[] as &[i64]],
        args![&f64s(&[1, 0, 2]), &[2i64, 1, 0][..]],
        args![&i64s(&[2, 3], 5), &[1i64, 0][..]],
        args![&f32s(&[3, 1]), &[1i64, 0][..]],
        args![&bools(&[3]), &[0i64][..]],
    ]
}

fn permute_errors() -> Vec<Sample> {
    let x = f64s(&[2, 3, 4]);
    vec![
        args![&x, &[0i64, 1][..]],
        args![&x, &[0i64, 0, 1][..]],
        args![&x, &[0i64, -3, 1][..]],
        args![&x, &[0i64, 1, 3][..]],
        args![&f64s(&[]), &[0i64][..]],
    ]
}

batchrules::op_samples!(
    op = "permute",
    samples = permute_samples,
    errors = permute_errors
);

fn transpose_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 0i64, 1i64],
        args![&f64s(&[2, 3, 4]), -1i64, 0i64],
        args![&f64s(&[2, 3, 4]), 1i64, 1i64],
        args![&f64s(&[]), 0i64, -1i64],
        args![&f64s(&[0, 3]), 0i64, 1i64],
        args![&f32s(&[1, 4]), 1i64, -2i64],
        args![&i64s(&[3, 2], 7), 0i64, 1i64],
        args![&bools(&[4]), 0i64, -1i64],
    ]
}

fn transpose_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 2i64, 0i64],
        args![&f64s(&[2, 3]), 0i64, -3i64],
        args![&f64s(&[]), 1i64, 0i64],
        args![&f64s(&[]), 0i64, -2i64],
    ]
}

batchrules::op_samples!(
    op = "transpose",
    samples = transpose_samples,
    errors = transpose_errors
);

fn unsqueeze_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    let mut s: Vec<_> = [0i64, 1, 2, -1, -3]
        .into_iter()
        .map(|d| args![&x, d])
        .collect();
    s.push(args![&f64s(&[]), 0i64]);
    s.push(args![&f64s(&[]), -1i64]);
    s.push(args![&f64s(&[0]), 1i64]);
    s.push(args![&f32s(&[1]), 0i64]);
    s.push(args![&i64s(&[2], 5), -1i64]);
    s.push(args![&bools(&[2]), 0i64]);
    s
}

fn unsqueeze_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 3i64],
        args![&f64s(&[2, 3]), -4i64],
        args![&f64s(&[]), 1i64],
        args![&f64s(&[]), -2i64],
    ]
}

batchrules::op_samples!(
    op = "unsqueeze",
    samples = unsqueeze_samples,
    errors = unsqueeze_errors
);

fn squeeze_samples() -> Vec<Sample> {
    let x = f64s(&[1, 3, 1]);
    let mut s: Vec<_> = [None, Some(0i64), Some(1), Some(2), Some(-1), Some(-3)]
        .into_iter()
        .map(|d| args![&x, d])
        .collect();
    for d in [None, Some(0i64), Some(-1)] {
        s.push(args![&f64s(&[]), d]);
    }
    s.push(args![&f64s(&[1]), None::<i64>]);
    s.push(args![&f64s(&[2, 0, 1]), None::<i64>]);
    s.push(args![&f64s(&[2, 0, 1]), Some(1i64)]);
    s.push(args![&f32s(&[4]), None::<i64>]);
    s.push(args![&i64s(&[1, 1], 3), None::<i64>]);
    s.push(args![&bools(&[1, 2]), Some(0i64)]);
    s
}

fn squeeze_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[1, 3]), Some(2i64)],
        args![&f64s(&[1, 3]), Some(-3i64)],
        args![&f64s(&[]), Some(1i64)],
    ]
}

batchrules::op_samples!(
    op = "squeeze",
    samples = squeeze_samples,
    errors = squeeze_errors
);

fn narrow_samples() -> Vec<Sample> {
    let x = f64s(&[4, 3]);
    vec![
        args![&x, 0i64, 1i64, 2i64],
        args![&x, -1i64, 0i64, 3i64],
        args![&x, 0i64, -2i64, 2i64],
        args![&x, 1i64, 3i64, 0i64],
        args![&x, 1i64, -3i64, 1i64],
        args![&f64s(&[0, 2]), 0i64, 0i64, 0i64],
        args![&f32s(&[5]), 0i64, 4i64, 1i64],
        args![&i64s(&[2, 3], 5), 1i64, 1i64, 2i64],
        args![&bools(&[3, 1]), 1i64, 0i64, 1i64],
    ]
}

fn narrow_errors() -> Vec<Sample> {
    let x = f64s(&[4, 3]);
    vec![
        args![&f64s(&[]), 0i64, 0i64, 0i64],
        args![&x, 2i64, 0i64, 1i64],
        args![&x, 0i64, 3i64, 2i64],
        args![&x, 0i64, -5i64, 1i64],
        args![&x, 0i64, 5i64, 0i64],
        args![&x, 0i64, 0i64, -1i64],
        args![&x, 1i64, -1i64, 2i64],
    ]
}

batchrules::op_samples!(
    op = "narrow",
    samples = narrow_samples,
    errors = narrow_errors
);

fn pad_dim_samples() -> Vec<Sample> {
    let x = f64s(&[4, 3]);
    vec![
        args![&x, 0i64, 1i64, 2i64],
        args![&x, -1i64, 0i64, 3i64],
        args![&x, 1i64, 2i64, 0i64],
        args![&x, 0i64, 0i64, 0i64],
        args![&f64s(&[0, 2]), 0i64, 2i64, 1i64],
        args![&f64s(&[2, 0]), 1i64, 0i64, 0i64],
        args![&f32s(&[5]), 0i64, 1i64, 1i64],
        args![&i64s(&[2, 3], 5), 1i64, 1i64, 2i64],
        args![&bools(&[3, 1]), -2i64, 1i64, 0i64],
    ]
}

fn pad_dim_errors() -> Vec<Sample> {
    let x = f64s(&[4, 3]);
    vec![
        args![&f64s(&[]), 0i64, 1i64, 0i64],
        args![&x, 2i64, 0i64, 1i64],
        args![&x, -3i64, 0i64, 1i64],
        args![&x, 0i64, -1i64, 2i64],
        args![&x, 0i64, 1i64, -2i64],
        args![&x, 0i64, i64::MAX, 0i64],
    ]
}

batchrules::op_samples!(
    op = "pad_dim",
    samples = pad_dim_samples,
    errors = pad_dim_errors
);
