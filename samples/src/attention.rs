//! Sample and error inputs of the ops of `runtime/src/library/attention.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::{ops, DType, Tensor};

use crate::values::*;

// Samples for the sweeps: few and tiny (each runs through every transform).

fn baddbmm_samples() -> Vec<Sample> {
    vec![
        args![
            &f64s(&[2, 3, 2]),
            &f64s_from(&[2, 3, 4], 7),
            &f64s_from(&[2, 4, 2], 31),
            1.0,
            1.0
        ],
        args![
            &f64s(&[2]),
            &f64s_from(&[1, 2, 3], 5),
            &f64s_from(&[1, 3, 2], 13),
            0.5,
            -2.0
        ],
        args![
            &f32s(&[1, 1, 2]),
            &f32s(&[2, 1, 3]),
            &f32s(&[2, 3, 2]),
            0.0,
            1.5
        ],
        args![
            &i64s(&[2, 2, 2], 5),
            &i64s(&[2, 2, 1], 4),
            &i64s(&[2, 1, 2], 3),
            2.0,
            -1.0
        ],
    ]
}

fn baddbmm_errors() -> Vec<Sample> {
    let a = f64s(&[2, 3, 4]);
    let b = f64s(&[2, 4, 2]);
    vec![
        // Not 3-D, mismatched inner and batch dims.
        args![&f64s(&[3, 2]), &f64s(&[3, 4]), &f64s(&[4, 2]), 1.0, 1.0],
        args![&f64s(&[2, 3, 2]), &a, &f64s(&[2, 3, 2]), 1.0, 1.0],
        args![&f64s(&[2, 3, 2]), &a, &f64s(&[3, 4, 2]), 1.0, 1.0],
        // self does not broadcast to [2, 3, 2]; mixed dtypes; fractional
        // alpha on integers.
        args![&f64s(&[3, 3, 2]), &a, &b, 1.0, 1.0],
        args![&f32s(&[2, 3, 2]), &a, &b, 1.0, 1.0],
        args![
            &i64s(&[1], 3),
            &i64s(&[1, 1, 1], 3),
            &i64s(&[1, 1, 1], 3),
            1.0,
            0.5
        ],
    ]
}

fn sdpa_samples() -> Vec<Sample> {
    let none = None::<&Tensor>;
    let bool_mask = f64v(&[2, 3], &[1.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
    let bool_mask = ops::gt(&bool_mask, &Tensor::scalar(0.5)).expect("a bool mask");
    let additive = f64s_from(&[2, 3], 40);
    vec![
        // L = 2, S = 3, batch [2]; causal.
        args![
            &f64s(&[2, 2, 3]),
            &f64s_from(&[2, 3, 3], 12),
            &f64s_from(&[2, 3, 2], 30),
            none,
            0.0,
            true,
            None::<f64>,
            0i64
        ],
        // A boolean mask hiding all of row 1; a custom scale.
        args![
            &f64s(&[2, 2]),
            &f64s_from(&[3, 2], 4),
            &f64s_from(&[3, 1], 10),
            Some(&bool_mask),
            0.0,
            false,
            Some(0.7),
            0i64
        ],
        // An additive mask, broadcast over a batch of 2.
        args![
            &f32s(&[2, 2, 2]),
            &f32s(&[1, 3, 2]),
            &f32s(&[2, 3, 2]),
            Some(&ops::to_dtype(&additive, DType::F32).expect("f32")),
            0.0,
            false,
            None::<f64>,
            0i64
        ],
    ]
}

fn sdpa_errors() -> Vec<Sample> {
    let none = None::<&Tensor>;
    let (q, k, v) = (f64s(&[2, 3]), f64s(&[4, 3]), f64s(&[4, 2]));
    let mask = f64s(&[2, 4]);
    let wrong_mask = f64s(&[3, 4]);
    vec![
        // 1-D query; E differs; S differs; integer tensors.
        args![&f64s(&[3]), &k, &v, none, 0.0, false, None::<f64>, 0i64],
        args![&q, &f64s(&[4, 2]), &v, none, 0.0, false, None::<f64>, 0i64],
        args![&q, &k, &f64s(&[3, 2]), none, 0.0, false, None::<f64>, 0i64],
        args![
            &i64s(&[2, 3], 4),
            &i64s(&[4, 3], 4),
            &i64s(&[4, 2], 4),
            none,
            0.0,
            false,
            None::<f64>,
            0i64
        ],
        // Mask and is_causal; a mask that does not broadcast; a bad dropout_p.
        args![&q, &k, &v, Some(&mask), 0.0, true, None::<f64>, 0i64],
        args![&q, &k, &v, Some(&wrong_mask), 0.0, false, None::<f64>, 0i64],
        args![&q, &k, &v, none, 1.5, false, None::<f64>, 0i64],
    ]
}

register_samples! {
    "baddbmm" => baddbmm_samples, baddbmm_errors;
    "scaled_dot_product_attention" => sdpa_samples, sdpa_errors;
}
