//! Sample and error inputs of the ops of `runtime/src/library/indexing.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

fn index_select_samples() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        args![&x, 0i64, &i64s(&[5], 3)],
        args![&x, -1i64, &i64s(&[2], 4)],
        args![&x, 1i64, &i64s(&[0], 4)],
        args![&x, 0i64, &i64s(&[], 3)],
        args![&f32s(&[2, 3, 2]), 1i64, &i64s(&[4], 3)],
        args![&f64s(&[1, 3]), 0i64, &i64s(&[3], 1)],
        args![&f64s(&[0, 3]), 1i64, &i64s(&[2], 3)],
        args![&f64s(&[]), 0i64, &i64s(&[1], 1)],
        args![&f64s(&[]), -1i64, &i64s(&[], 1)],
        args![&i64s(&[4], 9), 0i64, &i64s(&[3], 4)],
        args![&bools(&[2, 3]), 1i64, &i64s(&[4], 3)],
    ]
}

fn index_select_errors() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        args![&x, 2i64, &i64s(&[2], 3)],
        args![&x, -3i64, &i64s(&[2], 3)],
        // Index values 3, 0, 7: out of range for a dim of size 3.
        args![&x, 0i64, &i64s(&[3], 10)],
        // A 0-d index holding 3.
        args![&x, 0i64, &i64s(&[], 7)],
        args![&f64s(&[0, 3]), 0i64, &i64s(&[1], 1)],
        args![&f64s(&[]), 0i64, &i64s(&[], 5)],
        args![&x, 0i64, &f64s(&[2])],
        args![&x, 0i64, &bools(&[2])],
        args![&x, 0i64, &i64s(&[2, 2], 3)],
        args![&f64s(&[]), 0i64, &i64s(&[2], 1)],
    ]
}

batchrules::op_samples!(
    op = "index_select",
    samples = index_select_samples,
    errors = index_select_errors
);

fn gather_samples() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        args![&x, 0i64, &i64s(&[2, 4], 3)],
        args![&x, 1i64, &i64s(&[3, 2], 4)],
        args![&x, -1i64, &i64s(&[2, 6], 4)],
        args![&x, 0i64, &i64s(&[5, 1], 3)],
        args![&x, 1i64, &i64s(&[2, 0], 4)],
        args![&f64s(&[]), 0i64, &i64s(&[], 1)],
        args![&f64s(&[]), -1i64, &i64s(&[3], 1)],
        args![&f64s(&[3]), 0i64, &i64s(&[], 3)],
        args![&f32s(&[4]), 0i64, &i64s(&[1], 4)],
        args![&i64s(&[2, 3], 5), 1i64, &i64s(&[1, 3], 3)],
        args![&bools(&[2, 2, 3]), 2i64, &i64s(&[1, 2, 5], 3)],
        args![&f64s(&[0, 3]), 1i64, &i64s(&[0, 2], 3)],
    ]
}

fn gather_errors() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        args![&x, 0i64, &i64s(&[4], 3)],
        args![&x, 0i64, &i64s(&[2, 5], 3)],
        args![&x, 1i64, &i64s(&[4, 2], 4)],
        // Index values up to 8: out of range for a dim of size 4.
        args![&x, 1i64, &i64s(&[3, 4], 9)],
        args![&f64s(&[]), 0i64, &i64s(&[], 5)],
        args![&x, 0i64, &f64s(&[2, 4])],
        args![&x, 2i64, &i64s(&[3, 4], 3)],
        args![&x, -3i64, &i64s(&[3, 4], 3)],
        args![&f64s(&[3]), 0i64, &i64s(&[1, 1], 3)],
    ]
}

batchrules::op_samples!(
    op = "gather",
    samples = gather_samples,
    errors = gather_errors
);

