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
//! The algorithms are written once for both types, by `float_functions!`,
//! which the modules `fp32` and `fp64` expand: the same text, so the same
//! operations in the same order. Each module gives what differs: the
//! constants (the split of `ln 2`, the clamps, the polynomials' degrees and
//! `erf`'s fitted coefficients) and three small helpers: two whose f64 forms
//! do without the instructions AVX2 lacks (an arithmetic shift of 64-bit
//! lanes, a conversion from i64 to f64), and the argument of `erf`'s tail
//! polynomial.
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
//! | `erf` | 1.34 | 1 | 2 |
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

/// The functions of this module for the float type `$t` (with `$i` and `$u`
/// the signed and unsigned integers of its width), written once and expanded
/// in `fp32` and `fp64`. Each of those modules defines first what
/// differs between the types, under the names used here:
///
/// - `LN2_HI`, `LN2_LO`: `ln 2` split so that `n * LN2_HI` is exact;
/// - `EXP_MAX`, `EXP_MIN`: the clamps of `exp`'s argument (the upper one is
///   `expm1`'s too), `EXPM1_MIN`: the lower clamp of `expm1`'s, `TANH_MAX`
///   and `ERF_MAX`: where `tanh` and `erf` have rounded to 1;
/// - `EXPM1_POLY`, `LOG_POLY`: the polynomials' lengths (their coefficients
///   are `inverse_factorials` and `odd_reciprocals`, below),
///   `ERF_HEAD` and `ERF_TAIL`: the fitted polynomials of `erf`;
/// - `half(n)`: `n >> 1`, and `split(x)`: `x = 2^k m`, whose f64 forms do
///   without the instructions AVX2 lacks (an arithmetic shift of 64-bit
///   lanes, a conversion from i64 to f64); `erf_tail_u(t)`: the argument of
///   `ERF_TAIL`.
///
/// The expansion is the same text for both types, so both do the same
/// operations in the same order; what the format fixes (the exponent's
/// bias, the significand's bits) comes from `$t`'s own constants.
macro_rules! float_functions {
    ($t:ident, $i:ident, $u:ident) => {
        /// The bits of the significand below its leading 1 (23, 52).
        const MANT_BITS: u32 = $t::MANTISSA_DIGITS - 1;
        /// The exponent's bias (127, 1023).
        const BIAS: $i = ($t::MAX_EXP - 1) as $i;
        /// The exponent of the smallest normal number (-126, -1022; `std`'s
        /// `MIN_EXP` is one more, for significands in `[0.5, 1)`).
        const MIN_EXP: $i = ($t::MIN_EXP - 1) as $i;
        /// The sign bit.
        const SIGN_BIT: $u = 1 << ($u::BITS - 1);
        /// 1.5 * 2^(mantissa bits): adding it rounds a value of magnitude
        /// below 2^(mantissa bits - 1) to an integer.
        const ROUND: $t = 1.5 * (1u64 << MANT_BITS) as $t;
        /// The bits of `sqrt(1/2)`.
        pub(super) const SQRT_HALF_BITS: $i = core::$t::consts::FRAC_1_SQRT_2.to_bits() as $i;
        /// `2^(p + 1)`, with `p` the significand's digits (24, 53): scales
        /// every subnormal into the normal range.
        const SUBNORMAL_SCALE: $t = pow2($t::MANTISSA_DIGITS as $i + 1);
        /// The exponent of `SUBNORMAL_SCALE`, as a float.
        const SUBNORMAL_EXP: $t = ($t::MANTISSA_DIGITS + 1) as $t;
        /// `2^-(p + 1)`: `log1p(x)` rounds to `x` below it.
        const LOG1P_TINY: $t = pow2(-($t::MANTISSA_DIGITS as $i + 1));

        /// `1/k!` for `k` from `N + 1` down to 2: `e^r - 1 = r + r^2 (1/2! +
        /// r/3! + ...)`, to degree `N + 1`. Each is rounded once (`k!` is
        /// exact in `$t` up to 18!).
        const fn inverse_factorials<const N: usize>() -> [$t; N] {
            let mut c = [0.0; N];
            let mut factorial: u64 = 1;
            let mut k = 2;
            while k <= N + 1 {
                factorial *= k as u64;
                c[N + 1 - k] = 1.0 / factorial as $t;
                k += 1;
            }
            c
        }

        /// `2/(2k + 1)` for `k` from `N` down to 1: the tail of `2 atanh(s) =
        /// 2s + 2s^3/3 + 2s^5/5 + ...` over `s^3`, in `z = s^2`.
        const fn odd_reciprocals<const N: usize>() -> [$t; N] {
            let mut c = [0.0; N];
            let mut i = 0;
            while i < N {
                c[i] = 2.0 / (2 * (N - i) + 1) as $t;
                i += 1;
            }
            c
        }

        /// `2^n` for `MIN_EXP <= n <= BIAS`, from its bits.
        #[inline(always)]
        const fn pow2(n: $i) -> $t {
            $t::from_bits((n.wrapping_add(BIAS) as $u) << MANT_BITS)
        }

        /// Reduces `x` (already clamped to `[EXP_MIN, EXP_MAX]`, or NaN) to
        /// `(r, n)` with `x = n ln 2 + r`, `|r| <= ln 2 / 2`.
        #[inline(always)]
        fn reduce(x: $t) -> ($t, $i) {
            let t = x * core::$t::consts::LOG2_E + ROUND;
            let nf = t - ROUND;
            let n = (t.to_bits() as $i).wrapping_sub(ROUND.to_bits() as $i);
            let r = (x - nf * LN2_HI) - nf * LN2_LO;
            (r, n)
        }

        /// `e^r - 1` for `|r| <= ln 2 / 2`.
        #[inline(always)]
        fn expm1_poly(r: $t) -> $t {
            r + (r * r) * horner(r, &EXPM1_POLY)
        }

        /// `p * 2^n` for `-152 <= n <= 130` (f32) or `-1078 <= n <= 1026`
        /// (f64), in two normal factors.
        #[inline(always)]
        fn scale(p: $t, n: $i) -> $t {
            let n1 = half(n);
            p * pow2(n1) * pow2(n.wrapping_sub(n1))
        }

        /// `e^x`.
        #[inline(always)]
        pub(crate) fn exp(x: $t) -> $t {
            let x = sel(x > EXP_MAX, EXP_MAX, x);
            let x = sel(x < EXP_MIN, EXP_MIN, x);
            let (r, n) = reduce(x);
            scale(1.0 + expm1_poly(r), n)
        }

        /// `e^x - 1`, accurate near 0.
        #[inline(always)]
        pub(crate) fn expm1(x: $t) -> $t {
            let c = sel(x > EXP_MAX, EXP_MAX, x);
            let c = sel(c < EXPM1_MIN, EXPM1_MIN, c);
            let (r, n) = reduce(c);
            // 2^n (e^r - 1) + (2^n - 1) = 2^n (e^r - 1 + (1 - 2^-n)).
            // 1 - 2^-n rounds to 1 for n > p: -n is kept in pow2's range.
            let q = expm1_poly(r) + (1.0 - pow2(sel(n > -MIN_EXP, MIN_EXP, n.wrapping_neg())));
            let y = scale(q, n);
            // Keeps the sign of -0 (the sum above gives +0).
            sel(x == 0.0, x, y)
        }

        /// `ln(1 + f) - f` for `m = 1 + f` in `[sqrt(1/2), sqrt(2))`,
        /// returned as the pieces `(f, hfsq, s * (hfsq + R))` of `ln(1 + f) =
        /// f - (hfsq - s (hfsq + R))`, where `s = f / (2 + f)` and `R` is the
        /// tail of `2 atanh(s)`'s series.
        #[inline(always)]
        fn log_parts(m: $t) -> ($t, $t, $t) {
            let f = m - 1.0;
            let s = f / (2.0 + f);
            let z = s * s;
            let r = z * horner(z, &LOG_POLY);
            let hfsq = 0.5 * f * f;
            (f, hfsq, s * (hfsq + r))
        }

        /// `ln x`.
        #[inline(always)]
        pub(crate) fn log(x: $t) -> $t {
            let tiny = x < $t::MIN_POSITIVE;
            let xs = x * sel(tiny, SUBNORMAL_SCALE, 1.0);
            let (kf, m) = split(xs);
            let kf = kf - sel(tiny, SUBNORMAL_EXP, 0.0);
            let (f, hfsq, t) = log_parts(m);
            let y = kf * LN2_HI + (f - (hfsq - (t + kf * LN2_LO)));
            let special = sel(x == 0.0, $t::NEG_INFINITY, sel(x < 0.0, $t::NAN, x));
            sel((x > 0.0) & (x < $t::INFINITY), y, special)
        }

        /// `ln(1 + x)`, accurate near 0.
        #[inline(always)]
        pub(crate) fn log1p(x: $t) -> $t {
            let u = 1.0 + x;
            // The rounding error of u (Fast2Sum, the larger operand first).
            let err = sel(x > 1.0, 1.0 - (u - x), x - (u - 1.0));
            let (kf, m) = split(u);
            let (f, hfsq, t) = log_parts(m);
            let y = kf * LN2_HI + (f - (hfsq - (t + (kf * LN2_LO + err / u))));
            let special = sel(x == -1.0, $t::NEG_INFINITY, sel(x < -1.0, $t::NAN, x));
            let y = sel((x > -1.0) & (x < $t::INFINITY), y, special);
            // ±0 keep their sign.
            sel(x.abs() < LOG1P_TINY, x, y)
        }

        /// `x` with the sign bit of `s` set on it (`x >= 0` or NaN).
        #[inline(always)]
        fn with_sign(x: $t, s: $t) -> $t {
            $t::from_bits(x.to_bits() | (s.to_bits() & SIGN_BIT))
        }

        /// `tanh x`: `e / (e + 2)` with `e = expm1(2|x|)`, signed.
        #[inline(always)]
        pub(crate) fn tanh(x: $t) -> $t {
            let a = x.abs();
            let a = sel(a > TANH_MAX, TANH_MAX, a);
            let e = expm1(a + a);
            with_sign(e / (e + 2.0), x)
        }

        /// `1 / (1 + e^-x)`: `e^x / (1 + e^x)` for negative `x`, so the
        /// result is accurate (and subnormal, not 0) far into the negative
        /// range.
        #[inline(always)]
        pub(crate) fn sigmoid(x: $t) -> $t {
            let e = exp(-x.abs());
            sel(x >= 0.0, 1.0, e) / (1.0 + e)
        }

        /// `erf x`: `x + x ERF_HEAD(x^2)` below 1, `1 - erfc x` above, with
        /// `erfc x = e^(-x^2) / x * ERF_TAIL(u)`.
        #[inline(always)]
        pub(crate) fn erf(x: $t) -> $t {
            let a = x.abs();
            // x + x q: the rounding errors of q count at q's size, not x's.
            let head = a + a * horner(a * a, &ERF_HEAD);
            let at = sel(a > ERF_MAX, ERF_MAX, a);
            let t = 1.0 / at;
            let u = erf_tail_u(t);
            let erfc = exp(-(at * at)) * t * horner(u, &ERF_TAIL);
            let y = sel(a < 1.0, head, 1.0 - erfc);
            with_sign(y, x)
        }

        impl VMath for $t {
            #[inline(always)]
            fn v_exp(self) -> $t {
                exp(self)
            }
            #[inline(always)]
            fn v_expm1(self) -> $t {
                expm1(self)
            }
            #[inline(always)]
            fn v_ln(self) -> $t {
                log(self)
            }
            #[inline(always)]
            fn v_ln1p(self) -> $t {
                log1p(self)
            }
            #[inline(always)]
            fn v_tanh(self) -> $t {
                tanh(self)
            }
            #[inline(always)]
            fn v_sigmoid(self) -> $t {
                sigmoid(self)
            }
            #[inline(always)]
            fn v_erf(self) -> $t {
                erf(self)
            }
            #[inline(always)]
            fn v_gelu(self) -> $t {
                (self * 0.5) * (1.0 + erf(self * core::$t::consts::FRAC_1_SQRT_2))
            }
            #[inline(always)]
            fn v_gelu_tanh(self) -> $t {
                // sqrt(2) * (2 / sqrt(pi)) * 0.5, rounded once from f64, as
                // the decomposition's constant.
                let beta =
                    (core::f64::consts::SQRT_2 * core::f64::consts::FRAC_2_SQRT_PI * 0.5) as $t;
                let cube = (self * self) * self;
                (self * 0.5) * (1.0 + tanh(beta * (self + (0.044715 as $t) * cube)))
            }
            #[inline(always)]
            fn v_silu(self) -> $t {
                self * sigmoid(self)
            }
            #[inline(always)]
            fn v_softplus(self, beta: $t, threshold: $t) -> $t {
                let bx = self * beta;
                sel(bx > threshold, self, log1p(exp(bx)) / beta)
            }
            #[inline(always)]
            fn v_elu(self, alpha: $t) -> $t {
                sel(self > 0.0, self, alpha * expm1(self))
            }
        }
    };
}

