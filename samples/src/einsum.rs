//! Sample and error inputs of `einsum` (`runtime/src/library/einsum.rs`).

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

fn einsum_samples() -> Vec<Sample> {
    vec![
        args!["ij,jk->ik", &[f64s(&[2, 3]), f64s_from(&[3, 2], 9)][..]],
        args![
            "bij,bjk->bik",
            &[f64s(&[2, 1, 3]), f64s_from(&[2, 3, 2], 5)][..]
        ],
        // Implicit output, three operands, a size-1 dim broadcast.
        args![
            "ij,jk,kl",
            &[f64s(&[2, 2]), f64s_from(&[1, 3], 4), f64s_from(&[3, 2], 11)][..]
        ],
        // A diagonal and an ellipsis, f32.
        args!["ii...->i", &[f32s(&[2, 2, 3])][..]],
        args!["...i,...i", &[f32s(&[2, 3]), f32s(&[3])][..]],
    ]
}

fn einsum_errors() -> Vec<Sample> {
    let (a, b) = (f64s(&[2, 3]), f64s(&[3, 2]));
    vec![
        args!["ij,j1->i", &[a.clone(), f64s(&[3])][..]],
        args!["ij,jk->ik", &[a.clone()][..]],
        args!["ijk,jk->ik", &[a.clone(), b.clone()][..]],
        args!["ij,ik->jk", &[a.clone(), b.clone()][..]],
        args!["ij,jk->iz", &[a.clone(), b.clone()][..]],
        args!["i.j->ij", &[a.clone()][..]],
        args!["ij,jk->ik", &[a, i64s(&[3, 2], 4)][..]],
    ]
}

batchrules::op_samples!(
    op = "einsum",
    samples = einsum_samples,
    errors = einsum_errors
);
