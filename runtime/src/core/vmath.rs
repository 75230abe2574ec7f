//! Elementwise math that vectorizes: `exp`, `expm1`, `log`, `log1p`, `tanh`,
//! `sigmoid`, `erf`, the two GELUs, `silu`, `softplus` and `elu`, for f32 and
//! f64.
//!
//! # Design: one scalar function per op, the same bits on every path
//!
//! Each function is plain Rust over one element, written so that the compiler
//! can vectorize a loop that calls it:
//!
//! - no branches: both sides of a case are computed and one is picked with a
//!   select (`sel`, an `if` over two computed values, which LLVM turns into a
//!   blend), and boolean conditions combine with `&`/`|`, not `&&`/`||`;
//! - no libm calls and no table look-ups (no gathers);
//! - range reduction rounds with the magic-constant trick (`x + 1.5 * 2^52 -
//!   1.5 * 2^52` rounds `x` to an integer in the current rounding mode) and
//!   reads the integer back from the sum's bits, instead of `round()` and a
//!   float-to-int conversion (which AVX2 has no f64 form of);
//! - `2^n` is built from bits (`(n + bias) << mantissa bits`), in two halves so
//!   that every factor is a normal number: `p * 2^n1 * 2^n2` overflows and
//!   underflows (to subnormals, with one rounding) exactly where `p * 2^n`
//!   does;
//! - polynomials are evaluated by Horner's rule with separate multiplies and
//!   adds, never `mul_add`: Rust does not contract `a * b + c` into a fused
//!   multiply-add, so the scalar code compiled for SSE2 and the same code
//!   compiled for AVX2+FMA (by [`super::simd::vectorized`]) or AVX-512 (by `vectorized_at`) perform
//!   the same IEEE operations in the same order and round the same way.
//!
//! So the vectorized loops give the scalar function's result bit for bit, by
//! construction; `tests` checks it on every function over dense sweeps and
//! the special values. (NaN results are NaN on every path; their payload bits
//! are not specified, as in IEEE 754.)
//!
//! Special values are selected explicitly: ±0 keep their sign where the
//! function is odd (`tanh`, `erf`, `expm1`, `log1p`), subnormal inputs are
//! scaled into the normal range (`log`), arguments are clamped before the
//! reduction so that the integer `n` stays small for every input (±inf,
//! huge values), and NaN propagates (every clamp is a select that a NaN fails,
//! so the NaN reaches the arithmetic).
//!
//! # Accuracy
//!
//! The largest error found, in units in the last place of the result: f32
//! against the f64 function of glibc (or the `libm` crate's `erf`), over
//! every f32 (`tests::accuracy_f32_exhaustive`) and a sweep of the whole
//! range that the default tests run; f64 against mpmath at 60 digits,
//! correctly rounded (`tests/reference/mpmath_vmath.txt`, recorded by
//! `scripts/reference/vmath_mpmath.py`; a figure may be 0.5 above the true
//! error), and against glibc over 200,000 bit patterns. The tests check
//! the bound of the last column; the full table is in `docs/benchmarks.md`,
//! "Vectorized elementwise math".
//!
//! | function | f32 | f64 | bound tested |
//! |---|---|---|---|
//! | `exp` | 0.95 | 1 | 1 |
//! | `expm1` | 1.45 | 1 (2 against glibc) | 2 |
//! | `log` | 0.83 | 1 | 1 |
//! | `log1p` | 0.86 | 1 | 2 |
//! | `tanh` | 2.42 | 2 | 3 |
//! | `sigmoid` | 2.40 | 1 | f32 2.5, f64 2 |
//! | `erf` | 0.94 (sweep) | 1 | 2 |
//!
//! The composites (`gelu`, `gelu_tanh`, `silu`, `softplus`, `elu`) are
//! evaluated in the order of operations of PyTorch's formulas (and of this
//! crate's decompositions), so their error is that of their parts.

/// `a` if `c`, else `b`: both are computed; LLVM emits a blend.
#[inline(always)]
fn sel<T>(c: bool, a: T, b: T) -> T {
    if c {
        a
    } else {
        b
    }
}

