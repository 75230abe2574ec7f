//! Sample and error inputs of the ops of `runtime/src/library/shape.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

fn reshape_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    let mut s = Vec::new();
    for shape in [&[3i64, 2][..], &[6], &[-1], &[1, -1, 3], &[3, -1], &[2, 3]] {
        s.push(args![&x, shape]);
    }
    for shape in [&[] as &[i64], &[1], &[-1], &[1, 1]] {
        s.push(args![&f64s(&[]), shape]);
    }
    s.push(args![&f64s(&[2, 0]), &[0i64, 5][..]]);
    s.push(args![&f64s(&[2, 0]), &[-1i64][..]]);
    s.push(args![&f64s(&[2, 0]), &[5i64, 0, 2][..]]);
    s.push(args![&f64s(&[1, 4, 1]), &[2i64, -1][..]]);
    s.push(args![&f32s(&[4]), &[2i64, 2][..]]);
    s.push(args![&i64s(&[2, 3], 5), &[3i64, -1][..]]);
    s.push(args![&bools(&[1, 4]), &[4i64, 1][..]]);
    s
}

fn reshape_errors() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    vec![
        args![&x, &[4i64][..]],
        args![&x, &[-1i64, -1][..]],
        args![&x, &[-1i64, 4][..]],
        args![&x, &[-2i64, -3][..]],
        args![&x, &[] as &[i64]],
        args![&f64s(&[]), &[2i64][..]],
        args![&f64s(&[2, 0]), &[-1i64, 0][..]],
    ]
}

batchrules::op_samples!(
    op = "reshape",
    samples = reshape_samples,
    errors = reshape_errors
);

fn expand_samples() -> Vec<Sample> {
    let x = f64s(&[3, 1]);
    let mut s = Vec::new();
    for size in [
        &[3i64, 4][..],
        &[-1, 4],
        &[3, 1],
        &[-1, -1],
        &[2, 3, 4],
        &[2, -1, -1],
        &[0, 3, 1],
        &[3, 0],
    ] {
        s.push(args![&x, size]);
    }
    s.push(args![&f64s(&[]), &[] as &[i64]]);
    s.push(args![&f64s(&[]), &[3i64, 2][..]]);
    s.push(args![&f64s(&[1]), &[0i64][..]]);
    s.push(args![&f64s(&[2, 0]), &[3i64, 2, 0][..]]);
    s.push(args![&f32s(&[1, 2]), &[2i64, -1][..]]);
    s.push(args![&i64s(&[1], 4), &[5i64][..]]);
    s.push(args![&bools(&[2, 1]), &[2i64, 3][..]]);
    s
}

fn expand_errors() -> Vec<Sample> {
    let x = f64s(&[3, 1]);
    vec![
        args![&x, &[4i64, 4][..]],
        args![&x, &[1i64, 1][..]],
        args![&x, &[4i64][..]],
        args![&x, &[-1i64, 3, 1][..]],
        args![&x, &[3i64, -2][..]],
        args![&f64s(&[2, 0]), &[2i64, 1][..]],
    ]
}

batchrules::op_samples!(
    op = "expand",
    samples = expand_samples,
    errors = expand_errors
);

fn flatten_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3, 4]);
    let mut s: Vec<_> = [(0i64, -1i64), (1, 2), (0, 0), (-2, -1), (0, 1)]
        .into_iter()
        .map(|(a, b)| args![&x, a, b])
        .collect();
    s.push(args![&f64s(&[]), 0i64, -1i64]);
    s.push(args![&f64s(&[]), -1i64, 0i64]);
    s.push(args![&f64s(&[2, 0, 3]), 0i64, 1i64]);
    s.push(args![&f32s(&[1, 3]), 0i64, -1i64]);
    s.push(args![&i64s(&[2, 2], 5), 0i64, 1i64]);
    s.push(args![&bools(&[3]), 0i64, 0i64]);
    s
}

fn flatten_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 1i64, 0i64],
        args![&f64s(&[2, 3]), 0i64, 2i64],
        args![&f64s(&[2, 3]), -3i64, 1i64],
        args![&f64s(&[]), 1i64, 0i64],
    ]
}

batchrules::op_samples!(
    op = "flatten",
    samples = flatten_samples,
    errors = flatten_errors
);
