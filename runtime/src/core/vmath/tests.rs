//! The vectorized math against the plain scalar calls (bit for bit) and
//! against references nobody here wrote (the platform's libm, the `libm`
//! crate's `erf`, and mpmath values recorded in
//! `tests/reference/mpmath_vmath.json`).

use super::fp32::{
    erf as erf_f32, expm1 as expm1_f32, log as log_f32, log1p as log1p_f32, sigmoid as sigmoid_f32,
    tanh as tanh_f32,
};
use super::fp64::{
    erf as erf_f64, expm1 as expm1_f64, half as half_floor, log as log_f64, log1p as log1p_f64,
    sigmoid as sigmoid_f64, split as split_f64, tanh as tanh_f64,
    SQRT_HALF_BITS as SQRT_HALF_BITS_F64,
};
use super::*;
use crate::core::simd::{best_tier, vectorized, vectorized_at, SimdLevel};

/// Inputs that cover the whole f32 range: the special values, the
/// thresholds of each function, and a stride through every bit pattern.
fn inputs_f32(stride: u32) -> Vec<f32> {
    let mut xs = vec![
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        1.0,
        -1.0,
        2.0,
        0.5,
        88.72283,
        88.72284,
        89.0,
        -87.33655,
        -103.27893,
        -103.97208,
        -104.0,
        -17.0,
        -20.0,
        9.0,
        9.1,
        10.0,
        3.92,
        4.0,
        2.980_232_2e-8,
        -2.980_232_2e-8,
        -0.999_999_94,
        f32::EPSILON,
    ];
    let mut bits: u32 = 0;
    while let Some(next) = bits.checked_add(stride) {
        xs.push(f32::from_bits(bits));
        bits = next;
    }
    // Dense near the interesting middle of the range.
    for i in -20_000..=20_000 {
        xs.push(i as f32 * 0.001);
    }
    xs
}

fn inputs_f64(count: u64) -> Vec<f64> {
    let mut xs = vec![
        0.0,
        -0.0,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        f64::MAX,
        f64::MIN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        1.0,
        -1.0,
        709.782_712_893_384,
        709.782_712_893_385,
        710.0,
        -708.396_418_532_264_1,
        -744.440_071_921_381,
        -745.133_219_101_941_1,
        -745.2,
        -746.0,
        -37.0,
        -50.0,
        19.0,
        19.1,
        20.0,
        5.9,
        6.0,
        5.551_115_123_125_783e-17,
        -5.551_115_123_125_783e-17,
        -0.999_999_999_999_999_9,
        f64::EPSILON,
    ];
    // A stride through the bit patterns of both signs.
    let step = u64::MAX / count;
    let mut bits: u64 = 12_345;
    while let Some(next) = bits.checked_add(step) {
        xs.push(f64::from_bits(bits));
        bits = next;
    }
    for i in -20_000..=20_000 {
        xs.push(i as f64 * 0.001);
    }
    xs
}

/// Whether a value is NaN, for [`same_bits`] over f32 and f64.
trait IsNan: Copy {
    fn nan(&self) -> bool;
}
impl IsNan for f32 {
    fn nan(&self) -> bool {
        self.is_nan()
    }
}
impl IsNan for f64 {
    fn nan(&self) -> bool {
        self.is_nan()
    }
}

