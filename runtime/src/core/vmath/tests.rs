//! The vectorized math against the plain scalar calls (bit for bit) and
//! against references nobody here wrote (the platform's libm, the `libm`
//! crate's `erf`, and mpmath values recorded in
//! `tests/reference/mpmath_vmath.txt`).
//!
//! The checks are written once, generic over [`Float`] (f32 and f64), and
//! run for each type.

use super::*;
use crate::core::simd::{best_tier, vectorized, vectorized_at, SimdLevel};

/// The tiers the loops are compared at (`vectorized_at` runs each at the
/// highest the CPU has, up to it).
const TIERS: [SimdLevel; 3] = [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512];

/// What the checks need of f32 and f64 besides [`VMath`].
trait Float:
    VMath
    + PartialEq
    + From<f32>
    + std::ops::Mul<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::fmt::Debug
    + std::fmt::LowerExp
{
    /// The type's name, for messages.
    const NAME: &'static str;
    const MIN_POSITIVE: Self;
    const MAX: Self;
    const INFINITY: Self;
    const NAN: Self;
    /// The exponent of the smallest normal number (-126, -1022).
    const MIN_NORMAL_EXP: i32;
    /// The bits of the significand below its leading 1 (23, 52).
    const MANT_BITS: i32;
    fn from_bits(bits: u64) -> Self;
    fn bits(self) -> u64;
    fn nan(self) -> bool;
    fn infinite(self) -> bool;
    fn to_f64(self) -> f64;
    /// `x` rounded to the type.
    fn from_f64(x: f64) -> Self;
    /// `i * 0.001`, in the type.
    fn thousandths(i: i32) -> Self;
}

