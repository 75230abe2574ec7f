//! Every SIMD level gives the same bits (`tuning::set_simd_level`): the
//! vectorized elementwise math and its derivatives, the softmaxes, the
//! reductions along a dim and the pooling scans, at each level this CPU has,
//! against the baseline (SSE2 on x86-64, the code as compiled). A NaN
//! equals any NaN (see [`values`]); every other value is compared bit for
//! bit, so `-0.0 != 0.0`.
//!
//! The check means something only in an optimized build, where the loops
//! the crate compiles for AVX2 and AVX-512 are vectorized: `.ci/run` runs it
//! in its release step (`simd_levels::`), and the debug run of the README's
//! test command runs it too (there it checks that the levels can be set).

use batchrules::prelude::*;
use batchrules::tuning::{set_simd_level, simd_level, SimdLevel};

use crate::common::bits;

/// The bits of every element, with every NaN as one value: a NaN's sign and
/// payload are not specified (the x86 instructions give the default NaN of
/// an invalid operation, or pass an operand's NaN on, depending on which
/// operand comes first, which the compiler may choose differently for each
/// instruction set), as in IEEE 754 and PyTorch.
fn values(t: &Tensor) -> Vec<u64> {
    let nan = |b: u64| match t.dtype() {
        DType::F32 => f32::from_bits(b as u32).is_nan(),
        DType::F64 => f64::from_bits(b).is_nan(),
        _ => false,
    };
    bits(t)
        .into_iter()
        .map(|b| if nan(b) { u64::MAX } else { b })
        .collect()
}

/// Values over the whole range: ±0, subnormals, the thresholds where the
/// functions overflow, underflow or saturate, ±inf, NaN, a walk through the
/// bit patterns, and a dense run around 0.
fn f32_inputs() -> Vec<f32> {
    let mut xs = vec![
        0.0,
        -0.0,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        88.72283,
        88.72284,
        -87.33655,
        -103.97208,
        -104.0,
        9.0,
        10.0,
        20.0,
        20.000002,
        3.92,
        -1.0,
        1.0,
    ];
    let mut state: u32 = 0x9e37_79b9;
    while xs.len() < 8192 {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        xs.push(f32::from_bits(state));
    }
    xs.extend((0..8192).map(|i| (i as f32 - 4096.0) * 0.005));
    xs
}

fn f64_inputs() -> Vec<f64> {
    let mut xs = vec![
        0.0,
        -0.0,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        709.782712893384,
        709.7827128933841,
        -708.3964185322641,
        -745.1332191019411,
        -746.0,
        20.0,
        6.0,
        -1.0,
        1.0,
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    while xs.len() < 8192 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        xs.push(f64::from_bits(state));
    }
    xs.extend((0..8192).map(|i| (i as f64 - 4096.0) * 0.005));
    xs
}

type Op = (&'static str, fn(&Tensor) -> Result<Tensor>);

/// The elementwise ops whose kernels and derivatives run on the vector math.
fn elementwise() -> Vec<Op> {
    vec![
        ("exp", |x| ops::exp(x)),
        ("log", |x| ops::log(x)),
        ("tanh", |x| ops::tanh(x)),
        ("sigmoid", |x| ops::sigmoid(x)),
        ("erf", |x| ops::erf(x)),
        ("gelu", |x| ops::gelu(x, false)),
        ("gelu_tanh", |x| ops::gelu(x, true)),
        ("silu", |x| ops::silu(x)),
        ("softplus", |x| ops::softplus(x, 1.0, 20.0)),
        ("softplus_beta", |x| ops::softplus(x, 0.5, 10.0)),
        ("elu", |x| ops::elu(x, 1.0)),
        ("logsigmoid", |x| ops::logsigmoid(x)),
    ]
}

/// The ops over a `[4, 4, 32, 32]` tensor's rows, windows and dims.
fn structured() -> Vec<Op> {
    vec![
        ("log_softmax", |x| ops::log_softmax(x, -1)),
        ("softmax", |x| ops::softmax(x, 2)),
        ("sum_dim", |x| ops::sum(x, Some(1), false)),
        ("amax", |x| ops::amax(x, Some(3), false)),
        ("max_pool2d", |x| {
            ops::max_pool2d(x, &[2], Some(&[1]), &[0], &[1], false)
        }),
        ("max_pool2d_3x3_s2", |x| {
            ops::max_pool2d(x, &[3], Some(&[2]), &[1], &[1], true)
        }),
        ("avg_pool2d", |x| {
            ops::avg_pool2d(x, &[3], Some(&[1]), &[1], false, true, None)
        }),
    ]
}

/// Each op's value and its gradient (the derivative kernels), as bits.
fn run_all(x: &Tensor, ops: &[Op]) -> Vec<(String, Vec<u64>)> {
    let mut out = Vec::new();
    for &(name, op) in ops {
        let y = op(x).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push((name.to_string(), values(&y)));
        let g = grad(|x: Tensor| ops::sum(&op(&x)?, None, false))
            .call(x)
            .unwrap_or_else(|e| panic!("grad of {name}: {e}"));
        out.push((format!("grad of {name}"), values(&g)));
    }
    out
}

fn everything() -> Vec<(String, Vec<u64>)> {
    let x32 = Tensor::from(ndarray::Array::from_vec(f32_inputs()));
    let x64 = Tensor::from(ndarray::Array::from_vec(f64_inputs()));
    let mut out = run_all(&x32, &elementwise());
    out.extend(run_all(&x64, &elementwise()));
    // The structured ops on finite values (a NaN or inf would make every
    // row's result NaN, which checks less), shaped as images.
    let clean = |v: f64| {
        if v.is_finite() {
            v.clamp(-50.0, 50.0)
        } else {
            0.0
        }
    };
    let images = |t: &Tensor| t.reshape(&[4, 4, 32, 32]).unwrap();
    let x32 = images(&Tensor::from(ndarray::Array::from_iter(
        f32_inputs().into_iter().map(|v| clean(v as f64) as f32),
    )));
    let x64 = images(&Tensor::from(ndarray::Array::from_iter(
        f64_inputs().into_iter().map(clean),
    )));
    out.extend(run_all(&x32, &structured()));
    out.extend(run_all(&x64, &structured()));
    out
}

#[test]
fn every_simd_level_gives_the_baseline_bits() {
    let before = simd_level();
    set_simd_level(SimdLevel::Baseline).unwrap();
    let baseline = everything();
    let mut checked = 0;
    for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
        if level > SimdLevel::best() {
            assert!(set_simd_level(level).is_err(), "{level:?} above the CPU's");
            continue;
        }
        set_simd_level(level).unwrap();
        assert_eq!(simd_level(), level);
        let got = everything();
        for ((name, want), (_, have)) in baseline.iter().zip(&got) {
            if let Some(i) = (0..want.len()).find(|&i| want[i] != have[i]) {
                panic!(
                    "{name}: {level:?} differs from the baseline at element {i} \
                     (bits {:#x} against {:#x})",
                    have[i], want[i]
                );
            }
            assert_eq!(want.len(), have.len(), "{name}");
        }
        checked += 1;
    }
    set_simd_level(before).unwrap();
    // (On an x86-64 CPU without AVX2 nothing above the baseline runs.)
    assert_eq!(checked, SimdLevel::best() as usize);
}