/// `(name, function, bound in ulp)` of an f64 function checked against
/// mpmath.
type CaseMp = (&'static str, fn(f64) -> f64, f64);

/// `(name, function, f64 reference, bound in ulp)` of an f32 function.
type CaseF32 = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f64);
/// `(name, function, f64 reference, bound in ulp)` of an f64 function.
type CaseF64 = (&'static str, fn(f64) -> f64, fn(f64) -> f64, f64);

/// Whether `u` (an error in ulp, or NaN) is not within `bound`.
fn beyond(u: f64, bound: f64) -> bool {
    u > bound || u.is_nan()
}

/// The same bits from the scalar call (one element at a time, through a
/// function pointer, so it is not vectorized) and from the loop run through
/// [`vectorized_at`] at each tier the CPU has (SSE2, AVX2+FMA, AVX-512).
/// (In the unoptimized test profile the loops are not vectorized, but each
/// tier is still compiled apart; `cargo test --release` checks the
/// vectorized loops, and so does `accuracy_f32_exhaustive`.)
/// NaN results only need to be NaN on both.
fn same_bits<T: Copy + PartialEq + std::fmt::Debug + IsNan>(
    name: &str,
    xs: &[T],
    f: fn(T) -> T,
    wide: &[T],
    bits: impl Fn(T) -> u64,
) {
    let f = std::hint::black_box(f);
    for (&x, &w) in xs.iter().zip(wide) {
        let s = f(x);
        let both_nan = s.nan() && w.nan();
        assert!(
            both_nan || bits(s) == bits(w),
            "{name}({x:?}): scalar {s:?}, vectorized {w:?}"
        );
    }
}

macro_rules! bitwise_tests {
    ($test:ident, $t:ty, $inputs:expr, $bits:expr, [$($f:ident),*]) => {
        pub(crate) fn $test() {
            let xs: Vec<$t> = $inputs;
            for tier in [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                $(
                    let wide = vectorized_at(
                        tier,
                        #[inline(always)]
                        || {
                            let mut out: Vec<$t> = vec![0.0; xs.len()];
                            for (o, &x) in out.iter_mut().zip(&xs) {
                                *o = $f(x);
                            }
                            out
                        },
                    );
                    same_bits(&format!("{} ({tier:?})", stringify!($f)), &xs, $f, &wide, $bits);
                )*
            }
        }
    };
}

bitwise_tests!(
    vectorized_equals_scalar_f32,
    f32,
    inputs_f32(40_009),
    |v: f32| u64::from(v.to_bits()),
    [
        exp_f32,
        expm1_f32,
        log_f32,
        log1p_f32,
        tanh_f32,
        sigmoid_f32,
        erf_f32,
        gelu_f32,
        gelu_tanh_f32,
        silu_f32,
        softplus_f32,
        elu_f32
    ]
);
bitwise_tests!(
    vectorized_equals_scalar_f64,
    f64,
    inputs_f64(100_000),
    |v: f64| v.to_bits(),
    [
        exp_f64,
        expm1_f64,
        log_f64,
        log1p_f64,
        tanh_f64,
        sigmoid_f64,
        erf_f64,
        gelu_f64,
        gelu_tanh_f64,
        silu_f64,
        softplus_f64,
        elu_f64
    ]
);

fn gelu_f32(x: f32) -> f32 {
    x.v_gelu()
}
fn gelu_tanh_f32(x: f32) -> f32 {
    x.v_gelu_tanh()
}
fn silu_f32(x: f32) -> f32 {
    x.v_silu()
}
fn softplus_f32(x: f32) -> f32 {
    x.v_softplus(2.0, 20.0)
}
fn elu_f32(x: f32) -> f32 {
    x.v_elu(1.5)
}
fn gelu_f64(x: f64) -> f64 {
    x.v_gelu()
}
fn gelu_tanh_f64(x: f64) -> f64 {
    x.v_gelu_tanh()
}
fn silu_f64(x: f64) -> f64 {
    x.v_silu()
}
fn softplus_f64(x: f64) -> f64 {
    x.v_softplus(2.0, 20.0)
}
fn elu_f64(x: f64) -> f64 {
    x.v_elu(1.5)
}

/// The distance from `y` to the reference `r` in ulps of f32 at `r` (the
/// spacing of f32 values around `r`, 2^-149 among the subnormals). Both NaN,
/// or equal (infinities included), is 0; one NaN, or an infinity against a
/// finite value, is infinite.
pub(super) fn ulps_f32(y: f32, r: f64) -> f64 {
    if y.is_nan() || r.is_nan() {
        return if y.is_nan() && r.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if y as f64 == r {
        return 0.0;
    }
    if y.is_infinite() || r.is_infinite() {
        // Overflow: the reference beyond f32::MAX rounds to inf.
        let rr = r as f32;
        return if rr == y { 0.0 } else { f64::INFINITY };
    }
    let e = (r.abs().log2().floor() as i32).max(-126);
    let ulp = 2f64.powi(e) * 2f64.powi(-23);
    (y as f64 - r).abs() / ulp
}

/// As [`ulps_f32`], for an f64 result against a reference `r` given as an
/// f64 (correctly rounded, so the figure may be 0.5 above the true error).
pub(super) fn ulps_f64(y: f64, r: f64) -> f64 {
    if y.is_nan() || r.is_nan() {
        return if y.is_nan() && r.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if y == r {
        return 0.0;
    }
    if y.is_infinite() || r.is_infinite() {
        return f64::INFINITY;
    }
    let e = (r.abs().log2().floor() as i32).max(-1022);
    // 2^e first: powi of a negative power divides, and 1 / 2^1024 is 0.
    let ulp = 2f64.powi(e) * 2f64.powi(-52);
    (y - r).abs() / ulp
}

/// The f64 references of the f32 functions: glibc (through `std`) and the
/// `libm` crate's `erf`, whose errors (below 1 ulp of f64) are 2^-29 ulp of
/// f32.
pub(super) fn references_f32() -> Vec<CaseF32> {
    vec![
        ("exp", exp_f32, f64::exp, 1.0),
        ("expm1", expm1_f32, f64::exp_m1, 2.0),
        ("log", log_f32, f64::ln, 1.0),
        ("log1p", log1p_f32, f64::ln_1p, 2.0),
        ("tanh", tanh_f32, f64::tanh, 3.0),
        ("sigmoid", sigmoid_f32, |x| 1.0 / (1.0 + (-x).exp()), 2.5),
        ("erf", erf_f32, libm::erf, 2.0),
    ]
}

/// Each f32 function within its stated ulps of the f64 reference over the
/// sweep (the `#[ignore]`d `accuracy_f32_exhaustive` takes every f32).
pub(crate) fn accuracy_f32() {
    let xs = inputs_f32(65_537);
    let mut failures = Vec::new();
    for (name, f, reference, bound) in references_f32() {
        let mut worst = (0.0, 0.0f32);
        for &x in &xs {
            let u = ulps_f32(f(x), reference(x as f64));
            if beyond(u, worst.0) {
                worst = (u, x);
            }
        }
        println!("{name}: max {:.3} ulp at {:e}", worst.0, worst.1);
        if beyond(worst.0, bound) {
            failures.push(format!(
                "{name}: {} ulps at {:e} (bound {bound})",
                worst.0, worst.1
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// Every f32 input, for the table in the module's documentation: run with
/// `BATCHRULES_UNIT_TESTS=vmath::accuracy_f32_exhaustive cargo test --release
/// --test suite unit:: -- --ignored --nocapture`.
/// Also checks that the loop at the CPU's best tier gives the scalar call's
/// bits for every input.
pub(crate) fn accuracy_f32_exhaustive() {
    let mut failures = Vec::new();
    for (name, scalar, reference, bound) in references_f32() {
        let scalar = std::hint::black_box(scalar);
        let mut worst = (0.0, 0.0f32);
        let mut differ = 0u64;
        let mut bits: u64 = 0;
        let mut chunk = vec![0.0f32; 65_536];
        while bits <= u64::from(u32::MAX) {
            for (i, x) in chunk.iter_mut().enumerate() {
                *x = f32::from_bits((bits + i as u64) as u32);
            }
            let wide = wide_f32(name, &chunk);
            for (&x, &w) in chunk.iter().zip(&wide) {
                let y = scalar(x);
                if !(y.to_bits() == w.to_bits() || (y.is_nan() && w.is_nan())) {
                    differ += 1;
                }
                let u = ulps_f32(y, reference(x as f64));
                if beyond(u, worst.0) {
                    worst = (u, x);
                }
            }
            bits += 65_536;
        }
        println!(
            "{name} f32: max {:.3} ulp at {:e}; {differ} differ between paths",
            worst.0, worst.1
        );
        if differ > 0 || beyond(worst.0, bound) {
            failures.push(format!(
                "{name}: {} ulps at {:e}, {differ} differ",
                worst.0, worst.1
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// The function `name` of [`references_f32`] over `xs`, by the loop at the
/// CPU's best tier (with the function inlined, so it vectorizes).
fn wide_f32(name: &str, xs: &[f32]) -> Vec<f32> {
    macro_rules! wide {
        ($f:ident) => {
            vectorized_at(best_tier(), || {
                let mut out = vec![0.0f32; xs.len()];
                for (o, &x) in out.iter_mut().zip(xs) {
                    *o = $f(x);
                }
                out
            })
        };
    }
    match name {
        "exp" => wide!(exp_f32),
        "expm1" => wide!(expm1_f32),
        "log" => wide!(log_f32),
        "log1p" => wide!(log1p_f32),
        "tanh" => wide!(tanh_f32),
        "sigmoid" => wide!(sigmoid_f32),
        _ => wide!(erf_f32),
    }
}

/// The f64 references from glibc and the `libm` crate (within about 1 ulp
/// of f64 themselves, so the bound allows 1 more).
fn references_f64() -> Vec<CaseF64> {
    vec![
        ("exp", exp_f64, f64::exp, 1.0 + 1.0),
        ("expm1", expm1_f64, f64::exp_m1, 2.0 + 1.0),
        ("log", log_f64, f64::ln, 1.0 + 1.0),
        ("log1p", log1p_f64, f64::ln_1p, 2.0 + 1.0),
        ("tanh", tanh_f64, f64::tanh, 3.0 + 1.0),
        ("erf", erf_f64, libm::erf, 2.0 + 1.0),
    ]
}

pub(crate) fn accuracy_f64_against_libm() {
    let xs = inputs_f64(200_000);
    let mut failures = Vec::new();
    for (name, f, reference, bound) in references_f64() {
        let mut worst = (0.0, 0.0f64);
        for &x in &xs {
            let u = ulps_f64(f(x), reference(x));
            if beyond(u, worst.0) {
                worst = (u, x);
            }
        }
        println!("{name}: max {:.3} ulp at {:e}", worst.0, worst.1);
        if beyond(worst.0, bound) {
            failures.push(format!(
                "{name}: {} ulps at {:e} (bound {bound})",
                worst.0, worst.1
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// The f64 functions against mpmath's values, correctly rounded to f64
/// (recorded by `scripts/reference/vmath_mpmath.py`): within the stated ulps
/// plus the half ulp of the reference's rounding.
pub(crate) fn accuracy_f64_against_mpmath() {
    let table = include_str!("../../../../tests/reference/mpmath_vmath.txt");
    let functions: [CaseMp; 7] = [
        ("exp", exp_f64, 1.0),
        ("expm1", expm1_f64, 2.0),
        ("log", log_f64, 1.0),
        ("log1p", log1p_f64, 2.0),
        ("tanh", tanh_f64, 3.0),
        ("sigmoid", sigmoid_f64, 2.0),
        ("erf", erf_f64, 2.0),
    ];
    let mut worst = vec![(0.0f64, 0.0f64, 0usize); functions.len()];
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(x), Some(r)) = (parts.next(), parts.next(), parts.next()) else {
            panic!("a malformed line: {line}");
        };
        let parse = |h: &str| f64::from_bits(u64::from_str_radix(h, 16).expect("hex bits"));
        let (x, r) = (parse(x), parse(r));
        let i = functions
            .iter()
            .position(|f| f.0 == name)
            .expect("a known function");
        let u = ulps_f64(functions[i].1(x), r);
        worst[i].2 += 1;
        if beyond(u, worst[i].0) {
            worst[i].0 = u;
            worst[i].1 = x;
        }
    }
    let mut failures = Vec::new();
    for ((name, _, bound), (u, x, count)) in functions.iter().zip(&worst) {
        println!("{name} f64 against mpmath: max {u:.3} ulp at {x:e} ({count} values)");
        assert!(*count > 500, "{name}: only {count} values");
        if beyond(*u, bound + 0.5) {
            failures.push(format!("{name}: {u} ulps at {x:e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// Nanoseconds per element of each f32 function: the libm call of `std`
/// (through `vectorized`, where it stays a call) and this module's function
/// at each tier. Run with `BATCHRULES_UNIT_TESTS=vmath::throughput cargo test
/// --release --test suite unit:: -- --ignored --nocapture`.
pub(crate) fn throughput() {
    use std::time::Instant;
    let xs: Vec<f32> = (0..4096).map(|i| (i as f32 - 2048.0) * 0.003).collect();
    let mut out = vec![0.0f32; xs.len()];
    let rounds = 2000;
    let time = |run: &mut dyn FnMut(&mut [f32])| {
        let mut out = vec![0.0f32; xs.len()];
        let start = Instant::now();
        for _ in 0..rounds {
            run(&mut out);
            std::hint::black_box(&mut out);
        }
        start.elapsed().as_secs_f64() * 1e9 / (rounds * xs.len()) as f64
    };
    macro_rules! row {
        ($name:expr, $libm:expr, $f:expr) => {{
            let libm = time(&mut |o: &mut [f32]| {
                vectorized(|| {
                    for (o, &x) in o.iter_mut().zip(&xs) {
                        *o = $libm(x);
                    }
                })
            });
            let mut cells = vec![format!("{:>6.2}", libm)];
            for tier in [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                let t = time(&mut |o: &mut [f32]| {
                    vectorized_at(
                        tier,
                        #[inline(always)]
                        || {
                            for (o, &x) in o.iter_mut().zip(&xs) {
                                *o = $f(x);
                            }
                        },
                    )
                });
                cells.push(format!("{:>6.2}", t));
            }
            println!("{:<10} {}", $name, cells.join(" "));
        }};
    }
    println!("f32 ns/element: libm, then baseline, avx2+fma, avx-512");
    row!("exp", f32::exp, exp_f32);
    row!("expm1", f32::exp_m1, expm1_f32);
    row!("log", f32::ln, log_f32);
    row!("log1p", f32::ln_1p, log1p_f32);
    row!("tanh", f32::tanh, tanh_f32);
    row!("sigmoid", |x: f32| 1.0 / (1.0 + (-x).exp()), sigmoid_f32);
    row!("erf", libm::erff, erf_f32);
    out[0] = 0.0;
    let xs64: Vec<f64> = xs.iter().map(|&x| f64::from(x)).collect();
    let time64 = |run: &mut dyn FnMut(&mut [f64])| {
        let mut out = vec![0.0f64; xs64.len()];
        let start = Instant::now();
        for _ in 0..rounds {
            run(&mut out);
            std::hint::black_box(&mut out);
        }
        start.elapsed().as_secs_f64() * 1e9 / (rounds * xs64.len()) as f64
    };
    macro_rules! row64 {
        ($name:expr, $libm:expr, $f:expr) => {{
            let libm = time64(&mut |o: &mut [f64]| {
                vectorized(|| {
                    for (o, &x) in o.iter_mut().zip(&xs64) {
                        *o = $libm(x);
                    }
                })
            });
            let mut cells = vec![format!("{:>6.2}", libm)];
            for tier in [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                let t = time64(&mut |o: &mut [f64]| {
                    vectorized_at(
                        tier,
                        #[inline(always)]
                        || {
                            for (o, &x) in o.iter_mut().zip(&xs64) {
                                *o = $f(x);
                            }
                        },
                    )
                });
                cells.push(format!("{:>6.2}", t));
            }
            println!("{:<10} {}", $name, cells.join(" "));
        }};
    }
    println!("f64 ns/element: libm, then baseline, avx2+fma, avx-512");
    row64!("exp", f64::exp, exp_f64);
    row64!("expm1", f64::exp_m1, expm1_f64);
    row64!("log", f64::ln, log_f64);
    row64!("log1p", f64::ln_1p, log1p_f64);
    row64!("tanh", f64::tanh, tanh_f64);
    row64!("sigmoid", |x: f64| 1.0 / (1.0 + (-x).exp()), sigmoid_f64);
    row64!("erf", libm::erf, erf_f64);
    std::hint::black_box(&out);
}

/// The logical-shift forms of the arithmetic shifts of i64 (for AVX2, which
/// has none) give the shift's results over their whole domain.
pub(crate) fn shifts_without_an_arithmetic_shift_of_i64() {
    for n in -4096i64..=4096 {
        assert_eq!(half_floor(n), n >> 1, "{n}");
    }
    // Every exponent of a positive normal f64, with mantissas on both sides
    // of sqrt(1/2).
    for e in 1u64..2047 {
        for m in [0u64, 0x6a09e667f3bcc, 0x6a09e667f3bcd, (1 << 52) - 1] {
            let x = f64::from_bits(e << 52 | m);
            let bits = x.to_bits() as i64;
            let k = bits.wrapping_sub(SQRT_HALF_BITS_F64) >> 52;
            let (kf, f) = split_f64(x);
            assert_eq!(kf, k as f64, "{x:e}");
            assert_eq!(f.to_bits(), (bits.wrapping_sub(k << 52)) as u64, "{x:e}");
        }
    }
}

crate::core::unit_test::test_list! {
    accuracy_f32,
    accuracy_f32_exhaustive = "every f32, about a minute in release",
    accuracy_f64_against_libm,
    accuracy_f64_against_mpmath,
    throughput = "a measurement, for release builds",
    shifts_without_an_arithmetic_shift_of_i64,
    vectorized_equals_scalar_f32,
    vectorized_equals_scalar_f64,
}