macro_rules! float {
    ($($t:ident, $bits:ident);*) => {$(
        impl Float for $t {
            const NAME: &'static str = stringify!($t);
            const MIN_POSITIVE: $t = $t::MIN_POSITIVE;
            const MAX: $t = $t::MAX;
            const INFINITY: $t = $t::INFINITY;
            const NAN: $t = $t::NAN;
            const MIN_NORMAL_EXP: i32 = $t::MIN_EXP - 1;
            const MANT_BITS: i32 = $t::MANTISSA_DIGITS as i32 - 1;
            fn from_bits(bits: u64) -> $t {
                $t::from_bits(bits as $bits)
            }
            fn bits(self) -> u64 {
                u64::from(self.to_bits())
            }
            fn nan(self) -> bool {
                self.is_nan()
            }
            fn infinite(self) -> bool {
                self.is_infinite()
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn from_f64(x: f64) -> $t {
                x as $t
            }
            fn thousandths(i: i32) -> $t {
                i as $t * 0.001
            }
        }
    )*};
}

float!(f32, u32; f64, u64);

/// Inputs that cover the whole range of `T`: the special values, `extra`
/// (the thresholds of each function), `walk` (a stride through the bit
/// patterns), and a dense run near the interesting middle of the range.
fn inputs<T: Float>(extra: &[T], walk: Vec<T>) -> Vec<T> {
    let one = T::from(1.0);
    let tiny = T::from_bits(1);
    let largest_subnormal = T::from_bits(T::MIN_POSITIVE.bits() - 1);
    let mut xs = vec![
        T::from(0.0),
        T::from(-0.0),
        T::MIN_POSITIVE,
        -T::MIN_POSITIVE,
        tiny,
        -tiny,
        largest_subnormal,
        T::MAX,
        -T::MAX,
        T::INFINITY,
        -T::INFINITY,
        T::NAN,
        -T::NAN,
        one,
        -one,
    ];
    xs.extend_from_slice(extra);
    xs.extend(walk);
    xs.extend((-20_000..=20_000).map(T::thousandths));
    xs
}

/// [`inputs`] for f32, with every `stride`th bit pattern.
fn inputs_f32(stride: u32) -> Vec<f32> {
    let extra = [
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
    let mut walk = Vec::new();
    let mut bits: u32 = 0;
    while let Some(next) = bits.checked_add(stride) {
        walk.push(f32::from_bits(bits));
        bits = next;
    }
    inputs(&extra, walk)
}

/// [`inputs`] for f64, with `count` bit patterns of both signs.
fn inputs_f64(count: u64) -> Vec<f64> {
    let extra = [
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
    let step = u64::MAX / count;
    let mut walk = Vec::new();
    let mut bits: u64 = 12_345;
    while let Some(next) = bits.checked_add(step) {
        walk.push(f64::from_bits(bits));
        bits = next;
    }
    inputs(&extra, walk)
}

/// `x.v_softplus(2, 20)`, one of the functions [`vectorized_equals_scalar`]
/// checks.
#[inline(always)]
fn softplus<T: Float>(x: T) -> T {
    x.v_softplus(T::from(2.0), T::from(20.0))
}

/// `x.v_elu(1.5)`, as [`softplus`].
#[inline(always)]
fn elu<T: Float>(x: T) -> T {
    x.v_elu(T::from(1.5))
}

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
fn same_bits<T: Float>(name: &str, xs: &[T], f: fn(T) -> T, wide: &[T]) {
    let f = std::hint::black_box(f);
    for (&x, &w) in xs.iter().zip(wide) {
        let s = f(x);
        let both_nan = s.nan() && w.nan();
        assert!(
            both_nan || s.bits() == w.bits(),
            "{name}({x:?}): scalar {s:?}, vectorized {w:?}"
        );
    }
}

/// [`same_bits`] for every function of [`VMath`] over `xs`, at each tier.
fn vectorized_equals_scalar<T: Float>(xs: &[T]) {
    for tier in TIERS {
        macro_rules! check {
            ($($name:literal: $f:expr),*) => {$(
                let wide = vectorized_at(
                    tier,
                    #[inline(always)]
                    || {
                        let mut out = vec![T::from(0.0); xs.len()];
                        for (o, &x) in out.iter_mut().zip(xs) {
                            *o = $f(x);
                        }
                        out
                    },
                );
                let name = format!("{}_{} ({tier:?})", $name, T::NAME);
                same_bits(&name, xs, $f, &wide);
            )*};
        }
        check!(
            "exp": T::v_exp,
            "expm1": T::v_expm1,
            "log": T::v_ln,
            "log1p": T::v_ln1p,
            "tanh": T::v_tanh,
            "sigmoid": T::v_sigmoid,
            "erf": T::v_erf,
            "gelu": T::v_gelu,
            "gelu_tanh": T::v_gelu_tanh,
            "silu": T::v_silu,
            "softplus": softplus::<T>,
            "elu": elu::<T>
        );
    }
}

pub(crate) fn vectorized_equals_scalar_f32() {
    vectorized_equals_scalar(&inputs_f32(40_009));
}

pub(crate) fn vectorized_equals_scalar_f64() {
    vectorized_equals_scalar(&inputs_f64(100_000));
}

/// The distance from `y` to the reference `r` in ulps of `T` at `r` (the
/// spacing of `T`'s values around `r`, the smallest subnormal's among the
/// subnormals). Both NaN, or equal (infinities included), is 0; one NaN, or
/// an infinity against a finite value, is infinite. (For f64, `r` is itself
/// rounded, correctly, so the figure may be 0.5 above the true error.)
fn ulps<T: Float>(y: T, r: f64) -> f64 {
    if y.nan() || r.is_nan() {
        return if y.nan() && r.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if y.to_f64() == r {
        return 0.0;
    }
    if y.infinite() || r.is_infinite() {
        // Overflow: a reference beyond f32::MAX rounds to inf (an f64 one
        // is `r` itself, which is not `y` by now).
        return if T::from_f64(r) == y {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let e = (r.abs().log2().floor() as i32).max(T::MIN_NORMAL_EXP);
    // 2^e first: powi of a negative power divides, and 1 / 2^1024 is 0.
    let ulp = 2f64.powi(e) * 2f64.powi(-T::MANT_BITS);
    (y.to_f64() - r).abs() / ulp
}

/// The reference of `sigmoid`, in f64 (for f32: f64's rounding errors are
/// far below f32's ulp).
fn sigmoid_reference(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `(name, function, f64 reference, bound in ulp for f32, for f64)` of a
/// function with a reference.
type Case<T> = (&'static str, fn(T) -> T, fn(f64) -> f64, f64, f64);
/// A [`Case`] with the bound of one type.
type Bounded<T> = (&'static str, fn(T) -> T, fn(f64) -> f64, f64);

/// The functions with a reference: glibc (through `std`) or the `libm`
/// crate's `erf` (their errors, below 1 ulp of f64, are 2^-29 ulp of f32).
/// The f64 bound is the one against mpmath; against these references the
/// tests allow 1 more.
fn references<T: Float>() -> [Case<T>; 7] {
    [
        ("exp", T::v_exp, f64::exp, 1.0, 1.0),
        ("expm1", T::v_expm1, f64::exp_m1, 2.0, 2.0),
        ("log", T::v_ln, f64::ln, 1.0, 1.0),
        ("log1p", T::v_ln1p, f64::ln_1p, 2.0, 2.0),
        ("tanh", T::v_tanh, f64::tanh, 3.0, 3.0),
        ("sigmoid", T::v_sigmoid, sigmoid_reference, 2.5, 2.0),
        ("erf", T::v_erf, libm::erf, 2.0, 2.0),
    ]
}

/// Each of `cases`, `(name, function, reference, bound)`, within its bound
/// of its reference over `xs`.
fn accuracy<T: Float>(xs: &[T], cases: impl Iterator<Item = Bounded<T>>) {
    let mut failures = Vec::new();
    for (name, f, reference, bound) in cases {
        let mut worst = (0.0, T::from(0.0));
        for &x in xs {
            let u = ulps(f(x), reference(x.to_f64()));
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

/// Each f32 function within its stated ulps of the f64 reference over the
/// sweep (the `#[ignore]`d `accuracy_f32_exhaustive` takes every f32).
pub(crate) fn accuracy_f32() {
    let cases = references::<f32>().into_iter();
    accuracy(
        &inputs_f32(65_537),
        cases.map(|(n, f, r, bound, _)| (n, f, r, bound)),
    );
}

/// Each f64 function against glibc and the `libm` crate, which are within
/// about 1 ulp of f64 themselves, so the bound allows 1 more. (Not
/// `sigmoid`: its formula in f64 rounds several times; mpmath checks it.)
pub(crate) fn accuracy_f64_against_libm() {
    let cases = references::<f64>().into_iter().filter(|c| c.0 != "sigmoid");
    accuracy(
        &inputs_f64(200_000),
        cases.map(|(n, f, r, _, bound)| (n, f, r, bound + 1.0)),
    );
}

/// Every f32 input, for the table in the module's documentation: run with
/// `BATCHRULES_UNIT_TESTS=vmath::accuracy_f32_exhaustive cargo test --release
/// --test suite unit:: -- --ignored --nocapture`.
/// Also checks that the loop at the CPU's best tier gives the scalar call's
/// bits for every input.
pub(crate) fn accuracy_f32_exhaustive() {
    let mut failures = Vec::new();
    for (name, scalar, reference, bound, _) in references::<f32>() {
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
                let u = ulps(y, reference(x as f64));
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

/// The function `name` of [`references`] over `xs`, by the loop at the
/// CPU's best tier (with the loop and the function inlined, so it
/// vectorizes).
fn wide_f32(name: &str, xs: &[f32]) -> Vec<f32> {
    macro_rules! wide {
        ($f:path) => {
            vectorized_at(
                best_tier(),
                #[inline(always)]
                || {
                    let mut out = vec![0.0f32; xs.len()];
                    for (o, &x) in out.iter_mut().zip(xs) {
                        *o = $f(x);
                    }
                    out
                },
            )
        };
    }
    match name {
        "exp" => wide!(fp32::exp),
        "expm1" => wide!(fp32::expm1),
        "log" => wide!(fp32::log),
        "log1p" => wide!(fp32::log1p),
        "tanh" => wide!(fp32::tanh),
        "sigmoid" => wide!(fp32::sigmoid),
        _ => wide!(fp32::erf),
    }
}

/// The f64 functions against mpmath's values, correctly rounded to f64
/// (recorded by `scripts/reference/vmath_mpmath.py`): within the stated ulps
/// plus the half ulp of the reference's rounding.
pub(crate) fn accuracy_f64_against_mpmath() {
    let table = include_str!("../../../../tests/reference/mpmath_vmath.txt");
    let functions = references::<f64>();
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
        let u = ulps(functions[i].1(x), r);
        worst[i].2 += 1;
        if beyond(u, worst[i].0) {
            worst[i].0 = u;
            worst[i].1 = x;
        }
    }
    let mut failures = Vec::new();
    for ((name, _, _, _, bound), (u, x, count)) in functions.iter().zip(&worst) {
        println!("{name} f64 against mpmath: max {u:.3} ulp at {x:e} ({count} values)");
        assert!(*count > 500, "{name}: only {count} values");
        if beyond(*u, bound + 0.5) {
            failures.push(format!("{name}: {u} ulps at {x:e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// Nanoseconds per element of `run` over an output as long as `xs`.
fn time<T: Float>(xs: &[T], run: &mut dyn FnMut(&mut [T])) -> f64 {
    let rounds = 2000;
    let mut out = vec![T::from(0.0); xs.len()];
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        run(&mut out);
        std::hint::black_box(&mut out);
    }
    start.elapsed().as_secs_f64() * 1e9 / (rounds * xs.len()) as f64
}

/// One row of [`throughput`]'s table: nanoseconds per element over `$xs`
/// of `$libm` (through `vectorized`, where it stays a call) and of `$f` at
/// each tier. A macro, not a generic function, so that each tier's loop
/// calls `$f` by its path and inlines it: passed as an `impl Fn`, f64's
/// `erf` (the largest function) was left out of line, the loop calling a
/// copy compiled for the baseline, and measured several times slower.
macro_rules! throughput_row {
    ($name:literal, $xs:expr, $libm:expr, $f:path) => {{
        let xs = $xs;
        let libm = time(xs, &mut |o| {
            vectorized(|| {
                for (o, &x) in o.iter_mut().zip(xs) {
                    *o = $libm(x);
                }
            })
        });
        let mut cells = vec![format!("{:>6.2}", libm)];
        for tier in TIERS {
            let t = time(xs, &mut |o| {
                vectorized_at(
                    tier,
                    #[inline(always)]
                    || {
                        for (o, &x) in o.iter_mut().zip(xs) {
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

/// Nanoseconds per element of each function: the libm call of `std` (or
/// of the `libm` crate) and this module's function at each tier. Run with
/// `BATCHRULES_UNIT_TESTS=vmath::throughput cargo test --release --test
/// suite unit:: -- --ignored --nocapture`.
pub(crate) fn throughput() {
    let xs: Vec<f32> = (0..4096).map(|i| (i as f32 - 2048.0) * 0.003).collect();
    let xs64: Vec<f64> = xs.iter().map(|&x| f64::from(x)).collect();
    macro_rules! table {
        ($t:ident, $m:ident, $xs:expr, $erf:path) => {
            println!(
                "{} ns/element: libm, then baseline, avx2+fma, avx-512",
                stringify!($t)
            );
            throughput_row!("exp", $xs, $t::exp, $m::exp);
            throughput_row!("expm1", $xs, $t::exp_m1, $m::expm1);
            throughput_row!("log", $xs, $t::ln, $m::log);
            throughput_row!("log1p", $xs, $t::ln_1p, $m::log1p);
            throughput_row!("tanh", $xs, $t::tanh, $m::tanh);
            throughput_row!(
                "sigmoid",
                $xs,
                |x: $t| 1.0 / (1.0 + (-x).exp()),
                $m::sigmoid
            );
            throughput_row!("erf", $xs, $erf, $m::erf);
        };
    }
    table!(f32, fp32, &xs, libm::erff);
    table!(f64, fp64, &xs64, libm::erf);
}

/// The logical-shift forms of the arithmetic shifts of i64 (for AVX2, which
/// has none) give the shift's results over their whole domain.
pub(crate) fn shifts_without_an_arithmetic_shift_of_i64() {
    for n in -4096i64..=4096 {
        assert_eq!(fp64::half(n), n >> 1, "{n}");
    }
    // Every exponent of a positive normal f64, with mantissas on both sides
    // of sqrt(1/2).
    for e in 1u64..2047 {
        for m in [0u64, 0x6a09e667f3bcc, 0x6a09e667f3bcd, (1 << 52) - 1] {
            let x = f64::from_bits(e << 52 | m);
            let bits = x.to_bits() as i64;
            let k = bits.wrapping_sub(fp64::SQRT_HALF_BITS) >> 52;
            let (kf, f) = fp64::split(x);
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
