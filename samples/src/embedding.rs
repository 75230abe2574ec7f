//! Sample and error inputs of the ops of `runtime/src/library/embedding.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

fn embedding_samples() -> Vec<Sample> {
    // Indices 3, 0, 2, 0, 2, 1 (each row at least once, some twice).
    let idx = i64s(&[2, 3], 4);
    // With a padding_idx, the indices avoid the padding row: its gradient is
    // 0 by design, which the sweeps' finite differences would not give (the
    // suite checks it against PyTorch, and under vmap(grad)).
    vec![
        args![&idx, &f64s(&[4, 2]), None::<i64>],
        args![
            &i64v(&[2, 3], &[0, 2, 2, 3, 0, 3]),
            &f64s(&[4, 2]),
            Some(-3i64)
        ],
        args![&i64v(&[], &[2]), &f32s(&[3, 2]), Some(1i64)],
        args![&i64s(&[0], 3), &f64s(&[3, 2]), Some(0i64)],
    ]
}

fn embedding_errors() -> Vec<Sample> {
    vec![
        // Indices out of range (up to 3 for 3 rows), and negative.
        args![&i64s(&[4], 4), &f64s(&[3, 2]), None::<i64>],
        args![&i64v(&[2], &[0, -1]), &f64s(&[3, 2]), None::<i64>],
        args![&i64s(&[2], 3), &f64s(&[3, 2]), Some(3i64)],
        args![&i64s(&[2], 3), &f64s(&[3, 2]), Some(-4i64)],
        args![&f64s(&[2]), &f64s(&[3, 2]), None::<i64>],
        args![&i64s(&[2], 3), &f64s(&[6]), None::<i64>],
    ]
}

batchrules::op_samples!(
    op = "embedding",
    samples = embedding_samples,
    errors = embedding_errors
);
