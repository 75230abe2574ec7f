//! Sample and error inputs of the ops of `runtime/src/library/reduce.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::Tensor;

use crate::values::*;

/// Rows of edge values (infinities, NaN) for the float reductions.
fn infinite_rows() -> Tensor {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    f64v(
        &[4, 3],
        &[
            -inf, -inf, -inf, //
            inf, 1.0, -inf, //
            2.0, nan, inf, //
            1.0, -0.0, 0.0,
        ],
    )
}

/// i64 values near the limits: sums wrap, extremes and indices are exact.
fn big_ints() -> Tensor {
    i64v(
        &[2, 3],
        &[i64::MAX, 1, (1 << 53) + 1, i64::MIN, -1, 1 << 53],
    )
}

fn cumsum_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 4]), 1i64],
        args![&f64s(&[2, 3]), -2i64],
        args![&f64s(&[]), 0i64],
        args![&f32s(&[4]), -1i64],
        args![&i64s(&[2, 3], 5), 1i64],
        args![&bools(&[4]), 0i64],
    ]
}

fn cumsum_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), 1i64],
        args![&f64s(&[2, 3]), -3i64],
        args![&f64s(&[]), 1i64],
    ]
}

fn vector_norm_samples() -> Vec<Sample> {
    let all = None::<&[i64]>;
    vec![
        args![&f64s(&[3, 4]), 2.0, all, false],
        args![&f64s(&[2, 2, 3]), 3.0, Some(&[0i64, 2][..]), true],
        args![&f64s(&[2, 3]), f64::INFINITY, Some(&[1i64][..]), false],
        args![&f32s(&[4]), 1.0, all, false],
        args![&f64s(&[3, 2]), 0.5, Some(&[-2i64][..]), false],
        args![&f64s(&[]), f64::NEG_INFINITY, all, true],
    ]
}

fn vector_norm_errors() -> Vec<Sample> {
    let all = None::<&[i64]>;
    vec![
        args![&i64s(&[3], 4), 2.0, all, false],
        args![&f64s(&[3]), f64::NAN, all, false],
        args![&f64s(&[2, 3]), 2.0, Some(&[1i64, -1][..]), false],
        args![&f64s(&[2, 3]), 2.0, Some(&[2i64][..]), false],
        args![&f64s(&[2, 0]), f64::INFINITY, Some(&[1i64][..]), false],
    ]
}

register_samples! {
    "sum" => sum_samples, reduce_errors;
    "amax" => extreme_samples, amax_errors;
    "amin" => extreme_samples, amax_errors;
    "mean" => mean_samples, mean_errors;
    "argmax" => argmax_samples, amax_errors;
    "cumsum" => cumsum_samples, cumsum_errors;
    "vector_norm" => vector_norm_samples, vector_norm_errors;
}

// ---------------------------------------------------------------------------
// Sample and error inputs

/// Every dim (negative too), keepdim both ways, all dims, 0-d, size-0 dims.
fn reduce_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    let mut s = Vec::new();
    for dim in [None, Some(0i64), Some(1), Some(-1)] {
        for keepdim in [false, true] {
            s.push(args![&x, dim, keepdim]);
        }
    }
    s.push(args![&f64s(&[]), None::<i64>, false]);
    s.push(args![&f64s(&[]), Some(0i64), true]);
    s.push(args![&i64s(&[4], 7), Some(0i64), false]);
    s.push(args![&f32s(&[2, 1, 3]), Some(1i64), false]);
    s
}

fn reduce_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), Some(2i64), false],
        args![&f64s(&[2, 3]), Some(-3i64), true],
    ]
}

/// Edge values over every dim.
fn edge_samples(floats: bool) -> Vec<Sample> {
    let mut s = Vec::new();
    for dim in [None, Some(0i64), Some(-1)] {
        s.push(args![&infinite_rows(), dim, false]);
        if !floats {
            s.push(args![&big_ints(), dim, true]);
        }
    }
    s
}

fn sum_samples() -> Vec<Sample> {
    let mut s = reduce_samples();
    s.extend(edge_samples(false));
    s.push(args![&bools(&[3, 2]), Some(1i64), false]);
    s.push(args![&f64s(&[2, 0]), Some(1i64), false]);
    s.push(args![&f64s(&[0]), None::<i64>, false]);
    s
}

