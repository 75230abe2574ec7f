//! Sample and error inputs of the ops of `runtime/src/library/pooling.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::Tensor;

use crate::values::*;

fn window_sum_samples() -> Vec<Sample> {
    vec![
        // Overlapping windows, an empty one, the whole dim.
        args![
            &f64s(&[2, 5]),
            &[0i64, 1, 3, 2, 0][..],
            &[2i64, 4, 5, 2, 5][..]
        ],
        args![&f32s(&[3]), &[0i64, 2][..], &[1i64, 3][..]],
        args![&f64s(&[2, 0, 3]), &[1i64][..], &[3i64][..]],
        args![&f64s(&[1, 2]), &[0i64; 0][..], &[0i64; 0][..]],
    ]
}

fn window_sum_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[]), &[0i64][..], &[0i64][..]],
        args![&i64s(&[3], 5), &[0i64][..], &[1i64][..]],
        args![&f64s(&[3]), &[0i64, 1][..], &[1i64][..]],
        args![&f64s(&[3]), &[2i64][..], &[1i64][..]],
        args![&f64s(&[3]), &[-1i64][..], &[1i64][..]],
        args![&f64s(&[3]), &[0i64][..], &[4i64][..]],
        args![&f64s(&[3]), &[0i64][..], &[i64::MAX][..]],
    ]
}

fn window_sum_backward_samples() -> Vec<Sample> {
    vec![
        args![
            &f64s(&[2, 5]),
            &[0i64, 1, 3, 2, 0][..],
            &[2i64, 4, 5, 2, 5][..],
            5i64
        ],
        args![&f32s(&[2]), &[0i64, 2][..], &[1i64, 3][..], 4i64],
        args![&f64s(&[2, 0, 1]), &[1i64][..], &[3i64][..], 3i64],
        args![&f64s(&[1, 0]), &[0i64; 0][..], &[0i64; 0][..], 2i64],
    ]
}

fn window_sum_backward_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[]), &[0i64][..], &[0i64][..], 1i64],
        args![&f64s(&[2]), &[0i64][..], &[1i64][..], 1i64],
        args![&f64s(&[1]), &[0i64][..], &[2i64][..], 1i64],
        args![&f64s(&[1]), &[0i64][..], &[1i64][..], -1i64],
        args![&i64s(&[1], 5), &[0i64][..], &[1i64][..], 1i64],
    ]
}

// ---------------------------------------------------------------------------
// Samples for the sweeps: few and small (the sweeps run each through every
// transform). The sample values are distinct (no ties, where the max has no
// derivative); the tie rules are pinned by tests/suite/pooling.rs against
// PyTorch.

/// A max pooling sample: `x`, kernel, stride, padding, dilation, ceil_mode.
fn max_args(x: Tensor, k: &[i64], s: Option<&[i64]>, p: &[i64], d: &[i64], ceil: bool) -> Sample {
    args![&x, k, s, p, d, ceil]
}

fn max_pool2d_samples() -> Vec<Sample> {
    vec![
        // Overlapping windows, batched.
        max_args(f64s(&[1, 2, 3, 3]), &[2], Some(&[1]), &[0], &[1], false),
        // Unbatched; padding, a 2x3 kernel, ceil_mode (a last, partial window).
        max_args(f64s(&[2, 3, 4]), &[2, 3], Some(&[2, 1]), &[1], &[1], true),
        // Dilation, in f32.
        max_args(f32s(&[1, 1, 3, 4]), &[2], Some(&[]), &[1], &[2], false),
        // An empty batch.
        max_args(f64s(&[0, 1, 2, 2]), &[2], None, &[0], &[1], false),
    ]
}

fn max_pool2d_errors() -> Vec<Sample> {
    let x = || f64s(&[1, 1, 3, 3]);
    vec![
        max_args(i64s(&[1, 2, 2], 5), &[2], None, &[0], &[1], false),
        max_args(f64s(&[3, 3]), &[2], None, &[0], &[1], false),
        max_args(f64s(&[1, 0, 3, 3]), &[2], None, &[0], &[1], false),
        max_args(x(), &[0], None, &[0], &[1], false),
        max_args(x(), &[2, 2, 2], None, &[0], &[1], false),
        max_args(x(), &[2], Some(&[-1]), &[0], &[1], false),
        max_args(x(), &[2], None, &[2], &[1], false),
        max_args(x(), &[2], None, &[-1], &[1], false),
        max_args(x(), &[2], None, &[0], &[0], false),
        max_args(x(), &[4], None, &[0], &[1], false),
        max_args(x(), &[i64::MAX], None, &[0], &[i64::MAX], false),
    ]
}

fn max_pool1d_samples() -> Vec<Sample> {
    vec![
        max_args(f64s(&[2, 1, 5]), &[2], Some(&[1]), &[1], &[1], false),
        max_args(f64s(&[2, 5]), &[2], None, &[0], &[2], true),
        max_args(f32s(&[1, 4]), &[3], Some(&[1]), &[1], &[1], false),
    ]
}

fn max_pool1d_errors() -> Vec<Sample> {
    vec![
        max_args(f64s(&[4]), &[2], None, &[0], &[1], false),
        max_args(f64s(&[1, 4]), &[2, 2], None, &[0], &[1], false),
        max_args(f64s(&[1, 4]), &[5], None, &[0], &[1], false),
        max_args(i64s(&[1, 4], 3), &[2], None, &[0], &[1], false),
    ]
}

