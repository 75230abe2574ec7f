//! Sample and error inputs of the ops of `runtime/src/library/normalization.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::{ops, Tensor};

use crate::values::*;

// Samples for the sweeps: few and tiny (each runs through every transform).

fn batch_norm_samples() -> Vec<Sample> {
    let none = None::<&Tensor>;
    let (m, v) = (f64s_from(&[2], 7), ops::exp(&f64s_from(&[2], 9)).unwrap());
    let (w, b) = (f64s_from(&[2], 3), f64s_from(&[2], 5));
    vec![
        // Training, with running statistics and an affine map, [N, C, L].
        args![
            &f64s(&[3, 2, 2]),
            Some(&m),
            Some(&v),
            Some(&w),
            Some(&b),
            true,
            0.1,
            1e-5
        ],
        // Evaluation with the running statistics, [N, C].
        args![
            &f64s(&[2, 2]),
            Some(&m),
            Some(&v),
            Some(&w),
            none,
            false,
            0.1,
            1e-5
        ],
        // Training without running statistics (the batch's come back), f32.
        args![
            &f32s(&[2, 3]),
            none,
            none,
            none,
            Some(&f32s(&[3])),
            true,
            0.3,
            1e-3
        ],
    ]
}

fn batch_norm_errors() -> Vec<Sample> {
    let none = None::<&Tensor>;
    let c2 = f64s(&[2]);
    vec![
        // One value per channel when training.
        args![&f64s(&[1, 2]), none, none, none, none, true, 0.1, 1e-5],
        // Evaluation needs the running statistics.
        args![&f64s(&[3, 2]), none, none, none, none, false, 0.1, 1e-5],
        // A weight of the wrong size; a 1-d input; an integer input.
        args![
            &f64s(&[3, 2]),
            Some(&c2),
            Some(&c2),
            Some(&f64s(&[3])),
            none,
            false,
            0.1,
            1e-5
        ],
        args![&f64s(&[4]), none, none, none, none, true, 0.1, 1e-5],
        args![&i64s(&[3, 2], 4), none, none, none, none, true, 0.1, 1e-5],
        // Only one of the running statistics.
        args![&f64s(&[3, 2]), Some(&c2), none, none, none, true, 0.1, 1e-5],
    ]
}

fn group_norm_samples() -> Vec<Sample> {
    let none = None::<&Tensor>;
    vec![
        args![
            &f64s(&[2, 4, 2]),
            2i64,
            Some(&f64s_from(&[4], 3)),
            Some(&f64s_from(&[4], 9)),
            1e-5
        ],
        args![&f64s(&[1, 3]), 1i64, none, none, 1e-5],
        args![&f32s(&[2, 2, 2]), 2i64, Some(&f32s(&[2])), none, 1e-3],
        args![&f64s(&[0, 2, 2]), 1i64, none, none, 1e-5],
    ]
}

fn group_norm_errors() -> Vec<Sample> {
    let none = None::<&Tensor>;
    vec![
        args![&f64s(&[2, 4]), 3i64, none, none, 1e-5],
        args![&f64s(&[2, 4]), 0i64, none, none, 1e-5],
        args![&f64s(&[2, 4]), -2i64, none, none, 1e-5],
        args![&f64s(&[4]), 1i64, none, none, 1e-5],
        args![&f64s(&[2, 4]), 2i64, Some(&f64s(&[2])), none, 1e-5],
        args![&i64s(&[2, 4], 3), 2i64, none, none, 1e-5],
    ]
}

fn rms_norm_samples() -> Vec<Sample> {
    vec![
        args![
            &f64s(&[3, 4]),
            &[4i64][..],
            Some(&f64s_from(&[4], 5)),
            None::<f64>
        ],
        args![
            &f64s(&[2, 2, 3]),
            &[2i64, 3][..],
            None::<&Tensor>,
            Some(1e-3)
        ],
        args![&f32s(&[4]), &[4i64][..], Some(&f32s(&[4])), None::<f64>],
        args![&f64s(&[0, 3]), &[3i64][..], None::<&Tensor>, None::<f64>],
    ]
}

fn rms_norm_errors() -> Vec<Sample> {
    let none = None::<&Tensor>;
    vec![
        args![&f64s(&[3, 4]), &[3i64][..], none, None::<f64>],
        args![&f64s(&[3, 4]), &[4i64][..], Some(&f64s(&[3])), None::<f64>],
        args![&f64s(&[3, 4]), &[0i64; 0][..], none, None::<f64>],
        args![&i64s(&[4], 3), &[4i64][..], none, None::<f64>],
        args![&f64s(&[3, 4]), &[i64::MIN][..], none, None::<f64>],
        args![&f64s(&[3, 4]), &[4i64][..], none, Some(f64::NAN)],
    ]
}

register_samples! {
    "batch_norm" => batch_norm_samples, batch_norm_errors;
    "group_norm" => group_norm_samples, group_norm_errors;
    "rms_norm" => rms_norm_samples, rms_norm_errors;
}