/// The f32 functions: what differs from f64, then `float_functions!`.
pub(crate) mod fp32 {
    use super::{horner, sel, VMath};

    /// `ln 2` split: the high part has 16 significant bits, so `n * LN2_HI`
    /// is exact for `|n| < 2^8`.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    /// exp(89) overflows, exp(-104) rounds to 0.
    const EXP_MAX: f32 = 89.0;
    const EXP_MIN: f32 = -104.0;
    /// expm1(x) rounds to -1 below -17.4; the clamp keeps 2^-n normal.
    const EXPM1_MIN: f32 = -20.0;
    /// Taylor to degree 8.
    const EXPM1_POLY: [f32; 7] = inverse_factorials();
    /// To `s^11`.
    const LOG_POLY: [f32; 5] = odd_reciprocals();
    /// tanh rounds to ±1 beyond 9.01.
    const TANH_MAX: f32 = 10.0;
    /// erf rounds to 1 beyond 3.92.
    const ERF_MAX: f32 = 4.0;

    // Fitted by scripts/reference/fit_erf.py.
    /// `erf(x) / x - 1` as a polynomial in `x^2` on `|x| < 1` (max error
    /// 1.2e-9).
    const ERF_HEAD: [f32; 7] = [
        7.875_875e-5,
        -0.000_801_686_43,
        0.005_189_087_2,
        -0.026_854_211,
        0.112_835_94,
        -0.376_126_26,
        0.128_379_17,
    ];
    /// `x e^(x^2) erfc(x)` as a polynomial in `u = (1/x - 0.625) / 0.375`
    /// on `1 <= x <= 4` (max error 2.7e-9).
    const ERF_TAIL: [f32; 10] = [
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

    /// The argument of `ERF_TAIL`: `1/x` in `[1/4, 1]` mapped onto `[-1, 1]`.
    #[inline(always)]
    fn erf_tail_u(t: f32) -> f32 {
        (t - 0.625) / 0.375
    }

    /// `n >> 1`, rounding down.
    #[inline(always)]
    fn half(n: i32) -> i32 {
        n >> 1
    }

    /// `x = 2^k m` with `m` in `[sqrt(1/2), sqrt(2))`, for a positive normal
    /// `x` (other inputs give values the callers discard); `k` as an f32.
    #[inline(always)]
    fn split(x: f32) -> (f32, f32) {
        let bits = x.to_bits() as i32;
        let k = bits.wrapping_sub(SQRT_HALF_BITS) >> 23;
        (k as f32, f32::from_bits(bits.wrapping_sub(k << 23) as u32))
    }

    float_functions!(f32, i32, u32);
}

/// The f64 functions: what differs from f32, then `float_functions!`.
pub(crate) mod fp64 {
    use super::{horner, sel, VMath};