/// Horner's rule over `c` (highest degree first), with separate multiplies
/// and adds. The loop has a constant trip count and is unrolled.
#[inline(always)]
fn horner<T: Copy + core::ops::Mul<Output = T> + core::ops::Add<Output = T>, const N: usize>(
    x: T,
    c: &[T; N],
) -> T {
    let mut acc = c[0];
    let mut i = 1;
    while i < N {
        acc = acc * x + c[i];
        i += 1;
    }
    acc
}

// ---------------------------------------------------------------------------
// f32

/// `ln 2` split: the high part has 16 significant bits, so `n * LN2_HI` is
/// exact for `|n| < 2^8`.
const LN2_HI_F32: f32 = 0.693_145_75;
const LN2_LO_F32: f32 = 1.428_606_8e-6;
/// 1.5 * 2^23: adding it rounds an f32 of magnitude below 2^22 to an integer.
const ROUND_F32: f32 = 12_582_912.0;
/// The bits of `sqrt(1/2)` (f32).
const SQRT_HALF_BITS_F32: i32 = 0x3f35_04f3;

/// `2^n` for `-126 <= n <= 127`, from its bits.
#[inline(always)]
fn pow2_f32(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// Reduces `x` (already clamped to `[-104, 89]`, or NaN) to `(r, n)` with
/// `x = n ln 2 + r`, `|r| <= ln 2 / 2`.
#[inline(always)]
fn reduce_f32(x: f32) -> (f32, i32) {
    let t = x * core::f32::consts::LOG2_E + ROUND_F32;
    let nf = t - ROUND_F32;
    let n = (t.to_bits() as i32).wrapping_sub(ROUND_F32.to_bits() as i32);
    let r = (x - nf * LN2_HI_F32) - nf * LN2_LO_F32;
    (r, n)
}

/// `e^r - 1` for `|r| <= ln 2 / 2`: Taylor to degree 8.
#[inline(always)]
fn expm1_poly_f32(r: f32) -> f32 {
    const C: [f32; 7] = [
        1.0 / 40320.0,
        1.0 / 5040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];
    r + (r * r) * horner(r, &C)
}

/// `p * 2^n` for `-152 <= n <= 130`, in two normal factors.
#[inline(always)]
fn scale_f32(p: f32, n: i32) -> f32 {
    let n1 = n >> 1;
    p * pow2_f32(n1) * pow2_f32(n.wrapping_sub(n1))
}

/// `e^x` (f32).
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    // exp(89) overflows, exp(-104) rounds to 0.
    let x = sel(x > 89.0, 89.0, x);
    let x = sel(x < -104.0, -104.0, x);
    let (r, n) = reduce_f32(x);
    scale_f32(1.0 + expm1_poly_f32(r), n)
}

/// `e^x - 1` (f32), accurate near 0.
#[inline(always)]
pub(crate) fn expm1_f32(x: f32) -> f32 {
    // expm1(x) rounds to -1 below -17.4; the clamp keeps 2^-n normal.
    let c = sel(x > 89.0, 89.0, x);
    let c = sel(c < -20.0, -20.0, c);
    let (r, n) = reduce_f32(c);
    // 2^n (e^r - 1) + (2^n - 1) = 2^n (e^r - 1 + (1 - 2^-n)).
    // 1 - 2^-n rounds to 1 for n > 24: -n is kept in pow2's range.
    let q = expm1_poly_f32(r) + (1.0 - pow2_f32(sel(n > 126, -126, n.wrapping_neg())));
    let y = scale_f32(q, n);
    // Keeps the sign of -0 (the sum above gives +0).
    sel(x == 0.0, x, y)
}

