//! Sample and error inputs of the ops of `runtime/src/library/losses.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::{ops, Reduction, Tensor};

use crate::values::*;

// Samples for the sweeps: few and tiny (each runs through every transform).

fn nll_loss_samples() -> Vec<Sample> {
    let w = ops::exp(&f64s_from(&[3], 4)).unwrap();
    // Targets 0, 2, -100 (ignored), 1.
    let t = i64v(&[4], &[0, 2, -100, 1]);
    vec![
        args![&f64s(&[4, 3]), &t, Some(&w), -100i64, Reduction::Mean],
        args![
            &f64s(&[4, 3]),
            &t,
            None::<&Tensor>,
            -100i64,
            Reduction::None
        ],
        // [N, C, d1] with ignore_index 1; f32, summed.
        args![
            &f32s(&[2, 3, 2]),
            &i64s(&[2, 2], 3),
            None::<&Tensor>,
            1i64,
            Reduction::Sum
        ],
        // One example [C] (the suite checks the NaN mean of all ignored).
        args![
            &f64s(&[3]),
            &i64v(&[], &[2]),
            Some(&w),
            -100i64,
            Reduction::Mean
        ],
    ]
}

fn nll_loss_errors() -> Vec<Sample> {
    let none = None::<&Tensor>;
    vec![
        // Out of range, negative (not ignore_index), wrong shapes and dtypes.
        args![
            &f64s(&[2, 3]),
            &i64v(&[2], &[0, 3]),
            none,
            -100i64,
            Reduction::Mean
        ],
        args![
            &f64s(&[2, 3]),
            &i64v(&[2], &[-1, 0]),
            none,
            -100i64,
            Reduction::Mean
        ],
        args![
            &f64s(&[2, 3]),
            &i64s(&[3], 3),
            none,
            -100i64,
            Reduction::Mean
        ],
        args![&f64s(&[2, 3]), &f64s(&[2]), none, -100i64, Reduction::Mean],
        args![
            &f64s(&[2, 3]),
            &i64s(&[2], 3),
            Some(&f64s(&[2])),
            -100i64,
            Reduction::Mean
        ],
        args![
            &i64s(&[2, 3], 3),
            &i64s(&[2], 3),
            none,
            -100i64,
            Reduction::Mean
        ],
    ]
}

fn bce_samples() -> Vec<Sample> {
    let none = None::<&Tensor>;
    let p = ops::sigmoid(&f64s_from(&[2, 3], 6)).unwrap();
    let pw = ops::exp(&f64s_from(&[3], 2)).unwrap();
    vec![
        args![
            &f64s(&[2, 3]),
            &p,
            Some(&f64s_from(&[3], 4)),
            Reduction::Mean,
            Some(&pw)
        ],
        args![&f64s(&[2, 3]), &p, none, Reduction::None, none],
        args![
            &f32s(&[4]),
            &ops::sigmoid(&f32s(&[4])).unwrap(),
            none,
            Reduction::Sum,
            none
        ],
    ]
}

fn bce_errors() -> Vec<Sample> {
    let none = None::<&Tensor>;
    vec![
        args![&f64s(&[2, 3]), &f64s(&[3]), none, Reduction::Mean, none],
        args![
            &f64s(&[2, 3]),
            &f64s(&[2, 3]),
            Some(&f64s(&[2])),
            Reduction::Mean,
            none
        ],
        args![
            &f64s(&[3]),
            &f64s(&[3]),
            none,
            Reduction::Mean,
            Some(&f64s(&[2, 3]))
        ],
        args![&i64s(&[3], 2), &i64s(&[3], 2), none, Reduction::Mean, none],
    ]
}

fn smooth_l1_samples() -> Vec<Sample> {
    // Differences on both sides of the thresholds 1 and 0.5 (none at them).
    vec![
        args![&f64s(&[2, 3]), &f64s_from(&[2, 3], 6), Reduction::Mean, 1.0],
        args![&f64s(&[2, 3]), &f64s_from(&[3], 7), Reduction::None, 0.5],
        args![&f32s(&[4]), &f32s(&[]), Reduction::Sum, 1.0],
        args![&f64s(&[3]), &f64s_from(&[3], 4), Reduction::Mean, 0.0],
    ]
}

fn smooth_l1_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2]), &f64s(&[3]), Reduction::Mean, 1.0],
        args![&i64s(&[2], 3), &f64s(&[2]), Reduction::Mean, 1.0],
        args![&f64s(&[2]), &f64s(&[2]), Reduction::Mean, -1.0],
        args![&f64s(&[2]), &f64s(&[2]), Reduction::Mean, f64::NAN],
    ]
}

fn huber_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s_from(&[2, 3], 6), Reduction::Mean, 1.0],
        args![&f64s(&[2, 3]), &f64s_from(&[3], 7), Reduction::None, 0.5],
        args![&f32s(&[4]), &f32s(&[]), Reduction::Sum, 2.0],
    ]
}

fn huber_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2]), &f64s(&[3]), Reduction::Mean, 1.0],
        args![&i64s(&[2], 3), &f64s(&[2]), Reduction::Mean, 1.0],
        args![&f64s(&[2]), &f64s(&[2]), Reduction::Mean, 0.0],
        args![&f64s(&[2]), &f64s(&[2]), Reduction::Mean, f64::NAN],
    ]
}

register_samples! {
    "nll_loss" => nll_loss_samples, nll_loss_errors;
    "binary_cross_entropy_with_logits" => bce_samples, bce_errors;
    "smooth_l1_loss" => smooth_l1_samples, smooth_l1_errors;
    "huber_loss" => huber_samples, huber_errors;
}
