//! The sample and error inputs of batchrules' built-in ops (the analogue of
//! PyTorch's OpInfo samples), for the workspace's exhaustive tests.
//!
//! Each op of the built-in table (`batchrules::ops`) declares here inputs it
//! must accept and inputs it must reject, registered with the public
//! [`batchrules::op_samples!`] as a [`batchrules::testing::OpInfo`]. The
//! workspace's sweeps (in `tests/suite/`) run every op on its
//! samples under every transform, and check that every error input also
//! errors under `vmap`. One module per op family, named as the runtime's
//! `library/` module that implements it (`unary` for `library/unary.rs`), and
//! the value builders all of them use (`values`).
//!
//! A crate of its own, apart from the runtime, so that the about 3,400 lines
//! of inputs are compiled only by the tests that run them, not into every
//! program that depends on `batchrules`. Not published.
//!
//! The inputs are [`inventory`] submissions, and a crate that a program
//! depends on but never names is not linked into it: a consumer iterates the
//! OpInfos through [`op_infos`] (not `batchrules::testing::op_infos`), which
//! names this crate and so links every input in.
//!
//! [`inventory`]: https://docs.rs/inventory

mod activations;
mod attention;
mod binary;
mod composites;
mod conv;
mod conv_transpose;
mod dims;
mod einsum;
mod embedding;
mod factories;
mod indexing;
mod join;
mod linalg;
mod losses;
mod manipulation;
mod normalization;
mod pooling;
mod random;
mod reduce;
mod shape;
mod sorting;
mod unary;
mod values;

use batchrules::testing::OpInfo;

/// Every [`OpInfo`] linked into the program, as
/// [`batchrules::testing::op_infos`] gives them: the built-in ops' of this
/// crate, and those of any other crate linked in (a downstream op table's).
///
/// Calling this function, rather than `batchrules::testing::op_infos`, is what
/// makes the linker keep this crate, and with it the built-in ops' inputs:
/// they are only inventory submissions, which nothing else refers to. Never
/// inlined, so the program refers to a symbol of this crate.
#[inline(never)]
pub fn op_infos() -> impl Iterator<Item = &'static OpInfo> {
    batchrules::testing::op_infos()
}
