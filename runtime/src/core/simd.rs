//! Wider vector instructions for the elementwise loops, chosen at run time.
//!
//! The crate is compiled for the target's baseline (on x86-64: SSE2, four
//! f32 lanes, no FMA), so that it runs on every CPU of the target. Kernels
//! whose loops vectorize run them through [`vectorized`], which, on an x86-64
//! CPU with AVX2 and FMA, calls them from a function compiled for those
//! features: the loop, inlined there, is compiled again with eight f32 lanes.
//! Elsewhere the closure runs as compiled. An AVX-512 tier exists
//! ([`SimdLevel::Avx512`], through [`vectorized_at`]): `core::vmath`'s functions
//! alone ran 1.5-2.5x faster there than with AVX2 on an AMD EPYC, but other
//! kernels compiled for it were slower (see [`vectorized`]), so no kernel
//! uses it yet.
//!
//! [`vectorized_at`] runs a closure at a chosen [`SimdLevel`] (never above what the
//! CPU has), so tests can compare every tier's results with the plain
//! scalar code's, and measurements can compare the tiers. Users choose the
//! tier of every kernel with [`set_simd_level`] (`batchrules::tuning`), as
//! `ATEN_CPU_CAPABILITY` does for PyTorch; the results are the same bits at
//! every tier, which `tests/suite/simd_levels.rs` checks on the ops in an
//! optimized build.
//!
//! The tiers are compiled only at opt-level 2 and above, where LLVM
//! vectorizes loops (`runtime/build.rs` sets `cfg(batchrules_simd_tiers)`):
//! below it they would be the same scalar code again, so there every level
//! runs the code as compiled, and [`simd_level`] still reports the level
//! chosen.

use std::sync::atomic::{AtomicU8, Ordering};

/// Runs `f`, compiled for AVX2 and FMA when the CPU has them (x86-64).
///
/// Only code inlined into `f` benefits: helpers it calls should be small or
/// `#[inline(always)]`. The results are the same either way, up to the
/// rounding of operations the compiler may fuse (it does not fuse a multiply
/// and an add unless the code asks for `mul_add`).
#[inline(always)]
pub(crate) fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    // (The chosen level as set: `vectorized_at` runs it at the highest
    // level below it that the CPU has, with fewer feature checks than
    // `simd_level`'s.)
    vectorized_at(chosen_level(), f)
}

/// The level [`set_simd_level`] chose (AVX2+FMA by default), whether or not
/// this CPU has it.
#[inline(always)]
fn chosen_level() -> SimdLevel {
    match LEVEL.load(Ordering::Relaxed) {
        0 => SimdLevel::Baseline,
        1 => SimdLevel::Avx2Fma,
        _ => SimdLevel::Avx512,
    }
}

/// The tier [`vectorized`] compiles for, as set by [`set_simd_level`]
/// (a [`SimdLevel`] as a byte).
///
/// AVX2+FMA by default, not AVX-512: at the AVX-512 tier W8's outer
/// products (`gemm::outer_products`) ran 6x slower and W1 and W11 10-30%
/// slower in the same sitting (AMD EPYC, 2026-12-07), which the vector
/// math's gain there (about 1.3x on `tanh`, where the whole W12 spends under
/// 6% in elementwise code) does not pay for.
static LEVEL: AtomicU8 = AtomicU8::new(SimdLevel::Avx2Fma as u8);

/// The instruction set the vectorized kernels (the elementwise math,
/// pooling, reductions and the other loops the crate compiles more than
/// once) run with: the one [`set_simd_level`] chose (AVX2+FMA by default),
/// or the highest below it that this CPU has.
///
/// ```
/// use batchrules::tuning::{simd_level, SimdLevel};
/// assert!(simd_level() <= SimdLevel::Avx2Fma);
/// ```
#[inline(always)]
pub fn simd_level() -> SimdLevel {
    chosen_level().min(best_tier())
}

