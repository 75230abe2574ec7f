//! The built-in op library, one file per op family. Every op is registered with
//! the same attributes a downstream crate uses.

mod binary;
mod decompositions;
mod factories;
mod linalg;
mod reduce;
pub(crate) mod samples;
mod unary;
mod views;
