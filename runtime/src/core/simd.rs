//! Wider vector instructions for the elementwise loops, chosen at run time.
//!
//! The crate is compiled for the target's baseline (on x86-64: SSE2, four
//! f32 lanes, no FMA), so that it runs on every CPU of the target. Kernels
//! whose loops vectorize run them through [`vectorized`], which, on an x86-64
//! CPU with AVX2 and FMA, calls them from a function compiled for those
//! features: the loop, inlined there, is compiled again with eight f32 lanes.
//! Elsewhere the closure runs as compiled. An AVX-512 tier exists
//! ([`Tier::Avx512`], through [`vectorized_at`]): `core::vmath`'s functions
//! alone ran 1.5-2.5x faster there than with AVX2 on an AMD EPYC, but other
//! kernels compiled for it were slower (see [`vectorized`]), so no kernel
//! uses it yet.
//!
//! [`vectorized_at`] runs a closure at a chosen [`Tier`] (never above what the
//! CPU has), so tests can compare every tier's results with the plain
//! scalar code's, and measurements can compare the tiers.

/// Runs `f`, compiled for AVX2 and FMA when the CPU has them (x86-64).
///
/// Only code inlined into `f` benefits: helpers it calls should be small or
/// `#[inline(always)]`. The results are the same either way, up to the
/// rounding of operations the compiler may fuse (it does not fuse a multiply
/// and an add unless the code asks for `mul_add`).
#[inline(always)]
pub(crate) fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    // AVX2+FMA, not AVX-512: at the AVX-512 tier W8's outer products
    // (`gemm::outer_products`) ran 6x slower and W1 and W11 10-30% slower in
    // the same sitting (AMD EPYC, 2026-12-07), which the vector math's gain
    // there (about 1.3x on `tanh`, where the whole W12 spends under 6% in
    // elementwise code) does not pay for. The results are the same bits at
    // every tier.
    vectorized_at(Tier::Avx2Fma, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn with_avx2_fma<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// The instruction sets a closure can be compiled for (on x86-64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    /// The target's baseline (SSE2 on x86-64).
    Baseline,
    /// AVX2 and FMA: eight f32 lanes.
    Avx2Fma,
    /// AVX-512 (F, DQ, BW, VL) with AVX2 and FMA: sixteen f32 lanes, mask
    /// registers, and conversions between i64 and f64.
    Avx512,
}

/// The highest [`Tier`] this CPU has.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn best_tier() -> Tier {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            return Tier::Avx512;
        }
        if has_avx2_fma() {
            return Tier::Avx2Fma;
        }
    }
    Tier::Baseline
}

/// Runs `f` compiled for `tier`, or for the highest tier below it that the
/// CPU has. [`vectorized`] is this at the highest tier; tests and
/// measurements choose lower ones.
#[inline(always)]
pub(crate) fn vectorized_at<R>(tier: Tier, f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if tier >= Tier::Avx512 && has_avx512() {
            // SAFETY: the CPU has every feature the function is compiled
            // for (checked just above), the only requirement of calling it.
            return unsafe { with_avx512(f) };
        }
        if tier >= Tier::Avx2Fma && has_avx2_fma() {
            // SAFETY: as in `vectorized`, the CPU has AVX2 and FMA.
            return unsafe { with_avx2_fma(f) };
        }
    }
    let _ = tier;
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")]
unsafe fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Whether this CPU has the AVX-512 subsets of [`Tier::Avx512`], and AVX2
/// and FMA.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && has_avx2_fma()
}

/// Whether this CPU has AVX2 and FMA (detected once; the standard library
/// caches the answer).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

#[cfg(test)]
mod tests {
    use super::{vectorized, vectorized_at, Tier};

    #[test]
    fn vectorized_gives_what_the_closure_gives() {
        let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37 - 100.0).collect();
        let plain: Vec<f32> = xs.iter().map(|&x| x * 1.5 + 2.0).collect();
        let wide = vectorized(|| xs.iter().map(|&x| x * 1.5 + 2.0).collect::<Vec<f32>>());
        assert_eq!(plain, wide);
        for tier in [Tier::Baseline, Tier::Avx2Fma, Tier::Avx512] {
            let at = vectorized_at(tier, || {
                xs.iter().map(|&x| x * 1.5 + 2.0).collect::<Vec<f32>>()
            });
            assert_eq!(plain, at, "{tier:?}");
        }
    }
}