/// Chooses the instruction set of the vectorized kernels for the whole
/// process, as `ATEN_CPU_CAPABILITY` does for PyTorch. The results are the
/// same bits at every level (the kernels do the same scalar operations in
/// the same order, and no multiply and add is fused unless the code asks
/// for it); only the speed differs, so this serves measurements, and
/// checks that an optimized build keeps that promise.
///
/// The GEMMs are not affected (the `gemm` crate chooses its own).
///
/// ```
/// use batchrules::tuning::{set_simd_level, simd_level, SimdLevel};
/// set_simd_level(SimdLevel::Baseline)?;
/// assert_eq!(simd_level(), SimdLevel::Baseline);
/// set_simd_level(SimdLevel::Avx2Fma).ok(); // Err on a CPU without AVX2 and FMA
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// # Errors
/// This CPU does not have `level`'s instructions ([`SimdLevel::best`] says
/// which it has); the level in effect is then unchanged.
pub fn set_simd_level(level: SimdLevel) -> crate::Result<()> {
    let best = best_tier();
    if level > best {
        return Err(crate::Error::invalid(format!(
            "set_simd_level({level:?}): this CPU's highest level is {best:?}"
        )));
    }
    LEVEL.store(level as u8, Ordering::Relaxed);
    Ok(())
}

#[cfg(all(target_arch = "x86_64", batchrules_simd_tiers))]
#[target_feature(enable = "avx2,fma")]
unsafe fn with_avx2_fma<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// The instruction sets the vectorized kernels can be compiled for (on
/// x86-64; elsewhere only [`Baseline`](Self::Baseline)), lowest first:
/// what [`set_simd_level`] chooses from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// The target's baseline (SSE2 on x86-64): the code as compiled.
    Baseline = 0,
    /// AVX2 and FMA: eight f32 lanes.
    Avx2Fma = 1,
    /// AVX-512 (F, DQ, BW, VL) with AVX2 and FMA: sixteen f32 lanes, mask
    /// registers, and conversions between i64 and f64.
    Avx512 = 2,
}

impl SimdLevel {
    /// The highest level this CPU has.
    ///
    /// ```
    /// use batchrules::tuning::SimdLevel;
    /// assert!(SimdLevel::best() >= SimdLevel::Baseline);
    /// ```
    pub fn best() -> SimdLevel {
        best_tier()
    }
}

/// The highest [`SimdLevel`] this CPU has.
#[inline(always)]
pub(crate) fn best_tier() -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            return SimdLevel::Avx512;
        }
        if has_avx2_fma() {
            return SimdLevel::Avx2Fma;
        }
    }
    SimdLevel::Baseline
}

/// Runs `f` compiled for `tier`, or for the highest tier below it that the
/// CPU has. [`vectorized`] is this at the highest tier; tests and
/// measurements choose lower ones.
#[inline(always)]
pub(crate) fn vectorized_at<R>(tier: SimdLevel, f: impl FnOnce() -> R) -> R {
    // (Only where LLVM vectorizes loops: see `runtime/build.rs`.)
    #[cfg(all(target_arch = "x86_64", batchrules_simd_tiers))]
    {
        if tier >= SimdLevel::Avx512 && has_avx512() {
            // SAFETY: the CPU has every feature the function is compiled
            // for (checked just above), the only requirement of calling it.
            return unsafe { with_avx512(f) };
        }
        if tier >= SimdLevel::Avx2Fma && has_avx2_fma() {
            // SAFETY: as in `vectorized`, the CPU has AVX2 and FMA.
            return unsafe { with_avx2_fma(f) };
        }
    }
    let _ = tier;
    f()
}

#[cfg(all(target_arch = "x86_64", batchrules_simd_tiers))]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")]
unsafe fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Whether this CPU has the AVX-512 subsets of [`SimdLevel::Avx512`], and AVX2
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

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::{vectorized, vectorized_at, SimdLevel};

    pub(crate) fn vectorized_gives_what_the_closure_gives() {
        let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37 - 100.0).collect();
        let plain: Vec<f32> = xs.iter().map(|&x| x * 1.5 + 2.0).collect();
        let wide = vectorized(|| xs.iter().map(|&x| x * 1.5 + 2.0).collect::<Vec<f32>>());
        assert_eq!(plain, wide);
        for tier in [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
            let at = vectorized_at(tier, || {
                xs.iter().map(|&x| x * 1.5 + 2.0).collect::<Vec<f32>>()
            });
            assert_eq!(plain, at, "{tier:?}");
        }
    }

    crate::core::unit_test::test_list! {
        vectorized_gives_what_the_closure_gives,
    }
}
