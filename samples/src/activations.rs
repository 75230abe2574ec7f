//! Sample and error inputs of the ops of `runtime/src/library/activations.rs`.

use batchrules::args;
use batchrules::rules::Arg;
use batchrules::testing::Sample;
use batchrules::Tensor;

use crate::values::*;

// Samples for the sweeps: few and small (the sweeps run each through every
// transform). The sample values lie in about [-2, 2], away from the kinks at 0
// and from the bounds of hardtanh's samples.

/// The sample `t` followed by the float arguments `a`.
fn with(t: Tensor, a: &[f64]) -> Sample {
    let mut s = args![&t];
    s.extend(a.iter().map(|&v| Arg::Float(v)));
    s
}

/// Float samples of several shapes with the arguments `args[0]`, and an f32
/// one with each of `args`.
fn samples_with(args: &[&[f64]]) -> Vec<Sample> {
    let a0 = args[0];
    let mut s = vec![
        with(f64s(&[3, 4]), a0),
        with(f64s(&[]), a0),
        with(f64s(&[2, 0]), a0),
    ];
    for a in args {
        s.push(with(f32s(&[5]), a));
    }
    s
}

/// An i64 and a bool tensor with the valid arguments `args`, and a float
/// tensor with each of the invalid ones, `bad`.
fn errors_with(args: &[f64], bad: &[&[f64]]) -> Vec<Sample> {
    let mut s = vec![with(i64s(&[3], 5), args), with(bools(&[2, 2]), args)];
    for a in bad {
        s.push(with(f64s(&[3]), a));
    }
    s
}

fn erf_samples() -> Vec<Sample> {
    samples_with(&[&[]])
}

fn erf_errors() -> Vec<Sample> {
    errors_with(&[], &[])
}

fn softplus_samples() -> Vec<Sample> {
    // The second: a threshold inside the values' range (the linear part is
    // taken for some elements, x > 0.75); the third: a negative beta.
    samples_with(&[&[1.0, 20.0], &[2.0, 1.5], &[-0.5, 20.0]])
}

fn softplus_errors() -> Vec<Sample> {
    errors_with(
        &[1.0, 20.0],
        &[
            &[0.0, 20.0],
            &[f64::NAN, 20.0],
            &[f64::INFINITY, 20.0],
            &[1.0, f64::NAN],
        ],
    )
}

fn elu_samples() -> Vec<Sample> {
    samples_with(&[&[1.0], &[0.3]])
}

fn elu_errors() -> Vec<Sample> {
    errors_with(&[1.0], &[&[f64::NAN], &[f64::NEG_INFINITY]])
}

fn gelu_samples() -> Vec<Sample> {
    vec![
        args![&f64s(&[3, 4]), false],
        args![&f64s(&[3, 4]), true],
        args![&f64s(&[]), false],
        args![&f64s(&[2, 0]), true],
        args![&f32s(&[5]), false],
        args![&f32s(&[5]), true],
    ]
}

fn gelu_errors() -> Vec<Sample> {
    vec![args![&i64s(&[3], 5), false], args![&bools(&[2, 2]), true]]
}

fn leaky_relu_samples() -> Vec<Sample> {
    samples_with(&[&[0.01], &[0.2]])
}

fn leaky_relu_errors() -> Vec<Sample> {
    errors_with(&[0.01], &[&[f64::NAN], &[f64::INFINITY]])
}

fn hardtanh_samples() -> Vec<Sample> {
    // Bounds away from every sample value, some clipped on each side.
    samples_with(&[&[-1.05, 0.95], &[-0.33, 1.55]])
}

fn hardtanh_errors() -> Vec<Sample> {
    errors_with(
        &[-1.0, 1.0],
        &[&[1.0, -1.0], &[f64::NAN, 1.0], &[-1.0, f64::NAN]],
    )
}

register_samples! {
    "erf" => erf_samples, erf_errors;
    "logsigmoid" => erf_samples, erf_errors;
    "silu" => erf_samples, erf_errors;
    "softplus" => softplus_samples, softplus_errors;
    "elu" => elu_samples, elu_errors;
    "gelu" => gelu_samples, gelu_errors;
    "leaky_relu" => leaky_relu_samples, leaky_relu_errors;
    "hardtanh" => hardtanh_samples, hardtanh_errors;
}
