//! Wider vector instructions for the elementwise loops, chosen at run time.
//!
//! The crate is compiled for the target's baseline (on x86-64: SSE2, four
//! f32 lanes, no FMA), so that it runs on every CPU of the target. Kernels
//! whose loops vectorize run them through [`vectorized`], which, on an x86-64
//! CPU with AVX2 and FMA, calls them from a function compiled for those
//! features: the loop, inlined there, is compiled again with eight f32 lanes.
//! Elsewhere the closure runs as compiled.

/// Runs `f`, compiled for AVX2 and FMA when the CPU has them (x86-64).
///
/// Only code inlined into `f` benefits: helpers it calls should be small or
/// `#[inline(always)]`. The results are the same either way, up to the
/// rounding of operations the compiler may fuse (it does not fuse a multiply
/// and an add unless the code asks for `mul_add`).
#[inline(always)]
pub(crate) fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above), the
            // only requirement of calling a function compiled for them.
            return unsafe { with_avx2_fma(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn with_avx2_fma<R>(f: impl FnOnce() -> R) -> R {
    f()
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
    use super::vectorized;

    #[test]
    fn vectorized_gives_what_the_closure_gives() {
        let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37 - 100.0).collect();
        let plain: Vec<f32> = xs.iter().map(|&x| x * 1.5 + 2.0).collect();
        let wide = vectorized(|| xs.iter().map(|&x| x * 1.5 + 2.0).collect::<Vec<f32>>());
        assert_eq!(plain, wide);
    }
}