    /// `ln 2` split: the high part has 42 significant bits, so `n * LN2_HI`
    /// is exact for `|n| < 2^11`.
    const LN2_HI: f64 = 0.693_147_180_559_890_3;
    const LN2_LO: f64 = 5.497_923_018_708_371e-14;
    /// exp(710) overflows, exp(-746) rounds to 0.
    const EXP_MAX: f64 = 710.0;
    const EXP_MIN: f64 = -746.0;
    /// expm1(x) rounds to -1 below -37.4; the clamp keeps 2^-n normal.
    const EXPM1_MIN: f64 = -50.0;
    /// Taylor to degree 13.
    const EXPM1_POLY: [f64; 12] = inverse_factorials();
    /// To `s^23`.
    const LOG_POLY: [f64; 11] = odd_reciprocals();
    /// tanh rounds to ±1 beyond 19.06.
    const TANH_MAX: f64 = 20.0;
    /// erf rounds to 1 beyond 5.92.
    const ERF_MAX: f64 = 6.0;

    // Fitted by scripts/reference/fit_erf.py.
    /// `erf(x) / x - 1` as a polynomial in `x^2` on `|x| < 1` (max error
    /// 7.4e-18).
    const ERF_HEAD: [f64; 12] = [
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
    /// `x e^(x^2) erfc(x)` as a polynomial in `u = (1/x - 7/12) / (5/12)` on
    /// `1 <= x <= 6` (max error 9.2e-17).
    const ERF_TAIL: [f64; 24] = [
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

    /// The argument of `ERF_TAIL`: `1/x` in `[1/6, 1]` mapped onto `[-1,
    /// 1]`, as `(12t - 7) / 5` (7/12 and 5/12 are not f64 values).
    #[inline(always)]
    fn erf_tail_u(t: f64) -> f64 {
        (t * 12.0 - 7.0) / 5.0
    }

    /// `n >> 1` (rounding down) for `|n| <= 4096`, with a logical shift:
    /// AVX2 has no arithmetic shift of 64-bit lanes, and the `>>` of an i64
    /// left `exp`'s loops partly scalar.
    #[inline(always)]
    pub(super) fn half(n: i64) -> i64 {
        ((n.wrapping_add(4096) as u64 >> 1) as i64).wrapping_sub(2048)
    }

    /// `k` as an f64 for `|k| < 2^51`, without a conversion instruction
    /// (AVX2 has none from i64): the integer added to the bits of 1.5 *
    /// 2^52.
    #[inline(always)]
    fn int_to_f64(k: i64) -> f64 {
        f64::from_bits(ROUND.to_bits().wrapping_add(k as u64)) - ROUND
    }

    /// As `fp32`'s `split`: `x = 2^k m` with `m` in `[sqrt(1/2),
    /// sqrt(2))`, `k` as an f64.
    #[inline(always)]
    pub(super) fn split(x: f64) -> (f64, f64) {
        let bits = x.to_bits() as i64;
        // `(bits - SQRT_HALF_BITS) >> 52`, arithmetic, written with a
        // logical shift (AVX2 has no arithmetic shift of 64-bit lanes, so
        // the `>>` of an i64 leaves part of the loop scalar, as in `half`):
        // the offset 2^63 makes the value non-negative, and 2048 = 2^63 >>
        // 52 comes off again.
        let shifted = (bits.wrapping_sub(SQRT_HALF_BITS) as u64).wrapping_add(1 << 63) >> 52;
        let k = (shifted as i64).wrapping_sub(2048);
        (
            int_to_f64(k),
            f64::from_bits(bits.wrapping_sub(k << 52) as u64),
        )
    }

    float_functions!(f64, i64, u64);
}

/// `e^x` (f32), for kernels of their own.
pub(crate) use fp32::exp as exp_f32;
/// `e^x` (f64), for kernels of their own.
pub(crate) use fp64::exp as exp_f64;

/// The functions of this module as methods of the element type, for kernels
/// generic over f32 and f64 (`map_float!` instantiates its closure for both).
pub(crate) trait VMath: Copy {
    /// `e^x`.
    fn v_exp(self) -> Self;
    /// `e^x - 1`.
    #[cfg_attr(not(test), allow(dead_code))]
    fn v_expm1(self) -> Self;
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

#[cfg(feature = "unit-tests")]
pub(crate) mod tests;