/// `ln(1 + f) - f` for `m = 1 + f` in `[sqrt(1/2), sqrt(2))`, returned as
/// the pieces `(f, hfsq, s * (hfsq + R))` of `ln(1 + f) = f - (hfsq - s
/// (hfsq + R))`, where `s = f / (2 + f)` and `R` is the tail of `2
/// atanh(s)`'s series.
#[inline(always)]
fn log_parts_f32(m: f32) -> (f32, f32, f32) {
    const C: [f32; 5] = [2.0 / 11.0, 2.0 / 9.0, 2.0 / 7.0, 2.0 / 5.0, 2.0 / 3.0];
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner(z, &C);
    let hfsq = 0.5 * f * f;
    (f, hfsq, s * (hfsq + r))
}

/// `x = 2^k m` with `m` in `[sqrt(1/2), sqrt(2))`, for a positive normal `x`
/// (other inputs give values the callers discard).
#[inline(always)]
fn split_f32(x: f32) -> (i32, f32) {
    let bits = x.to_bits() as i32;
    let k = bits.wrapping_sub(SQRT_HALF_BITS_F32) >> 23;
    (k, f32::from_bits(bits.wrapping_sub(k << 23) as u32))
}

/// `ln x` (f32).
#[inline(always)]
pub(crate) fn log_f32(x: f32) -> f32 {
    let tiny = x < f32::MIN_POSITIVE;
    let xs = x * sel(tiny, 33_554_432.0, 1.0); // 2^25
    let (k, m) = split_f32(xs);
    let kf = k as f32 - sel(tiny, 25.0, 0.0);
    let (f, hfsq, t) = log_parts_f32(m);
    let y = kf * LN2_HI_F32 + (f - (hfsq - (t + kf * LN2_LO_F32)));
    let special = sel(x == 0.0, f32::NEG_INFINITY, sel(x < 0.0, f32::NAN, x));
    sel((x > 0.0) & (x < f32::INFINITY), y, special)
}

/// `ln(1 + x)` (f32), accurate near 0.
#[inline(always)]
pub(crate) fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    // The rounding error of u (Fast2Sum, the larger operand first).
    let err = sel(x > 1.0, 1.0 - (u - x), x - (u - 1.0));
    let (k, m) = split_f32(u);
    let kf = k as f32;
    let (f, hfsq, t) = log_parts_f32(m);
    let y = kf * LN2_HI_F32 + (f - (hfsq - (t + (kf * LN2_LO_F32 + err / u))));
    let special = sel(x == -1.0, f32::NEG_INFINITY, sel(x < -1.0, f32::NAN, x));
    let y = sel((x > -1.0) & (x < f32::INFINITY), y, special);
    // log1p(x) rounds to x below 2^-25, and ±0 keep their sign.
    sel(x.abs() < 2.980_232_2e-8, x, y)
}

/// `x` with the sign bit of `s` set on it (`x >= 0` or NaN).
#[inline(always)]
fn with_sign_f32(x: f32, s: f32) -> f32 {
    f32::from_bits(x.to_bits() | (s.to_bits() & 0x8000_0000))
}

/// `tanh x` (f32): `e / (e + 2)` with `e = expm1(2|x|)`, signed.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    // tanh rounds to ±1 beyond 9.01.
    let a = x.abs();
    let a = sel(a > 10.0, 10.0, a);
    let e = expm1_f32(a + a);
    with_sign_f32(e / (e + 2.0), x)
}

/// `1 / (1 + e^-x)` (f32): `e^x / (1 + e^x)` for negative `x`, so the result
/// is accurate (and subnormal, not 0) far into the negative range.
#[inline(always)]
pub(crate) fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_f32(-x.abs());
    sel(x >= 0.0, 1.0, e) / (1.0 + e)
}

// Fitted by scripts/reference/fit_erf.py.
/// `erf(x) / x - 1` as a polynomial in `x^2` on `|x| < 1` (max error 1.2e-9).
const ERF_HEAD_F32: [f32; 7] = [
    7.875_875e-5,
    -0.000_801_686_43,
    0.005_189_087_2,
    -0.026_854_211,
    0.112_835_94,
    -0.376_126_26,
    0.128_379_17,
];
/// `x e^(x^2) erfc(x)` as a polynomial in `u = (1/x - 0.625) / 0.375` on `1 <=
/// x <= 4` (max error 2.7e-9).
const ERF_TAIL_F32: [f32; 10] = [
    -7.013_177_8e-6,
    2.147_800_8e-5,
    -2.565_789_7e-5,
    -3.123_759_2e-5,
    0.000_367_912_32,
    -0.001_542_151_4,
    0.003_802_250_1,
    -0.000_182_177_86,
    -0.064_344_62,
    0.489_524_78,
];

