//! Sample and error inputs of the ops of `runtime/src/library/join.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::Tensor;

use crate::values::*;

fn cat_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    vec![
        args![&[x.clone(), f64s(&[1, 3])][..], 0i64],
        args![&[x.clone(), f64s(&[2, 2]), f64s(&[2, 0])][..], -1i64],
        args![&[x.clone()][..], 1i64],
        args![&[x.clone(), x.clone()][..], -2i64],
        args![&[f32s(&[2]), f64s(&[3])][..], 0i64],
        args![&[i64s(&[2, 2], 5), bools(&[1, 2])][..], 0i64],
        args![&[f64s(&[0, 3]), f64s(&[0, 3])][..], 1i64],
        args![&[f64s(&[1, 1, 2]), f64s(&[1, 2, 2])][..], 1i64],
        // 1-d empty tensors are skipped next to tensors of other shapes (their
        // dtype still counts for the promotion).
        args![&[x.clone(), f64s(&[0]), f64s(&[2, 1])][..], 1i64],
        args![&[f64s(&[0]), f32s(&[2, 3])][..], 0i64],
        args![&[f32s(&[0]), f64s(&[0])][..], -1i64],
        args![&[f64s(&[0]), f64s(&[3])][..], 0i64],
    ]
}

fn cat_errors() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    vec![
        args![&[] as &[Tensor], 0i64],
        args![&[x.clone(), f64s(&[3, 3])][..], 1i64],
        args![&[x.clone(), f64s(&[3])][..], 0i64],
        args![&[x.clone(), f64s(&[2, 3, 1])][..], 0i64],
        args![&[f64s(&[]), f64s(&[])][..], 0i64],
        args![&[x.clone(), f64s(&[0]), f64s(&[])][..], 0i64],
        args![&[x.clone(), x.clone()][..], 2i64],
        args![&[f64s(&[0]), f64s(&[0])][..], 1i64],
    ]
}

batchrules::op_samples!(op = "cat", samples = cat_samples, errors = cat_errors);

fn stack_samples() -> Vec<Sample> {
    let x = f64s(&[2, 3]);
    let mut s: Vec<_> = [0i64, 1, 2, -1, -3]
        .into_iter()
        .map(|d| args![&[x.clone(), x.clone()][..], d])
        .collect();
    s.push(args![&[f64s(&[]), f64s(&[]), f64s(&[])][..], 0i64]);
    s.push(args![&[f64s(&[])][..], -1i64]);
    s.push(args![&[f64s(&[0, 2])][..], 1i64]);
    s.push(args![&[f32s(&[2]), f64s(&[2])][..], 0i64]);
    s.push(args![&[i64s(&[3], 5), bools(&[3])][..], -1i64]);
    s
}

fn stack_errors() -> Vec<Sample> {
    vec![
        args![&[] as &[Tensor], 0i64],
        args![&[f64s(&[2, 3]), f64s(&[3, 2])][..], 0i64],
        args![&[f64s(&[2]), f64s(&[2, 1])][..], 0i64],
        args![&[f64s(&[2]), f64s(&[2])][..], 2i64],
        args![&[f64s(&[2]), f64s(&[2])][..], -3i64],
    ]
}

batchrules::op_samples!(op = "stack", samples = stack_samples, errors = stack_errors);
