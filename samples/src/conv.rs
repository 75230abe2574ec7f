//! Sample and error inputs of the ops of `runtime/src/library/conv.rs`.

use batchrules::args;
use batchrules::rules::Arg;
use batchrules::testing::Sample;
use batchrules::Tensor;

use crate::values::*;

// Samples for the sweeps: few and tiny.

/// The four window arguments of a sample.
fn win(k: &[i64], d: &[i64], p: &[i64], s: &[i64]) -> [Arg<Tensor>; 4] {
    [k, d, p, s].map(|v| Arg::IntList(v.to_vec()))
}

/// `head` followed by `tail`.
fn with(mut head: Sample, tail: impl IntoIterator<Item = Arg<Tensor>>) -> Sample {
    head.extend(tail);
    head
}

fn unfold_samples() -> Vec<Sample> {
    vec![
        with(args![&f64s(&[1, 2, 3, 3])], win(&[2], &[1], &[0], &[1])),
        // Unbatched; dilation, padding and stride per dim.
        with(
            args![&f64s(&[2, 4, 3])],
            win(&[2, 1], &[2, 1], &[1, 0], &[2, 1]),
        ),
        with(args![&f32s(&[2, 1, 2, 3])], win(&[1, 2], &[1], &[1], &[2])),
    ]
}

fn unfold_errors() -> Vec<Sample> {
    let x = f64s(&[1, 1, 3, 3]);
    vec![
        with(args![&i64s(&[1, 1, 3, 3], 5)], win(&[2], &[1], &[0], &[1])),
        with(args![&f64s(&[3, 3])], win(&[2], &[1], &[0], &[1])),
        with(args![&x], win(&[0], &[1], &[0], &[1])),
        with(args![&x], win(&[2], &[0], &[0], &[1])),
        with(args![&x], win(&[2], &[1], &[-1], &[1])),
        with(args![&x], win(&[2], &[1], &[0], &[0])),
        with(args![&x], win(&[4], &[1], &[0], &[1])),
        with(args![&x], win(&[2, 2, 2], &[1], &[0], &[1])),
        with(args![&x], win(&[2], &[i64::MAX], &[i64::MAX], &[1])),
    ]
}

fn fold_samples() -> Vec<Sample> {
    vec![
        with(
            args![&f64s(&[1, 4, 4]), &[3i64, 3][..]],
            win(&[2], &[1], &[0], &[1]),
        ),
        // Unbatched, two channels, padding and stride (overlaps and drops).
        with(
            args![&f64s(&[4, 8]), &[3i64, 4][..]],
            win(&[2, 1], &[1], &[1, 0], &[2, 1]),
        ),
        with(
            args![&f32s(&[2, 4, 9]), &[5i64][..]],
            win(&[2], &[2], &[1], &[2]),
        ),
    ]
}

fn fold_errors() -> Vec<Sample> {
    let x = f64s(&[1, 4, 4]);
    vec![
        with(
            args![&i64s(&[1, 4, 4], 5), &[3i64][..]],
            win(&[2], &[1], &[0], &[1]),
        ),
        // The wrong number of blocks, a row count not a multiple of kh * kw, a rank.
        with(args![&x, &[4i64][..]], win(&[2], &[1], &[0], &[1])),
        with(
            args![&f64s(&[1, 5, 4]), &[3i64][..]],
            win(&[2], &[1], &[0], &[1]),
        ),
        with(
            args![&f64s(&[1, 1, 4, 4]), &[3i64][..]],
            win(&[2], &[1], &[0], &[1]),
        ),
        with(args![&x, &[-3i64][..]], win(&[2], &[1], &[0], &[1])),
        with(args![&x, &[3i64, 3, 3][..]], win(&[2], &[1], &[0], &[1])),
    ]
}

/// A convolution sample: input, weight, bias, then stride, padding,
/// dilation and groups.
fn conv(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    (s, p, d): (&[i64], &[i64], &[i64]),
    groups: i64,
) -> Sample {
    args![x, w, b, s, p, d, groups]
}

fn conv2d_samples() -> Vec<Sample> {
    vec![
        conv(
            &f64s(&[2, 2, 3, 3]),
            &f64s_from(&[2, 2, 2, 2], 50),
            Some(&f64s_from(&[2], 90)),
            (&[1], &[0], &[1]),
            1,
        ),
        // Unbatched, two groups, stride, padding and dilation per dim.
        conv(
            &f64s(&[4, 3, 4]),
            &f64s_from(&[2, 2, 2, 2], 50),
            None,
            (&[2, 1], &[1], &[1, 2]),
            2,
        ),
        conv(
            &f32s(&[1, 2, 3, 3]),
            &f32s(&[3, 2, 2, 1]),
            Some(&f32s(&[3])),
            (&[1], &[1, 0], &[1]),
            1,
        ),
    ]
}