/// `erf x` (f32).
#[inline(always)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    // x + x q: the rounding errors of q count at q's size, not x's.
    let head = a + a * horner(a * a, &ERF_HEAD_F32);
    // erf rounds to 1 beyond 3.92.
    let at = sel(a > 4.0, 4.0, a);
    let t = 1.0 / at;
    let u = (t - 0.625) / 0.375;
    let erfc = exp_f32(-(at * at)) * t * horner(u, &ERF_TAIL_F32);
    let y = sel(a < 1.0, head, 1.0 - erfc);
    with_sign_f32(y, x)
}

// ---------------------------------------------------------------------------
// f64

/// `ln 2` split: the high part has 42 significant bits, so `n * LN2_HI` is
/// exact for `|n| < 2^11`.
const LN2_HI_F64: f64 = 0.693_147_180_559_890_3;
const LN2_LO_F64: f64 = 5.497_923_018_708_371e-14;
/// 1.5 * 2^52: adding it rounds an f64 of magnitude below 2^51 to an integer.
const ROUND_F64: f64 = 6_755_399_441_055_744.0;
/// The bits of `sqrt(1/2)` (f64).
const SQRT_HALF_BITS_F64: i64 = 0x3fe6_a09e_667f_3bcd;

/// `2^n` for `-1022 <= n <= 1023`, from its bits.
#[inline(always)]
fn pow2_f64(n: i64) -> f64 {
    f64::from_bits((n.wrapping_add(1023) as u64) << 52)
}

/// `k` as an f64 for `|k| < 2^51`, without a conversion instruction (AVX2
/// has none from i64): the integer added to the bits of 1.5 * 2^52.
#[inline(always)]
fn int_to_f64(k: i64) -> f64 {
    f64::from_bits(ROUND_F64.to_bits().wrapping_add(k as u64)) - ROUND_F64
}

/// Reduces `x` (already clamped to `[-746, 710]`, or NaN) to `(r, n)` with
/// `x = n ln 2 + r`, `|r| <= ln 2 / 2`.
#[inline(always)]
fn reduce_f64(x: f64) -> (f64, i64) {
    let t = x * core::f64::consts::LOG2_E + ROUND_F64;
    let nf = t - ROUND_F64;
    let n = (t.to_bits() as i64).wrapping_sub(ROUND_F64.to_bits() as i64);
    let r = (x - nf * LN2_HI_F64) - nf * LN2_LO_F64;
    (r, n)
}

/// `e^r - 1` for `|r| <= ln 2 / 2`: Taylor to degree 13.
#[inline(always)]
fn expm1_poly_f64(r: f64) -> f64 {
    const C: [f64; 12] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];
    r + (r * r) * horner(r, &C)
}

/// `p * 2^n` for `-1078 <= n <= 1026`, in two normal factors.
#[inline(always)]
fn scale_f64(p: f64, n: i64) -> f64 {
    let n1 = half_floor(n);
    p * pow2_f64(n1) * pow2_f64(n.wrapping_sub(n1))
}

/// `n >> 1` (rounding down) for `|n| <= 4096`, with a logical shift: AVX2
/// has no arithmetic shift of 64-bit lanes, and the `>>` of an i64 left
/// `exp_f64`'s loops partly scalar.
#[inline(always)]
fn half_floor(n: i64) -> i64 {
    ((n.wrapping_add(4096) as u64 >> 1) as i64).wrapping_sub(2048)
}