fn amax_errors() -> Vec<Sample> {
    let mut s = reduce_errors();
    s.push(args![&f64s(&[2, 0]), Some(1i64), false]);
    s.push(args![&f64s(&[0]), None::<i64>, false]);
    s
}

fn mean_samples() -> Vec<Sample> {
    let mut s: Vec<_> = reduce_samples()
        .into_iter()
        .filter(|a| a[0].tensors().iter().all(|t| t.dtype().is_float()))
        .collect();
    s.push(args![&f64s(&[2, 0]), Some(1i64), false]);
    s.push(args![&f64s(&[0]), None::<i64>, true]);
    s.extend(edge_samples(true));
    s
}

fn mean_errors() -> Vec<Sample> {
    let mut s = reduce_errors();
    s.push(args![&i64s(&[3], 4), None::<i64>, false]);
    s
}

fn extreme_samples() -> Vec<Sample> {
    let mut s = reduce_samples();
    s.extend(edge_samples(false));
    s
}

fn argmax_samples() -> Vec<Sample> {
    let mut s = extreme_samples();
    s.push(args![&bools(&[2, 3]), None::<i64>, true]);
    s.push(args![&i64s(&[3, 2], 2), Some(0i64), false]);
    s
}

fn sum_to_size_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    let mut s = Vec::new();
    for size in [&[2i64, 3][..], &[3], &[1, 3], &[2, 1], &[1, 1], &[1], &[]] {
        s.push(args![&x, size]);
    }
    s.push(args![&f64s(&[3, 1, 2]), &[1i64, 2][..]]);
    s.push(args![&f64s(&[4, 2, 3]), &[2i64, 1][..]]);
    s.push(args![&f64s(&[]), &[] as &[i64]]);
    s.push(args![&f64s(&[2, 0]), &[1i64][..]]);
    s.push(args![&f64s(&[2, 0]), &[0i64][..]]);
    s.push(args![&f32s(&[3, 2]), &[2i64][..]]);
    s.push(args![&big_ints(), &[1i64, 3][..]]);
    s.push(args![&bools(&[3, 2]), &[1i64, 2][..]]);
    s.push(args![&infinite_rows(), &[3i64][..]]);
    s
}

fn sum_to_size_errors() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    vec![
        args![&x, &[1i64, 2, 3][..]],
        args![&x, &[2i64][..]],
        args![&x, &[3i64, 3][..]],
        args![&x, &[0i64, 3][..]],
        args![&x, &[-1i64][..]],
        args![&x, &[2i64, -1][..]],
        args![&f64s(&[]), &[1i64][..]],
    ]
}

batchrules::op_samples!(
    op = "sum_to_size",
    samples = sum_to_size_samples,
    errors = sum_to_size_errors
);

fn log_softmax_samples() -> Vec<Sample> {
    let columns = f64s(&[4, 3]).permuted(&[1, 0]);
    let mut s = vec![
        args![&f64s(&[3, 4]), 1i64],
        args![&f64s(&[3, 4]), 0i64],
        args![&f64s(&[3, 4]), -1i64],
        args![&f32s(&[2, 3, 5]), 1i64],
        args![&f32s(&[4]), 0i64],
        args![&f64s(&[]), 0i64],
        args![&f64s(&[]), -1i64],
        // Empty dims: an empty result (PyTorch), and a non-empty dim of
        // an empty tensor.
        args![&f64s(&[2, 0]), 1i64],
        args![&f64s(&[0]), 0i64],
        args![&f64s(&[0, 3]), 1i64],
        args![&infinite_rows(), -1i64],
        args![&infinite_rows(), 0i64],
    ];
    // A transposed (not contiguous) input, over either dim.
    if let Ok(c) = columns {
        s.push(args![&c, 1i64]);
        s.push(args![&c, 0i64]);
    }
    s
}

fn log_softmax_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 4]), 2i64],
        args![&f64s(&[3, 4]), -3i64],
        args![&f64s(&[]), 1i64],
        args![&i64s(&[3], 5), 0i64],
        args![&bools(&[2, 2]), 1i64],
    ]
}

batchrules::op_samples!(
    op = "log_softmax",
    samples = log_softmax_samples,
    errors = log_softmax_errors
);