fn conv2d_errors() -> Vec<Sample> {
    let x = f64s(&[1, 2, 3, 3]);
    let w = f64s(&[2, 2, 2, 2]);
    let one: (&[i64], &[i64], &[i64]) = (&[1], &[0], &[1]);
    vec![
        conv(&i64s(&[1, 2, 3, 3], 5), &w, None, one, 1),
        conv(&x, &f32s(&[2, 2, 2, 2]), None, one, 1),
        conv(&x, &w, Some(&f64s(&[3])), one, 1),
        conv(&x, &f64s(&[2, 2, 2]), None, one, 1),
        conv(&f64s(&[3, 3]), &w, None, one, 1),
        // Groups: not dividing the channels, zero.
        conv(&x, &w, None, one, 2),
        conv(&x, &f64s(&[3, 1, 2, 2]), None, one, 2),
        conv(&x, &w, None, one, 0),
        // A window larger than the input, a bad stride.
        conv(&x, &f64s(&[2, 2, 4, 4]), None, one, 1),
        conv(&x, &w, None, (&[0], &[0], &[1]), 1),
    ]
}

fn conv1d_samples() -> Vec<Sample> {
    vec![
        conv(
            &f64s(&[2, 2, 5]),
            &f64s_from(&[3, 2, 2], 50),
            Some(&f64s_from(&[3], 90)),
            (&[2], &[1], &[1]),
            1,
        ),
        // Unbatched, two groups, dilation.
        conv(
            &f64s(&[2, 5]),
            &f64s_from(&[2, 1, 2], 50),
            None,
            (&[1], &[0], &[2]),
            2,
        ),
        conv(
            &f32s(&[1, 1, 4]),
            &f32s(&[2, 1, 3]),
            None,
            (&[1], &[1], &[1]),
            1,
        ),
    ]
}

fn conv1d_errors() -> Vec<Sample> {
    let x = f64s(&[1, 2, 5]);
    let w = f64s(&[2, 2, 2]);
    let one: (&[i64], &[i64], &[i64]) = (&[1], &[0], &[1]);
    vec![
        conv(&i64s(&[1, 2, 5], 5), &w, None, one, 1),
        conv(&x, &f64s(&[2, 2, 2, 2]), None, one, 1),
        conv(&x, &w, None, (&[1, 1], &[0], &[1]), 1),
        conv(&x, &w, None, (&[1], &[-1], &[1]), 1),
        conv(&x, &f64s(&[2, 2, 6]), None, one, 1),
    ]
}

/// A sample of `conv2d_tiled`: input, weight, then stride, padding,
/// dilation and groups.
fn tiled(x: &Tensor, w: &Tensor, (s, p, d): (&[i64], &[i64], &[i64]), groups: i64) -> Sample {
    args![x, w, s, p, d, groups]
}

fn conv2d_tiled_samples() -> Vec<Sample> {
    vec![
        tiled(
            &f64s(&[2, 2, 3, 3]),
            &f64s_from(&[2, 2, 2, 2], 50),
            (&[1], &[0], &[1]),
            1,
        ),
        // Two groups, stride, padding and dilation per dim.
        tiled(
            &f64s(&[1, 4, 3, 4]),
            &f64s_from(&[2, 2, 2, 2], 50),
            (&[2, 1], &[1], &[1, 2]),
            2,
        ),
        tiled(
            &f32s(&[1, 2, 3, 3]),
            &f32s(&[3, 2, 2, 1]),
            (&[1], &[1, 0], &[1]),
            1,
        ),
    ]
}

fn conv2d_tiled_errors() -> Vec<Sample> {
    let w = f64s(&[2, 2, 2, 2]);
    let one: (&[i64], &[i64], &[i64]) = (&[1], &[0], &[1]);
    vec![
        // Unbatched, mixed dtypes, groups not dividing, a window too large.
        tiled(&f64s(&[2, 3, 3]), &w, one, 1),
        tiled(&f64s(&[1, 2, 3, 3]), &f32s(&[2, 2, 2, 2]), one, 1),
        tiled(&f64s(&[1, 2, 3, 3]), &w, one, 2),
        tiled(&f64s(&[1, 2, 3, 3]), &f64s(&[2, 2, 4, 4]), one, 1),
    ]
}

/// A sample of `conv2d_weight_grads`: input, output gradient, kernel size,
/// then stride, padding, dilation and groups.
fn weight_grads(
    x: &Tensor,
    g: &Tensor,
    k: &[i64],
    (s, p, d): (&[i64], &[i64], &[i64]),
    groups: i64,
) -> Sample {
    args![x, g, k, s, p, d, groups]
}

