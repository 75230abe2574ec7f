//! Compile-time diagnostics of the registration attributes and `op_table!`.
//!
//! `tests/ui/fail/*.rs` must fail to build with exactly the message in the
//! `.stderr` next to each. Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test --test ui` and review them.
//!
//! The cases that must build and run, `tests/ui/pass/*.rs`, are test targets of
//! their own (`harness = false`, one crate each, listed in the workspace's
//! `Cargo.toml`), built with the rest of the workspace. Here trybuild has only
//! compile-fail cases, so it type-checks them (`cargo check`) against
//! dependencies it also only checks, instead of building every dependency a
//! second time.

use std::io::Write;
use std::process::Command;

/// The rustc the `.stderr` snapshots are taken with. rustc's wording and layout
/// change between releases, so the compile-fail cases run only on this version
/// (the pass cases, built as test targets, run on every toolchain). The pin lives here rather than in a
/// `rust-toolchain.toml`, which would make rustup download this toolchain on
/// every machine that builds the workspace, offline CI included. To move to a
/// new toolchain: change this, regenerate the snapshots, review them.
const SNAPSHOT_RUSTC: &str = "1.95.0";

/// `rustc --version` of the compiler cargo builds the cases with: `$RUSTC` if
/// set, else `rustc` on the path (rustup's proxy honours `cargo +toolchain`).
fn rustc_version() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    String::from_utf8(out.stdout)
        .ok()
        .map(|v| v.trim().to_string())
}

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    let version = rustc_version();
    // `rustc 1.95.0 (59807616e 2026-04-14)`; not `1.95.0-beta.1` or a nightly.
    let pinned = format!("rustc {SNAPSHOT_RUSTC} ");
    match &version {
        Some(v) if v.starts_with(&pinned) => t.compile_fail("tests/ui/fail/*.rs"),
        other => {
            // Written to the stream itself: the test harness captures `eprintln!`.
            let _ = writeln!(
                std::io::stderr(),
                "tests/ui/fail skipped: its snapshots are of rustc {SNAPSHOT_RUSTC}, and this is \
                 {}; run `cargo +{SNAPSHOT_RUSTC} test --test ui` to check them",
                other
                    .as_deref()
                    .unwrap_or("a rustc whose version could not be read")
            );
        }
    }
}
