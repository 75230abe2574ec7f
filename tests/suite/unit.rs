//! The runtime's unit tests (`batchrules::unit_tests`, compiled in by its
//! `unit-tests` feature in place of a `cfg(test)` build of the whole library).
//!
//! Each test is a plain function next to the code it tests, listed by the
//! module's `test_list!` and by `unit_tests::MODULES`; an unlisted test or
//! module is dead code, which clippy's `-D warnings` rejects in CI. Set
//! `BATCHRULES_UNIT_TESTS` to a part of `module::test` to run only the tests
//! whose path contains it, e.g.
//! `BATCHRULES_UNIT_TESTS=pooling::scan cargo test --test suite unit::`; the
//! tests that run only on request (the exhaustive f32 sweep, a throughput
//! measurement) with `-- --ignored --nocapture`, best in release.

use std::panic::{catch_unwind, AssertUnwindSafe};

use batchrules::unit_tests::MODULES;

/// Runs the listed tests that pass `filter` and whose ignore reason is
/// `Some` exactly when `ignored`; panics naming every failure.
fn run(ignored: bool) {
    let filter = std::env::var("BATCHRULES_UNIT_TESTS").unwrap_or_default();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (module, tests) in MODULES {
        for t in tests.iter() {
            let path = format!("{module}::{}", t.name);
            let Some(test) = t.run else {
                continue; // not built in this configuration
            };
            if t.ignore.is_some() != ignored || !path.contains(&filter) {
                continue;
            }
            ran += 1;
            if catch_unwind(AssertUnwindSafe(test)).is_err() {
                failures.push(path);
            }
        }
    }
    eprintln!("{ran} unit tests run");
    assert!(failures.is_empty(), "unit tests failed: {failures:?}");
}

#[test]
fn unit_tests_pass() {
    run(false);
}

#[test]
#[ignore = "the exhaustive f32 sweep and a measurement: run in release, with --nocapture"]
fn unit_tests_run_on_request_pass() {
    run(true);
}

/// The list has every module's tests: a module that lost its list would
/// still compile if its tests were listed by hand elsewhere.
#[test]
fn the_lists_name_each_test_once() {
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0;
    for (module, tests) in MODULES {
        assert!(!tests.is_empty(), "{module} lists no tests");
        for t in tests.iter() {
            total += 1;
            assert!(
                seen.insert(format!("{module}::{}", t.name)),
                "{module}::{} twice",
                t.name
            );
        }
    }
    // At least the 52 the crate had as `#[test]` functions when they moved.
    assert!(total >= 52, "{total} unit tests listed");
}
