//! The built-in op library, one file per op family, each named after its op
//! table (`ops/<family>.toml`). Every op is registered with the same attributes
//! a downstream crate uses.

mod activations;
pub(crate) mod binary;
mod composites;
mod conv;
mod derivative;
mod dims;
mod factories;
mod indexing;
mod join;
mod jvp;
mod linalg;
mod random;
mod reduce;
pub(crate) mod samples;
mod shape;
pub(crate) mod unary;
mod vjp;