fn conv2d_weight_grads_samples() -> Vec<Sample> {
    vec![
        weight_grads(
            &f64s(&[2, 2, 3, 3]),
            &f64s_from(&[2, 2, 2, 2], 50),
            &[2],
            (&[1], &[0], &[1]),
            1,
        ),
        // Two groups, stride, padding and dilation per dim: a [2, 2] kernel
        // on [3, 4] with stride [2, 1], padding 1, dilation [1, 2] gives [2, 4].
        weight_grads(
            &f64s(&[1, 4, 3, 4]),
            &f64s_from(&[1, 2, 2, 4], 50),
            &[2, 2],
            (&[2, 1], &[1], &[1, 2]),
            2,
        ),
        weight_grads(
            &f32s(&[1, 2, 3, 3]),
            &f32s(&[1, 3, 4, 3]),
            &[2, 1],
            (&[1], &[1, 0], &[1]),
            1,
        ),
    ]
}

fn conv2d_weight_grads_errors() -> Vec<Sample> {
    let x = f64s(&[1, 2, 3, 3]);
    let one: (&[i64], &[i64], &[i64]) = (&[1], &[0], &[1]);
    vec![
        // The wrong output size, batch or dtype; groups not dividing; 3-d.
        weight_grads(&x, &f64s(&[1, 2, 3, 3]), &[2], one, 1),
        weight_grads(&x, &f64s(&[2, 2, 2, 2]), &[2], one, 1),
        weight_grads(&x, &f32s(&[1, 2, 2, 2]), &[2], one, 1),
        weight_grads(&x, &f64s(&[1, 3, 2, 2]), &[2], one, 2),
        weight_grads(&f64s(&[2, 3, 3]), &f64s(&[2, 2, 2]), &[2], one, 1),
    ]
}

register_samples! {
    "conv2d_tiled" => conv2d_tiled_samples, conv2d_tiled_errors;
    "conv2d_weight_grads" => conv2d_weight_grads_samples, conv2d_weight_grads_errors;
}

register_samples! {
    "unfold" => unfold_samples, unfold_errors;
    "fold" => fold_samples, fold_errors;
    "conv2d" => conv2d_samples, conv2d_errors;
    "conv1d" => conv1d_samples, conv1d_errors;
}

/// A `conv*_padding` sample: input, weight, bias, stride, the padding word,
/// dilation and groups.
fn conv_word(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    (s, p, d): (&[i64], &str, &[i64]),
    groups: i64,
) -> Sample {
    let mut a = args![x, w, b, s];
    a.push(Arg::Str(p.to_string()));
    a.extend(args![d, groups]);
    a
}

fn conv2d_padding_samples() -> Vec<Sample> {
    vec![
        // "same" with an even kernel along the height (the extra row at the
        // bottom) and an odd one along the width.
        conv_word(
            &f64s(&[1, 2, 3, 3]),
            &f64s_from(&[2, 2, 2, 3], 50),
            Some(&f64s_from(&[2], 90)),
            (&[1], "same", &[1]),
            1,
        ),
        conv_word(
            &f64s(&[2, 3, 4]),
            &f64s_from(&[2, 1, 2, 2], 50),
            None,
            (&[1, 2], "valid", &[1]),
            2,
        ),
        conv_word(
            &f32s(&[1, 1, 3, 2]),
            &f32s(&[1, 1, 2, 2]),
            None,
            (&[1], "same", &[2, 1]),
            1,
        ),
    ]
}

fn conv2d_padding_errors() -> Vec<Sample> {
    let (x, w) = (f64s(&[1, 2, 3, 3]), f64s(&[2, 2, 2, 2]));
    vec![
        conv_word(&x, &w, None, (&[1], "full", &[1]), 1),
        conv_word(&x, &w, None, (&[2], "same", &[1]), 1),
        conv_word(&x, &f64s(&[2, 2, 4, 4]), None, (&[1], "valid", &[1]), 1),
        conv_word(&i64s(&[1, 2, 3, 3], 5), &w, None, (&[1], "same", &[1]), 1),
    ]
}

fn conv1d_padding_samples() -> Vec<Sample> {
    vec![
        conv_word(
            &f64s(&[1, 2, 4]),
            &f64s_from(&[3, 2, 2], 50),
            Some(&f64s_from(&[3], 90)),
            (&[1], "same", &[1]),
            1,
        ),
        conv_word(
            &f64s(&[2, 5]),
            &f64s_from(&[2, 2, 3], 50),
            None,
            (&[2], "valid", &[1]),
            1,
        ),
        conv_word(
            &f32s(&[1, 1, 4]),
            &f32s(&[1, 1, 3]),
            None,
            (&[1], "same", &[2]),
            1,
        ),
    ]
}

fn conv1d_padding_errors() -> Vec<Sample> {
    let (x, w) = (f64s(&[1, 2, 5]), f64s(&[2, 2, 2]));
    vec![
        conv_word(&x, &w, None, (&[1], "", &[1]), 1),
        conv_word(&x, &w, None, (&[2], "same", &[1]), 1),
        conv_word(&x, &w, None, (&[1], "same", &[1, 1]), 1),
    ]
}

register_samples! {
    "conv2d_padding" => conv2d_padding_samples, conv2d_padding_errors;
    "conv1d_padding" => conv1d_padding_samples, conv1d_padding_errors;
}
