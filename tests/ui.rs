//! Compile-time diagnostics of the registration attributes and `op_table!`.
//!
//! `tests/ui/fail/*.rs` must fail to build with exactly the message in the
//! `.stderr` next to each; `tests/ui/pass/*.rs` must build and run. Regenerate
//! the snapshots with `TRYBUILD=overwrite cargo test --test ui` and review them.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
