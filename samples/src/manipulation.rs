//! Sample and error inputs of the ops of `runtime/src/library/manipulation.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

// Samples for the sweeps: few and tiny (each runs through every transform).

fn split_samples() -> Vec<Sample> {
    vec![
        // 5 = 2 + 2 + 1 along dim 0; 3 = 2 + 1 along dim -1.
        args![&f64s(&[5]), 2i64, 0i64],
        args![&f64s(&[2, 3]), 2i64, -1i64],
        // A split size larger than the dim: one piece.
        args![&f32s(&[2, 2]), 7i64, 0i64],
        args![&i64s(&[3], 5), 1i64, 0i64],
    ]
}

fn split_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[]), 1i64, 0i64],
        args![&f64s(&[3]), 0i64, 0i64],
        args![&f64s(&[3]), -1i64, 0i64],
        args![&f64s(&[3]), 1i64, 1i64],
    ]
}

fn split_with_sizes_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &[1i64, 0, 2][..], 1i64],
        args![&f64s(&[3]), &[3i64][..], -1i64],
        args![&f32s(&[4]), &[1i64, 3][..], 0i64],
    ]
}

fn split_with_sizes_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[]), &[1i64][..], 0i64],
        args![&f64s(&[3]), &[1i64, 1][..], 0i64],
        args![&f64s(&[3]), &[4i64, -1][..], 0i64],
        args![&f64s(&[3]), &[3i64][..], 2i64],
    ]
}

fn chunk_samples() -> Vec<Sample> {
    vec![
        // 5 in 3 chunks: 2 + 2 + 1; 4 in 3: 2 + 2 (fewer chunks than asked).
        args![&f64s(&[5]), 3i64, 0i64],
        args![&f64s(&[2, 4]), 3i64, -1i64],
        // More chunks than elements.
        args![&f32s(&[2]), 5i64, 0i64],
        args![&f64s(&[0, 2]), 2i64, 0i64],
    ]
}

fn chunk_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[]), 1i64, 0i64],
        args![&f64s(&[3]), 0i64, 0i64],
        args![&f64s(&[3]), -2i64, 0i64],
        args![&f64s(&[0]), i64::MAX, 0i64],
        args![&f64s(&[3]), 1i64, -2i64],
    ]
}

fn flip_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &[0i64, -1][..]],
        args![&f64s(&[3, 2]), &[1i64][..]],
        args![&f32s(&[3]), &[0i64; 0][..]],
        args![&f64s(&[]), &[0i64][..]],
    ]
}

fn flip_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &[0i64, -2][..]],
        args![&f64s(&[2, 3]), &[2i64][..]],
    ]
}

fn roll_samples() -> Vec<Sample> {
    vec![
        // Flattened, a negative shift.
        args![&f64s(&[2, 3]), &[-1i64][..], &[0i64; 0][..]],
        // Two dims, a shift beyond the size, one negative.
        args![&f64s(&[2, 3]), &[4i64, -1][..], &[1i64, 0][..]],
        args![&f32s(&[3]), &[1i64, 1][..], &[0i64, -1][..]],
        args![&f64s(&[]), &[2i64][..], &[0i64; 0][..]],
    ]
}

fn roll_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &[1i64, 2][..], &[0i64; 0][..]],
        args![&f64s(&[2, 3]), &[1i64][..], &[0i64, 1][..]],
        args![&f64s(&[2, 3]), &[1i64][..], &[2i64][..]],
        args![&f64s(&[]), &[1i64][..], &[0i64][..]],
    ]
}

fn repeat_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &[2i64, 1][..]],
        // More repeats than dims: a leading dim added.
        args![&f64s(&[3]), &[2i64, 2][..]],
        args![&f64s(&[]), &[3i64][..]],
        args![&f32s(&[2]), &[0i64][..]],
    ]
}

fn repeat_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &[2i64][..]],
        args![&f64s(&[2]), &[-1i64][..]],
        args![&f64s(&[2]), &[i64::MAX, i64::MAX][..]],
    ]
}

fn masked_fill_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &bools(&[2, 3]), -1.5],
        // The mask broadcasts against self, and self against the mask.
        args![&f64s(&[3]), &bools(&[2, 1]), 0.25],
        args![&f32s(&[2, 2]), &bools(&[2]), 2.0],
        args![&i64s(&[3], 5), &bools(&[3]), 7.0],
    ]
}

fn masked_fill_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &i64s(&[3], 2), 1.0],
        args![&f64s(&[3]), &bools(&[2]), 1.0],
        args![&i64s(&[3], 5), &bools(&[3]), f64::NAN],
        args![&f32s(&[3]), &bools(&[3]), 1e300],
    ]
}

fn one_hot_samples() -> Vec<Sample> {
    vec![
        args![&i64s(&[3], 4), 4i64],
        args![&i64s(&[2, 2], 3), 5i64],
        args![&i64s(&[], 2), 2i64],
    ]
}

fn one_hot_errors() -> Vec<Sample> {
    vec![
        args![&i64s(&[3], 4), -1i64],
        args![&i64s(&[3], 4), 0i64],
        args![&f64s(&[3]), 3i64],
        args![&i64s(&[3], 4), 3i64],
        args![&i64v(&[2], &[0, -1]), 3i64],
        args![&i64s(&[2], 2), i64::MAX],
    ]
}

register_samples! {
    "split" => split_samples, split_errors;
    "split_with_sizes" => split_with_sizes_samples, split_with_sizes_errors;
    "chunk" => chunk_samples, chunk_errors;
    "flip" => flip_samples, flip_errors;
    "roll" => roll_samples, roll_errors;
    "repeat" => repeat_samples, repeat_errors;
    "masked_fill" => masked_fill_samples, masked_fill_errors;
    "one_hot" => one_hot_samples, one_hot_errors;
}
