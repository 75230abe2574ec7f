//! Prints the coverage report: per op, its kind, what is registered for it,
//! what vmap will use (batching rule, decomposition, or the fallback loop), and
//! how grad differentiates it (its vjp, through its decomposition, or not at
//! all), and how forward mode does (its jvp, `linear`, through its
//! decomposition, or not at all); then the differentiable primitives that
//! still lack a vjp, and those that lack a jvp.
//!
//! Run with `cargo run --example coverage`. The report lists every op table
//! linked into this program: the built-in one and the downstream example's.

use downstream_ops as _;

fn main() {
    match batchrules::coverage::report() {
        Ok(report) => print!("{report}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
