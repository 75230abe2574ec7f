//! The runtime's unit tests, every module's list (feature `unit-tests`, which
//! only the workspace's test suite turns on; not API).
//!
//! Outside the layers (`tests/suite/layers.rs`), and only in builds with the
//! feature: it reaches every module's tests.
//!
//! `tests/suite/unit.rs` runs them, and checks that this list names every
//! module of `runtime/src` that has tests. How a test is written and listed:
//! [`crate::core::unit_test`].

pub use crate::core::unit_test::Test;

/// Each module with unit tests, by its path under the crate root, and its tests.
pub const MODULES: &[(&str, &[Test])] = &[
    ("checks", crate::checks::tests::ALL),
    ("core::alloc", crate::core::alloc::tests::ALL),
    ("core::broadcast", crate::core::broadcast::tests::ALL),
    ("core::buffers", crate::core::buffers::tests::ALL),
    ("core::rng", crate::core::rng::tests::ALL),
    ("core::simd", crate::core::simd::tests::ALL),
    ("core::tree", crate::core::tree::tests::ALL),
    ("core::vmath", crate::core::vmath::tests::ALL),
    ("io", crate::io::tests::ALL),
    ("io::npy", crate::io::npy::tests::ALL),
    ("io::zip", crate::io::zip::tests::ALL),
    (
        "library::conv::tiles",
        crate::library::conv::tiles::tests::ALL,
    ),
    ("library::gemm", crate::library::gemm::tests::ALL),
    ("library::jvp", crate::library::jvp::tests::ALL),
    (
        "library::pooling::scan",
        crate::library::pooling::scan::tests::ALL,
    ),
    ("macro_support", crate::macro_support::tests::ALL),
    ("vmap::chunks", crate::vmap::chunks::tests::ALL),
    ("vmap::interpreter", crate::vmap::interpreter::tests::ALL),
];
