//! Sample and error inputs of the ops of `runtime/src/library/composites.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::{Reduction, Tensor};

use crate::values::*;

/// Rows of edge values: all -inf, a +inf, a NaN, mixed infinities.
fn infinite_rows() -> Tensor {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    f64v(
        &[5, 3],
        &[
            -inf, -inf, -inf, //
            inf, 1.0, -2.0, //
            nan, 1.0, 2.0, //
            inf, -inf, 0.5, //
            -inf, 3.0, -inf,
        ],
    )
}

fn linear_samples() -> Vec<Sample> {
    let b = f64s(&[3]);
    vec![
        args![&f64s(&[4]), &f64s(&[3, 4]), Some(&b)],
        args![&f64s(&[2, 4]), &f64s(&[3, 4]), None::<&Tensor>],
        args![&f32s(&[2, 1, 4]), &f32s(&[3, 4]), Some(&f32s(&[3]))],
        args![&f64s(&[0, 4]), &f64s(&[3, 4]), Some(&b)],
    ]
}

fn linear_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[5]), &f64s(&[3, 4]), None::<&Tensor>],
        args![&f64s(&[4]), &f64s(&[3, 4]), Some(&f64s(&[4]))],
        args![&f64s(&[4]), &f64s(&[4]), None::<&Tensor>],
        args![&f64s(&[]), &f64s(&[3, 4]), None::<&Tensor>],
    ]
}

fn cross_entropy_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[4, 3]), &i64s(&[4], 3), Reduction::Mean],
        args![&f64s(&[4, 3]), &i64s(&[4], 3), Reduction::None],
        args![&f32s(&[2, 5]), &i64s(&[2], 5), Reduction::Sum],
        args![&f64s(&[3]), &i64s(&[], 3), Reduction::Mean],
        // No rows: the mean is NaN, the sum 0 (PyTorch).
        args![&f64s(&[0, 3]), &i64s(&[0], 3), Reduction::Mean],
        args![&f64s(&[0, 3]), &i64s(&[0], 3), Reduction::Sum],
        args![&f64s(&[0, 3]), &i64s(&[0], 3), Reduction::None],
    ]
}

fn cross_entropy_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[4, 3]), &i64s(&[3], 3), Reduction::Mean],
        args![&f64s(&[4, 3]), &f64s(&[4]), Reduction::Mean],
        args![&f64s(&[2, 2, 3]), &i64s(&[2, 2], 3), Reduction::Mean],
        // A class index out of range is caught by gather, per example.
        args![&f64s(&[2, 3]), &i64s(&[2], 9), Reduction::Mean],
    ]
}

fn layer_norm_samples() -> Vec<Sample> {
    let w = f64s(&[4]);
    vec![
        args![&f64s(&[3, 4]), &[4i64][..], Some(&w), Some(&w), 1e-5],
        args![
            &f64s(&[2, 3, 4]),
            &[3i64, 4][..],
            None::<&Tensor>,
            None::<&Tensor>,
            1e-5
        ],
        args![
            &f32s(&[4]),
            &[4i64][..],
            Some(&f32s(&[4])),
            None::<&Tensor>,
            1e-3
        ],
        args![&f64s(&[0, 4]), &[4i64][..], Some(&w), Some(&w), 1e-5],
        args![
            &f64s(&[2, 0]),
            &[0i64][..],
            None::<&Tensor>,
            None::<&Tensor>,
            1e-5
        ],
    ]
}

fn layer_norm_errors() -> Vec<Sample> {
    vec![
        args![
            &f64s(&[3, 4]),
            &[3i64][..],
            None::<&Tensor>,
            None::<&Tensor>,
            1e-5
        ],
        args![
            &f64s(&[4]),
            &[2i64, 4][..],
            None::<&Tensor>,
            None::<&Tensor>,
            1e-5
        ],
        args![
            &f64s(&[3, 4]),
            &[4i64][..],
            Some(&f64s(&[3])),
            None::<&Tensor>,
            1e-5
        ],
        args![
            &i64s(&[4], 3),
            &[4i64][..],
            None::<&Tensor>,
            None::<&Tensor>,
            1e-5
        ],
        args![
            &f64s(&[3, 4]),
            &[i64::MIN][..],
            None::<&Tensor>,
            None::<&Tensor>,
            1e-5
        ],
        args![
            &f64s(&[3, 4]),
            &[i64::MAX, 4][..],
            None::<&Tensor>,
            None::<&Tensor>,
            1e-5
        ],
    ]
}

