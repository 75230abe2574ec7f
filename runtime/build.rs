//! Tells `core::simd` whether to compile its instruction-set tiers.
//!
//! The vectorized kernels run their loops through functions compiled for
//! AVX2+FMA and AVX-512 (`core::simd::vectorized`), which makes LLVM optimize
//! each loop three times. That pays only where LLVM vectorizes loops, at
//! opt-level 2 and above (`release`, `bench`); below it (the workspace's dev
//! builds, at 1, and a user's, at 0) the three copies would be the same
//! scalar code, and compiling them took about a fifth of the crate's debug
//! build. So the tiers are compiled only at opt-level 2 or 3 (and "s" or
//! "z" builds, which do not vectorize either, skip them too).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(batchrules_simd_tiers)");
    println!("cargo::rerun-if-changed=build.rs");
    let level = std::env::var("OPT_LEVEL").unwrap_or_default();
    if level == "2" || level == "3" {
        println!("cargo::rustc-cfg=batchrules_simd_tiers");
    }
}
