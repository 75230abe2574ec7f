//! The exhaustive derivative sweeps and the op-library suites, in one test
//! binary whose tests set the fallback policy to `Error` process-wide (a
//! derivative or rule that needs the fallback loop is a missing batching
//! rule). Suites that need the fallback to run are in `tests/suite`.

#[path = "../common/mod.rs"]
mod common;

mod grad_library;
mod jvp;
mod jvp_library;
mod op_library;
mod vjps;
