//! The integration suite: one test binary (linked once) holding the suites
//! that share the process's default settings, one module per subject. A
//! suite that needs another fallback policy (the exhaustive sweeps require
//! batching rules: `FallbackPolicy::Error`) sets it for its own thread with
//! `scoped_fallback_policy`, never process-wide; the suites that change other
//! process-wide settings (allocation limit, buffer cache limit, logger, spin
//! window) are in `tests/process`.

#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "ndarray-0-16")]
mod compat;

mod activations;
mod api_edges;
mod attention;
mod chunking;
mod conv;
mod conv_transpose;
mod dense_ops;
mod diagnostics;
mod edge_cases;
mod einsum_broadcast;
mod func_api;
mod grad;
mod grad_library;
mod grad_macro_hygiene;
mod hostile;
mod hostile_sweep;
mod hostile_transforms;
mod io_hostile;
mod jit;
mod jvp;
mod jvp_library;
mod layers;
mod linalg;
mod losses;
mod manipulation;
mod model_api;
mod normalization;
mod op_library;
mod op_table;
mod owned;
mod parallel;
mod pooling;
mod properties;
mod randomness;
mod recorded;
mod registry;
mod rule_table;
mod simd_levels;
mod sorting;
mod testing_helpers;
mod threads;
mod transform_stack;
mod tree_utils;
mod trees;
mod unit;
mod vjps;
mod vmap;
mod weights;
mod window_limits;