fn index_add_samples() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        // Index values 0, 1, 2, 0, 1: repeated positions accumulate.
        args![&x, 0i64, &i64s(&[5], 3), &f64s(&[5, 4])],
        args![&x, -1i64, &i64s(&[2], 4), &f64s(&[3, 2])],
        args![&x, 1i64, &i64s(&[0], 4), &f64s(&[3, 0])],
        args![&x, 0i64, &i64s(&[], 3), &f64s(&[1, 4])],
        args![&f32s(&[2, 3, 2]), 1i64, &i64s(&[4], 3), &f32s(&[2, 4, 2])],
        args![&f64s(&[0, 3]), 1i64, &i64s(&[2], 3), &f64s(&[0, 2])],
        args![&f64s(&[]), 0i64, &i64s(&[1], 1), &f64s(&[])],
        args![&f64s(&[]), -1i64, &i64s(&[], 1), &f64s(&[])],
        args![&i64s(&[4], 9), 0i64, &i64s(&[3], 4), &i64s(&[3], 5)],
    ]
}

fn index_add_errors() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        args![&x, 2i64, &i64s(&[2], 3), &f64s(&[3, 2])],
        // Index values 3, 0, 7: out of range for a dim of size 3.
        args![&x, 0i64, &i64s(&[3], 10), &f64s(&[3, 4])],
        args![&x, 0i64, &f64s(&[2]), &f64s(&[2, 4])],
        args![&x, 0i64, &i64s(&[2, 1], 3), &f64s(&[2, 4])],
        args![&x, 0i64, &i64s(&[2], 3), &f64s(&[3, 4])],
        args![&x, 0i64, &i64s(&[2], 3), &f64s(&[2])],
        args![&x, 0i64, &i64s(&[2], 3), &f32s(&[2, 4])],
        args![&bools(&[3]), 0i64, &i64s(&[2], 3), &bools(&[2])],
        args![&f64s(&[]), 0i64, &i64s(&[2], 1), &f64s(&[])],
    ]
}

batchrules::op_samples!(
    op = "index_add",
    samples = index_add_samples,
    errors = index_add_errors
);

fn scatter_add_samples() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        args![&x, 0i64, &i64s(&[2, 4], 3), &f64s(&[2, 4])],
        // src larger than the index: only the index's extent is read.
        args![&x, 1i64, &i64s(&[3, 2], 4), &f64s(&[3, 3])],
        args![&x, -1i64, &i64s(&[2, 6], 4), &f64s(&[2, 6])],
        args![&x, 0i64, &i64s(&[5, 1], 3), &f64s(&[5, 2])],
        args![&x, 1i64, &i64s(&[2, 0], 4), &f64s(&[2, 0])],
        args![&f64s(&[]), 0i64, &i64s(&[], 1), &f64s(&[])],
        args![&f64s(&[]), -1i64, &i64s(&[3], 1), &f64s(&[3])],
        args![&f64s(&[3]), 0i64, &i64s(&[], 3), &f64s(&[])],
        args![&f32s(&[4]), 0i64, &i64s(&[1], 4), &f32s(&[2])],
        args![
            &i64s(&[2, 3], 5),
            1i64,
            &i64s(&[1, 3], 3),
            &i64s(&[2, 3], 7)
        ],
        args![&f64s(&[0, 3]), 1i64, &i64s(&[0, 2], 3), &f64s(&[0, 2])],
    ]
}

fn scatter_add_errors() -> Vec<Sample> {
    let x = f64s(&[3, 4]);
    vec![
        args![&x, 0i64, &i64s(&[4], 3), &f64s(&[4])],
        args![&x, 0i64, &i64s(&[2, 5], 3), &f64s(&[2, 5])],
        args![&x, 1i64, &i64s(&[4, 2], 4), &f64s(&[4, 2])],
        args![&x, 0i64, &i64s(&[2, 4], 3), &f64s(&[2, 3])],
        // Index values up to 8: out of range for a dim of size 4.
        args![&x, 1i64, &i64s(&[3, 4], 9), &f64s(&[3, 4])],
        args![&x, 0i64, &f64s(&[2, 4]), &f64s(&[2, 4])],
        args![&x, 2i64, &i64s(&[3, 4], 3), &f64s(&[3, 4])],
        args![&x, 0i64, &i64s(&[2, 4], 3), &f32s(&[2, 4])],
        args![&bools(&[3]), 0i64, &i64s(&[2], 3), &bools(&[2])],
        args![&x, 0i64, &i64s(&[2, 4], 3), &f64s(&[2, 4, 1])],
    ]
}

batchrules::op_samples!(
    op = "scatter_add",
    samples = scatter_add_samples,
    errors = scatter_add_errors
);