/// An average pooling sample: `x`, kernel, stride, padding, ceil_mode,
/// count_include_pad, divisor_override.
fn avg_args(
    x: Tensor,
    k: &[i64],
    s: Option<&[i64]>,
    p: &[i64],
    flags: (bool, bool),
    divisor: Option<i64>,
) -> Sample {
    args![&x, k, s, p, flags.0, flags.1, divisor]
}

fn avg_pool2d_samples() -> Vec<Sample> {
    vec![
        avg_args(
            f64s(&[1, 2, 3, 3]),
            &[2],
            Some(&[1]),
            &[0],
            (false, true),
            None,
        ),
        // Padding not counted, ceil_mode, unbatched.
        avg_args(
            f64s(&[1, 3, 4]),
            &[3, 2],
            Some(&[2]),
            &[1],
            (true, false),
            None,
        ),
        avg_args(f32s(&[1, 1, 3, 3]), &[2], None, &[1], (true, true), Some(3)),
        avg_args(f64s(&[0, 1, 2, 2]), &[2], None, &[0], (false, true), None),
    ]
}

fn avg_pool2d_errors() -> Vec<Sample> {
    let x = || f64s(&[1, 1, 3, 3]);
    vec![
        avg_args(i64s(&[1, 2, 2], 5), &[2], None, &[0], (false, true), None),
        avg_args(
            f64s(&[1, 1, 1, 3, 3]),
            &[2],
            None,
            &[0],
            (false, true),
            None,
        ),
        avg_args(x(), &[2], None, &[0], (false, true), Some(0)),
        avg_args(x(), &[2], None, &[2], (false, true), None),
        avg_args(x(), &[-2], None, &[0], (false, true), None),
        avg_args(x(), &[4], None, &[0], (false, true), None),
    ]
}

/// An `avg_pool1d` sample: `x`, kernel, stride, padding, ceil_mode,
/// count_include_pad.
fn avg1_args(x: Tensor, k: &[i64], s: Option<&[i64]>, p: &[i64], flags: (bool, bool)) -> Sample {
    args![&x, k, s, p, flags.0, flags.1]
}

/// An adaptive pooling sample: `x`, output_size.
fn adaptive_args(x: Tensor, size: &[i64]) -> Sample {
    args![&x, size]
}

fn avg_pool1d_samples() -> Vec<Sample> {
    vec![
        avg1_args(f64s(&[2, 1, 5]), &[3], Some(&[2]), &[1], (true, false)),
        avg1_args(f64s(&[2, 4]), &[2], None, &[0], (false, true)),
        avg1_args(f32s(&[1, 5]), &[2], Some(&[1]), &[1], (false, true)),
    ]
}

fn avg_pool1d_errors() -> Vec<Sample> {
    vec![
        avg1_args(f64s(&[4]), &[2], None, &[0], (false, true)),
        avg1_args(f64s(&[1, 4]), &[2, 1], None, &[0], (false, true)),
        avg1_args(f64s(&[1, 4]), &[2], Some(&[0]), &[0], (false, true)),
    ]
}

fn adaptive_avg_pool2d_samples() -> Vec<Sample> {
    vec![
        // Sizes that do not divide: overlapping windows.
        adaptive_args(f64s(&[1, 2, 3, 5]), &[2, 3]),
        adaptive_args(f64s(&[2, 3, 2]), &[2]),
        adaptive_args(f32s(&[1, 1, 2, 3]), &[3, 1]),
        adaptive_args(f64s(&[0, 1, 2, 2]), &[1]),
    ]
}

fn adaptive_avg_pool2d_errors() -> Vec<Sample> {
    vec![
        adaptive_args(i64s(&[1, 2, 2], 5), &[1]),
        adaptive_args(f64s(&[2, 2]), &[1]),
        adaptive_args(f64s(&[1, 0, 2]), &[1]),
        adaptive_args(f64s(&[1, 2, 2]), &[-1]),
        adaptive_args(f64s(&[1, 2, 2]), &[1, 1, 1]),
        adaptive_args(f64s(&[1, 2, 2]), &[i64::MAX, i64::MAX]),
    ]
}

fn adaptive_avg_pool1d_samples() -> Vec<Sample> {
    vec![
        adaptive_args(f64s(&[2, 1, 5]), &[3]),
        adaptive_args(f64s(&[2, 3]), &[4]),
        adaptive_args(f32s(&[1, 4]), &[3]),
    ]
}

fn adaptive_avg_pool1d_errors() -> Vec<Sample> {
    vec![
        adaptive_args(f64s(&[3]), &[1]),
        adaptive_args(f64s(&[1, 3]), &[1, 1]),
        adaptive_args(f64s(&[1, 3]), &[-2]),
    ]
}

register_samples! {
    "max_pool2d_with_indices" => max_pool2d_samples, max_pool2d_errors;
    "max_pool2d" => max_pool2d_samples, max_pool2d_errors;
    "max_pool1d" => max_pool1d_samples, max_pool1d_errors;
    "avg_pool2d" => avg_pool2d_samples, avg_pool2d_errors;
    "avg_pool1d" => avg_pool1d_samples, avg_pool1d_errors;
    "adaptive_avg_pool2d" => adaptive_avg_pool2d_samples, adaptive_avg_pool2d_errors;
    "adaptive_avg_pool1d" => adaptive_avg_pool1d_samples, adaptive_avg_pool1d_errors;
    "window_sum" => window_sum_samples, window_sum_errors;
    "window_sum_backward" => window_sum_backward_samples, window_sum_backward_errors;
}
