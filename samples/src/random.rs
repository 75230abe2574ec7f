//! Sample and error inputs of the ops of `runtime/src/library/random.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::DType;

use crate::values::*;

// Sample inputs. Draws are deterministic in the seed, so the op-library
// harness checks them against the loop like any op (under
// `Randomness::Same`, where the loop's examples draw with the seed as given).

fn size_samples() -> Vec<Sample> {
    vec![
        args![&[2i64, 3][..], 5i64, DType::F32],
        args![&[4i64][..], -1i64, DType::F64],
        args![&[0i64, 2][..], 0i64, DType::F64],
        args![&[0i64; 0][..], i64::MAX, DType::F32],
    ]
}

fn size_errors() -> Vec<Sample> {
    vec![
        args![&[-1i64][..], 0i64, DType::F32],
        args![&[i64::MAX, 4][..], 0i64, DType::F64],
        args![&[2i64][..], 0i64, DType::I64],
        args![&[2i64][..], 0i64, DType::Bool],
    ]
}

fn key_samples() -> Vec<Sample> {
    vec![args![0i64], args![-7i64], args![i64::MIN]]
}

/// Every i64 is a seed: there is nothing to reject.
fn key_errors() -> Vec<Sample> {
    Vec::new()
}

fn keyed_samples() -> Vec<Sample> {
    vec![
        args![&i64s(&[3], 100), &[2i64][..], DType::F64],
        args![&i64s(&[], 100), &[2i64, 2][..], DType::F32],
        args![&i64s(&[2, 2], 100), &[0i64; 0][..], DType::F64],
        args![&i64s(&[2, 0], 100), &[3i64][..], DType::F32],
    ]
}

fn keyed_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), &[2i64][..], DType::F64],
        args![&i64s(&[3], 100), &[-2i64][..], DType::F64],
        args![&i64s(&[3], 100), &[2i64][..], DType::I64],
        args![&i64s(&[3], 100), &[i64::MAX / 2, 2][..], DType::F32],
    ]
}

fn bernoulli_samples() -> Vec<Sample> {
    vec![
        args![&f64v(&[4], &[0.0, 0.25, 0.75, 1.0]), 3i64],
        args![&f64s(&[2, 3]), 9i64],
        args![&f32s(&[5]), 1i64],
        args![&f64s(&[]), 0i64],
        args![&f64s(&[0, 2]), 0i64],
    ]
}

fn bernoulli_errors() -> Vec<Sample> {
    vec![args![&i64s(&[3], 2), 0i64], args![&bools(&[2]), 0i64]]
}

fn dropout_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 4]), 0.5, 11i64],
        args![&f32s(&[6]), 0.25, 2i64],
        args![&f64s(&[4]), 0.0, 0i64],
        args![&f64s(&[4]), 1.0, 0i64],
        args![&f64s(&[]), 0.3, 5i64],
    ]
}

fn dropout_errors() -> Vec<Sample> {
    vec![
        args![&f64s(&[3]), 1.5, 0i64],
        args![&f64s(&[3]), -0.1, 0i64],
        args![&f64s(&[3]), f64::NAN, 0i64],
        args![&i64s(&[3], 4), 0.5, 0i64],
    ]
}

register_samples! {
    "rand" => size_samples, size_errors;
    "randn" => size_samples, size_errors;
    "random_key" => key_samples, key_errors;
    "random_uniform" => keyed_samples, keyed_errors;
    "random_normal" => keyed_samples, keyed_errors;
    "bernoulli" => bernoulli_samples, bernoulli_errors;
    "dropout" => dropout_samples, dropout_errors;
}
