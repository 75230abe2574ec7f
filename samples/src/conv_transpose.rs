//! Sample and error inputs of the ops of `runtime/src/library/conv_transpose.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::Tensor;

use crate::values::*;

// Samples for the sweeps: few and tiny.

/// A sample: input, weight, bias, then stride, padding, output_padding,
/// groups and dilation.
fn sample(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    (s, p, op): (&[i64], &[i64], &[i64]),
    groups: i64,
    d: &[i64],
) -> Sample {
    args![x, w, b, s, p, op, groups, d]
}

fn conv_transpose2d_samples() -> Vec<Sample> {
    vec![
        // Stride 2 with output_padding 1 and padding 1, a bias.
        sample(
            &f64s(&[2, 2, 2, 3]),
            &f64s_from(&[2, 3, 2, 2], 50),
            Some(&f64s_from(&[3], 90)),
            (&[2], &[1], &[1]),
            1,
            &[1],
        ),
        // Unbatched, two groups, everything per dim.
        sample(
            &f64s(&[4, 3, 2]),
            &f64s_from(&[4, 1, 2, 3], 50),
            None,
            (&[1, 2], &[0, 1], &[0, 1]),
            2,
            &[2, 1],
        ),
        // output_padding past the stride, below the dilation.
        sample(
            &f32s(&[1, 2, 2, 2]),
            &f32s(&[2, 2, 2, 1]),
            Some(&f32s(&[2])),
            (&[1], &[1, 0], &[1]),
            1,
            &[2],
        ),
    ]
}

fn conv_transpose2d_errors() -> Vec<Sample> {
    let x = f64s(&[1, 2, 3, 3]);
    let w = f64s(&[2, 2, 2, 2]);
    let one: (&[i64], &[i64], &[i64]) = (&[1], &[0], &[0]);
    vec![
        // dtypes: integer input, mixed, a bias of another dtype.
        sample(
            &i64s(&[1, 2, 3, 3], 5),
            &i64s(&[2, 2, 2, 2], 5),
            None,
            one,
            1,
            &[1],
        ),
        sample(&x, &f32s(&[2, 2, 2, 2]), None, one, 1, &[1]),
        sample(&x, &w, Some(&f32s(&[2])), one, 1, &[1]),
        // Ranks, the bias's shape, the channels.
        sample(&x, &f64s(&[2, 2, 2]), None, one, 1, &[1]),
        sample(&f64s(&[3, 3]), &w, None, one, 1, &[1]),
        sample(&x, &w, Some(&f64s(&[3])), one, 1, &[1]),
        sample(&x, &f64s(&[3, 2, 2, 2]), None, one, 1, &[1]),
        sample(&x, &f64s(&[2, 0, 2, 2]), None, one, 1, &[1]),
        // Groups: not dividing the input channels, zero.
        sample(&x, &w, None, one, 3, &[1]),
        sample(&x, &w, None, one, 0, &[1]),
        // output_padding not below the stride or the dilation; negative.
        sample(&x, &w, None, (&[2], &[0], &[2]), 1, &[1]),
        sample(&x, &w, None, (&[1], &[0], &[-1]), 1, &[1]),
        // A bad stride, padding or dilation; padding leaving no output.
        sample(&x, &w, None, (&[0], &[0], &[0]), 1, &[1]),
        sample(&x, &w, None, (&[-1], &[0], &[0]), 1, &[1]),
        sample(&x, &w, None, (&[1], &[-1], &[0]), 1, &[1]),
        sample(&x, &w, None, (&[1], &[0], &[0]), 1, &[0]),
        sample(&x, &w, None, (&[1], &[2], &[0]), 1, &[1]),
        sample(&x, &w, None, (&[1, 1, 1], &[0], &[0]), 1, &[1]),
    ]
}

fn conv_transpose1d_samples() -> Vec<Sample> {
    vec![
        sample(
            &f64s(&[2, 2, 3]),
            &f64s_from(&[2, 3, 3], 50),
            Some(&f64s_from(&[3], 90)),
            (&[2], &[1], &[1]),
            1,
            &[1],
        ),
        // Unbatched, two groups, dilation, output_padding past the stride.
        sample(
            &f64s(&[4, 3]),
            &f64s_from(&[4, 1, 2], 50),
            None,
            (&[1], &[0], &[1]),
            2,
            &[2],
        ),
        sample(
            &f32s(&[1, 1, 3]),
            &f32s(&[1, 2, 2]),
            None,
            (&[3], &[2], &[2]),
            1,
            &[1],
        ),
    ]
}

fn conv_transpose1d_errors() -> Vec<Sample> {
    let x = f64s(&[1, 2, 4]);
    let w = f64s(&[2, 2, 2]);
    let one: (&[i64], &[i64], &[i64]) = (&[1], &[0], &[0]);
    vec![
        sample(
            &i64s(&[1, 2, 4], 5),
            &i64s(&[2, 2, 2], 5),
            None,
            one,
            1,
            &[1],
        ),
        sample(&x, &f64s(&[2, 2, 2, 2]), None, one, 1, &[1]),
        sample(&x, &w, None, (&[1, 1], &[0], &[0]), 1, &[1]),
        sample(&x, &w, None, (&[2], &[0], &[2]), 1, &[1]),
        sample(&x, &w, None, (&[1], &[3], &[0]), 1, &[1]),
        sample(&x, &f64s(&[4, 1, 2]), None, one, 2, &[1]),
        sample(&x, &w, None, one, 4, &[1]),
    ]
}

register_samples! {
    "conv_transpose2d" => conv_transpose2d_samples, conv_transpose2d_errors;
    "conv_transpose1d" => conv_transpose1d_samples, conv_transpose1d_errors;
}