/// `e^x` (f64).
#[inline(always)]
pub(crate) fn exp_f64(x: f64) -> f64 {
    // exp(710) overflows, exp(-746) rounds to 0.
    let x = sel(x > 710.0, 710.0, x);
    let x = sel(x < -746.0, -746.0, x);
    let (r, n) = reduce_f64(x);
    scale_f64(1.0 + expm1_poly_f64(r), n)
}

/// `e^x - 1` (f64), accurate near 0.
#[inline(always)]
pub(crate) fn expm1_f64(x: f64) -> f64 {
    // expm1(x) rounds to -1 below -37.4; the clamp keeps 2^-n normal.
    let c = sel(x > 710.0, 710.0, x);
    let c = sel(c < -50.0, -50.0, c);
    let (r, n) = reduce_f64(c);
    let q = expm1_poly_f64(r) + (1.0 - pow2_f64(sel(n > 1022, -1022, n.wrapping_neg())));
    let y = scale_f64(q, n);
    sel(x == 0.0, x, y)
}

/// As [`log_parts_f32`], for f64.
#[inline(always)]
fn log_parts_f64(m: f64) -> (f64, f64, f64) {
    const C: [f64; 11] = [
        2.0 / 23.0,
        2.0 / 21.0,
        2.0 / 19.0,
        2.0 / 17.0,
        2.0 / 15.0,
        2.0 / 13.0,
        2.0 / 11.0,
        2.0 / 9.0,
        2.0 / 7.0,
        2.0 / 5.0,
        2.0 / 3.0,
    ];
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner(z, &C);
    let hfsq = 0.5 * f * f;
    (f, hfsq, s * (hfsq + r))
}

/// As [`split_f32`], for f64 (`k` returned as an f64).
#[inline(always)]
fn split_f64(x: f64) -> (f64, f64) {
    let bits = x.to_bits() as i64;
    // `(bits - SQRT_HALF_BITS_F64) >> 52`, arithmetic, written with a
    // logical shift (AVX2 has no arithmetic shift of 64-bit lanes, so the
    // `>>` of an i64 leaves part of the loop scalar, as in `half_floor`):
    // the offset 2^63 makes the value non-negative, and 2048 = 2^63 >> 52
    // comes off again.
    let shifted = (bits.wrapping_sub(SQRT_HALF_BITS_F64) as u64).wrapping_add(1 << 63) >> 52;
    let k = (shifted as i64).wrapping_sub(2048);
    (
        int_to_f64(k),
        f64::from_bits(bits.wrapping_sub(k << 52) as u64),
    )
}

/// `ln x` (f64).
#[inline(always)]
pub(crate) fn log_f64(x: f64) -> f64 {
    let tiny = x < f64::MIN_POSITIVE;
    let xs = x * sel(tiny, 18_014_398_509_481_984.0, 1.0); // 2^54
    let (kf, m) = split_f64(xs);
    let kf = kf - sel(tiny, 54.0, 0.0);
    let (f, hfsq, t) = log_parts_f64(m);
    let y = kf * LN2_HI_F64 + (f - (hfsq - (t + kf * LN2_LO_F64)));
    let special = sel(x == 0.0, f64::NEG_INFINITY, sel(x < 0.0, f64::NAN, x));
    sel((x > 0.0) & (x < f64::INFINITY), y, special)
}

/// `ln(1 + x)` (f64), accurate near 0.
#[inline(always)]
pub(crate) fn log1p_f64(x: f64) -> f64 {
    let u = 1.0 + x;
    let err = sel(x > 1.0, 1.0 - (u - x), x - (u - 1.0));
    let (kf, m) = split_f64(u);
    let (f, hfsq, t) = log_parts_f64(m);
    let y = kf * LN2_HI_F64 + (f - (hfsq - (t + (kf * LN2_LO_F64 + err / u))));
    let special = sel(x == -1.0, f64::NEG_INFINITY, sel(x < -1.0, f64::NAN, x));
    let y = sel((x > -1.0) & (x < f64::INFINITY), y, special);
    // log1p(x) rounds to x below 2^-54, and ±0 keep their sign.
    sel(x.abs() < 5.551_115_123_125_783e-17, x, y)
}

