//! Sample and error inputs of the ops of `runtime/src/library/factories.rs`.

use batchrules::args;
use batchrules::testing::Sample;
use batchrules::DType;

use crate::values::*;

fn shape_samples() -> Vec<Sample> {
    let mut s = Vec::new();
    for (size, dtype) in [
        (&[2i64, 3][..], DType::F32),
        (&[], DType::F64),
        (&[0, 2], DType::F32),
        (&[1], DType::I64),
        (&[2, 1, 2], DType::Bool),
        (&[3], DType::F64),
    ] {
        s.push(args![size, dtype]);
    }
    s
}

fn shape_errors() -> Vec<Sample> {
    vec![
        args![&[-1i64][..], DType::F32],
        args![&[2i64, -3][..], DType::I64],
        args![&[0i64, -1][..], DType::F64],
        args![&[i64::MAX, 4][..], DType::F32],
    ]
}

fn full_samples() -> Vec<Sample> {
    vec![
        args![&[2i64, 2][..], 1.5, DType::F64],
        args![&[3i64][..], -2.0, DType::I64],
        args![&[3i64][..], 2.7, DType::I64],
        args![&[2i64][..], 0.0, DType::Bool],
        args![&[2i64][..], -0.5, DType::Bool],
        args![&[0i64; 0][..], f64::NAN, DType::F32],
        args![&[0i64, 3][..], f64::INFINITY, DType::F64],
        args![&[1i64, 2][..], 1e300, DType::F64],
    ]
}

fn full_errors() -> Vec<Sample> {
    vec![
        args![&[-2i64][..], 1.0, DType::F32],
        args![&[2i64][..], f64::NAN, DType::I64],
        args![&[2i64][..], f64::NEG_INFINITY, DType::I64],
        args![&[2i64][..], 1e19, DType::I64],
        args![&[2i64][..], 1e300, DType::F32],
    ]
}

fn arange_samples() -> Vec<Sample> {
    vec![
        args![0.0, 5.0, 1.0, DType::I64],
        args![0.0, 1.0, 0.25, DType::F64],
        args![5.0, 0.0, -1.0, DType::I64],
        args![0.0, 0.0, 1.0, DType::I64],
        args![0.0, 2.5, 1.0, DType::F32],
        args![-2.5, 0.0, 1.0, DType::I64],
        args![1.0, 2.0, 5.0, DType::F64],
    ]
}

fn arange_errors() -> Vec<Sample> {
    vec![
        args![0.0, 5.0, 0.0, DType::I64],
        args![0.0, 5.0, -1.0, DType::I64],
        args![5.0, 0.0, 1.0, DType::F64],
        args![f64::NAN, 5.0, 1.0, DType::F64],
        args![0.0, f64::INFINITY, 1.0, DType::F64],
        args![0.0, 1e300, 1e-300, DType::F64],
        args![0.0, 3.0, 1.0, DType::Bool],
        args![0.0, 1e300, 1e290, DType::F32],
        args![-1e19, 0.0, 1e18, DType::I64],
    ]
}

register_samples! {
    "zeros" => shape_samples, shape_errors;
    "ones" => shape_samples, shape_errors;
    "full" => full_samples, full_errors;
    "arange" => arange_samples, arange_errors;
}