register_samples! {
    "linear" => linear_samples, linear_errors;
    "linear_relu" => linear_samples, linear_errors;
    "cross_entropy" => cross_entropy_samples, cross_entropy_errors;
    "layer_norm" => layer_norm_samples, layer_norm_errors;
}

fn softmax_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), -1i64],
        args![&f64s(&[2, 3]), 0i64],
        args![&f32s(&[4]), 0i64],
        args![&f64s(&[]), 0i64],
        // Empty dims: an empty result (PyTorch), and a non-empty dim of an
        // empty tensor.
        args![&f64s(&[2, 0]), 1i64],
        args![&f64s(&[0]), 0i64],
        args![&f64s(&[0, 3]), 1i64],
        args![&infinite_rows(), -1i64],
    ]
}

fn softmax_errors() -> Vec<Sample> {
    vec![args![&f64s(&[2, 3]), 2i64], args![&i64s(&[3], 4), 0i64]]
}

fn logsumexp_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), -1i64, false],
        args![&f64s(&[2, 3]), 0i64, true],
        args![&f32s(&[4]), 0i64, false],
        args![&f64s(&[]), 0i64, true],
        // An empty dim gives -inf (PyTorch: the log of an empty sum).
        args![&f64s(&[2, 0]), 1i64, false],
        args![&f64s(&[2, 0]), -1i64, true],
        args![&f64s(&[0, 3]), 1i64, false],
        args![&infinite_rows(), 1i64, false],
        args![&infinite_rows(), -1i64, true],
    ]
}

fn logsumexp_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), 2i64, false],
        args![&i64s(&[3], 4), 0i64, false],
    ]
}

fn var_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 4]), Some(1i64), 1i64, false],
        args![&f64s(&[3, 4]), Some(-2i64), 0i64, true],
        args![&f32s(&[5]), None::<i64>, 1i64, false],
        args![&f64s(&[2, 3]), None::<i64>, 0i64, true],
        // Corrections of N and beyond divide by max(0, N - correction) = 0;
        // negative ones by more than N (PyTorch).
        args![&f64s(&[3, 4]), Some(1i64), 4i64, false],
        args![&f64s(&[3, 4]), Some(1i64), 7i64, false],
        args![&f64s(&[3, 4]), Some(1i64), i64::MAX, false],
        args![&f64s(&[3, 4]), Some(0i64), i64::MIN, true],
        args![&f32s(&[5]), None::<i64>, -1i64, false],
        // Empty reductions: NaN.
        args![&f64s(&[2, 0]), Some(1i64), 1i64, false],
        args![&f64s(&[0]), None::<i64>, 0i64, false],
    ]
}

fn var_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 4]), Some(2i64), 1i64, false],
        args![&i64s(&[3], 4), None::<i64>, 1i64, false],
    ]
}

fn mse_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s(&[2, 3]), Reduction::Mean],
        args![&f64s(&[2, 3]), &f64s(&[3]), Reduction::None],
        args![&f32s(&[4]), &f32s(&[4]), Reduction::Sum],
        args![&f64s(&[]), &f64s(&[]), Reduction::Mean],
        // Empty: the mean is NaN, the sum 0 (PyTorch).
        args![&f64s(&[0]), &f64s(&[0]), Reduction::Mean],
        args![&f64s(&[2, 0]), &f64s(&[0]), Reduction::Sum],
        args![&f64s(&[0, 3]), &f64s(&[3]), Reduction::None],
    ]
}

fn mse_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2]), &f64s(&[3]), Reduction::Mean],
        args![&i64s(&[2], 3), &f64s(&[2]), Reduction::Mean],
    ]
}

register_samples! {
    "softmax" => softmax_samples, softmax_errors;
    "logsumexp" => logsumexp_samples, logsumexp_errors;
    "var" => var_samples, var_errors;
    "mse_loss" => mse_samples, mse_errors;
}