/// `x` with the sign bit of `s` set on it (`x >= 0` or NaN).
#[inline(always)]
fn with_sign_f64(x: f64, s: f64) -> f64 {
    f64::from_bits(x.to_bits() | (s.to_bits() & 0x8000_0000_0000_0000))
}

/// `tanh x` (f64).
#[inline(always)]
pub(crate) fn tanh_f64(x: f64) -> f64 {
    // tanh rounds to ±1 beyond 19.06.
    let a = x.abs();
    let a = sel(a > 20.0, 20.0, a);
    let e = expm1_f64(a + a);
    with_sign_f64(e / (e + 2.0), x)
}

/// `1 / (1 + e^-x)` (f64), as [`sigmoid_f32`].
#[inline(always)]
pub(crate) fn sigmoid_f64(x: f64) -> f64 {
    let e = exp_f64(-x.abs());
    sel(x >= 0.0, 1.0, e) / (1.0 + e)
}

// Fitted by scripts/reference/fit_erf.py.
/// `erf(x) / x - 1` as a polynomial in `x^2` on `|x| < 1` (max error 7.4e-18).
const ERF_HEAD_F64: [f64; 12] = [
    -7.795_898_827_002_142e-10,
    1.372_006_454_677_768_6e-8,
    -1.620_848_380_187_170_5e-7,
    1.644_742_470_331_736_2e-6,
    -1.492_473_690_741_966e-5,
    0.000_120_552_949_048_397_07,
    -0.000_854_832_597_538_969_2,
    0.005_223_977_607_116_422_5,
    -0.026_866_170_643_237_77,
    0.112_837_916_709_450_06,
    -0.376_126_389_031_835_43,
    0.128_379_167_095_512_56,
];
/// `x e^(x^2) erfc(x)` as a polynomial in `u = (1/x - 7/12) / (5/12)` on `1
/// <= x <= 6` (max error 9.2e-17).
const ERF_TAIL_F64: [f64; 24] = [
    1.409_368_737_250_820_4e-9,
    -2.433_890_074_703_672e-9,
    -5.503_330_673_720_928e-9,
    1.394_888_235_332_798_7e-8,
    -5.082_298_579_087_09e-9,
    1.754_055_555_532_836_7e-9,
    -1.710_181_768_983_937_6e-8,
    -1.298_921_889_280_26e-8,
    1.571_094_967_489_495e-7,
    -4.539_456_849_215_286_7e-7,
    9.229_601_666_813_976e-7,
    -1.285_223_426_994_686_5e-6,
    2.138_165_801_643_861_5e-7,
    5.898_867_657_069_7e-6,
    -2.385_564_389_256_323e-5,
    5.951_651_375_038_817_6e-5,
    -9.303_469_947_921_05e-5,
    -2.439_040_207_200_168_4e-6,
    0.000_640_867_749_409_145_6,
    -0.002_669_343_030_631_186,
    0.006_219_717_587_559_677,
    -0.001_936_888_067_706_188_9,
    -0.071_282_877_925_474_01,
    0.496_666_485_125_938_75,
];

/// `erf x` (f64).
#[inline(always)]
pub(crate) fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    let head = a + a * horner(a * a, &ERF_HEAD_F64);
    // erf rounds to 1 beyond 5.92.
    let at = sel(a > 6.0, 6.0, a);
    let t = 1.0 / at;
    let u = (t * 12.0 - 7.0) / 5.0;
    let erfc = exp_f64(-(at * at)) * t * horner(u, &ERF_TAIL_F64);
    let y = sel(a < 1.0, head, 1.0 - erfc);
    with_sign_f64(y, x)
}

// ---------------------------------------------------------------------------
// Both types

