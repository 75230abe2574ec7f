//! Sample and error inputs of the ops of `runtime/src/library/binary.rs`.

use batchrules::args;
use batchrules::testing::Sample;

use crate::values::*;

/// Broadcasting in both directions, 0-d operands, size-1 and size-0 dims, and
/// mixed dtypes (promotion). The two float operands never hold equal values,
/// so `maximum` and `minimum` have no ties (kinks of their derivatives); the
/// comparisons add ties of their own ([`compare_samples`]).
fn binary_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[2, 3]), &f64s_from(&[2, 3], 11)],
        args![&f64s(&[2, 1]), &f64s_from(&[3], 20)],
        args![&f64s(&[3]), &f64s_from(&[2, 1], 30)],
        args![&f64s(&[]), &f64s_from(&[2, 2], 40)],
        args![&f32s(&[4]), &f64s_from(&[], 50)],
        args![&i64s(&[3], 5), &f64s(&[3])],
        args![&bools(&[2]), &i64s(&[2], 4)],
        args![&f64s(&[0, 2]), &f64s(&[2])],
    ]
}

/// The binary samples, and equal operands: every element tied, in one dtype
/// and across f32 and f64.
fn compare_samples() -> Vec<Sample> {
    let mut s = binary_samples();
    s.push(args![&f64s(&[2, 3]), &f64s(&[2, 3])]);
    s.push(args![&f32s(&[4]), &f64s(&[])]);
    s.push(args![&i64s(&[2, 2], 3), &i64s(&[2], 3)]);
    s
}

fn binary_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2]), &f64s(&[3])],
        args![&f64s(&[2, 3]), &f64s(&[3, 2])],
    ]
}

fn where_samples() -> Vec<Sample> {
    vec![
        args![&bools(&[2, 3]), &f64s(&[2, 3]), &f64s(&[2, 3])],
        args![&bools(&[3]), &f64s(&[2, 1]), &i64s(&[], 5)],
        args![&bools(&[]), &f32s(&[2]), &f32s(&[2])],
        args![&bools(&[2, 1]), &i64s(&[3], 4), &i64s(&[1], 4)],
    ]
}

fn where_errors() -> Vec<Sample> {
    vec![
        args![&i64s(&[2], 2), &f64s(&[2]), &f64s(&[2])],
        args![&bools(&[3]), &f64s(&[2]), &f64s(&[2])],
    ]
}

fn clamp_samples() -> Vec<Sample> {
    // Around 2^53, where f64 stops holding every integer, and near the i64 limits.
    let big = i64v(
        &[6],
        &[
            (1 << 53) - 1,
            1 << 53,
            (1 << 53) + 1,
            i64::MAX,
            i64::MIN,
            (1 << 62) + 1,
        ],
    );
    let two_53 = 9_007_199_254_740_992.0;
    vec![
        args![&f64s(&[2, 3]), Some(-0.5), Some(0.5)],
        args![&f32s(&[4]), None::<f64>, Some(0.0)],
        args![&i64s(&[5], 9), Some(2.5), None::<f64>],
        args![&f64s(&[]), Some(1.0), Some(-1.0)],
        args![&big, None::<f64>, Some(two_53)],
        args![&big, Some(two_53), None::<f64>],
        args![&big, Some(-1e19), Some(1e19)],
        args![&big, Some(f64::NEG_INFINITY), Some(f64::INFINITY)],
        args![&big, Some(1e19), None::<f64>],
        args![&f64s(&[3]), Some(f64::NAN), None::<f64>],
    ]
}

fn clamp_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[2]), None::<f64>, None::<f64>],
        args![&bools(&[2]), Some(0.0), None::<f64>],
        args![&i64s(&[2], 3), Some(f64::NAN), None::<f64>],
        args![&i64s(&[2], 3), Some(0.0), Some(f64::NAN)],
    ]
}

register_samples! {
    "where" => where_samples, where_errors;
    "clamp" => clamp_samples, clamp_errors;
}

// The broadcasting ops of `arith!` and the comparisons of `compare!`.
register_samples! {
    "add" => binary_samples, binary_errors;
    "sub" => binary_samples, binary_errors;
    "mul" => binary_samples, binary_errors;
    "div" => binary_samples, binary_errors;
    "pow" => binary_samples, binary_errors;
    "maximum" => binary_samples, binary_errors;
    "minimum" => binary_samples, binary_errors;
    "eq" => compare_samples, binary_errors;
    "lt" => compare_samples, binary_errors;
    "gt" => compare_samples, binary_errors;
}