/// The functions of this module as methods of the element type, for kernels
/// generic over f32 and f64 (`map_float!` instantiates its closure for both).
pub(crate) trait VMath: Copy {
    /// `e^x`.
    fn v_exp(self) -> Self;
    /// `ln x`.
    fn v_ln(self) -> Self;
    /// `ln(1 + x)`.
    fn v_ln1p(self) -> Self;
    /// `tanh x`.
    fn v_tanh(self) -> Self;
    /// `1 / (1 + e^-x)`.
    fn v_sigmoid(self) -> Self;
    /// `erf x`.
    fn v_erf(self) -> Self;
    // The GELUs and `silu` are composites today (batched and differentiated
    // through their decompositions, whose `erf`, `tanh` and `sigmoid` are
    // this module's): these fused forms give the decompositions' bits, for a
    // fused kernel, and are tested with the rest.
    /// The exact GELU in the decomposition's order: `(x * 0.5) * (1 + erf(x
    /// * (1/sqrt 2)))`.
    #[cfg_attr(not(test), allow(dead_code))]
    fn v_gelu(self) -> Self;
    /// The tanh GELU in the decomposition's order: `(x * 0.5) * (1 +
    /// tanh(sqrt(2/pi) * (x + 0.044715 * (x * x * x))))`.
    #[cfg_attr(not(test), allow(dead_code))]
    fn v_gelu_tanh(self) -> Self;
    /// `x * sigmoid(x)`.
    #[cfg_attr(not(test), allow(dead_code))]
    fn v_silu(self) -> Self;
    /// `x` where `beta * x > threshold`, else `log1p(exp(beta * x)) / beta`.
    fn v_softplus(self, beta: Self, threshold: Self) -> Self;
    /// `x` where `x > 0`, else `alpha * expm1(x)`.
    fn v_elu(self, alpha: Self) -> Self;
}

macro_rules! vmath_impl {
    ($t:ty, $exp:ident, $expm1:ident, $log:ident, $log1p:ident, $tanh:ident,
     $sigmoid:ident, $erf:ident, $consts:ident) => {
        impl VMath for $t {
            #[inline(always)]
            fn v_exp(self) -> $t {
                $exp(self)
            }
            #[inline(always)]
            fn v_ln(self) -> $t {
                $log(self)
            }
            #[inline(always)]
            fn v_ln1p(self) -> $t {
                $log1p(self)
            }
            #[inline(always)]
            fn v_tanh(self) -> $t {
                $tanh(self)
            }
            #[inline(always)]
            fn v_sigmoid(self) -> $t {
                $sigmoid(self)
            }
            #[inline(always)]
            fn v_erf(self) -> $t {
                $erf(self)
            }
            #[inline(always)]
            fn v_gelu(self) -> $t {
                (self * 0.5) * (1.0 + $erf(self * core::$consts::consts::FRAC_1_SQRT_2))
            }
            #[inline(always)]
            fn v_gelu_tanh(self) -> $t {
                // sqrt(2) * (2 / sqrt(pi)) * 0.5, rounded once from f64, as
                // the decomposition's constant.
                let beta =
                    (core::f64::consts::SQRT_2 * core::f64::consts::FRAC_2_SQRT_PI * 0.5) as $t;
                let cube = (self * self) * self;
                (self * 0.5) * (1.0 + $tanh(beta * (self + (0.044715 as $t) * cube)))
            }
            #[inline(always)]
            fn v_silu(self) -> $t {
                self * $sigmoid(self)
            }
            #[inline(always)]
            fn v_softplus(self, beta: $t, threshold: $t) -> $t {
                let bx = self * beta;
                sel(bx > threshold, self, $log1p($exp(bx)) / beta)
            }
            #[inline(always)]
            fn v_elu(self, alpha: $t) -> $t {
                sel(self > 0.0, self, alpha * $expm1(self))
            }
        }
    };
}

vmath_impl!(
    f32,
    exp_f32,
    expm1_f32,
    log_f32,
    log1p_f32,
    tanh_f32,
    sigmoid_f32,
    erf_f32,
    f32
);
vmath_impl!(
    f64,
    exp_f64,
    expm1_f64,
    log_f64,
    log1p_f64,
    tanh_f64,
    sigmoid_f64,
    erf_f64,
    f64
);

#[cfg(feature = "unit-tests")]
pub(crate) mod tests;
