//! `vmap`: the first transform on the level stack.
//!
//! Each call of [`Vmap::call`] pushes a level with a `VmapInterpreter` on
//! this thread's level stack (see [`crate::dispatch`]) and wraps the batched
//! inputs as `Batched` tensors at that level. When an op call's highest level
//! is a vmap level, the dispatcher runs the op's meta on the logical shapes and
//! hands the call to the interpreter, which runs the op's batching rule, its
//! decomposition, or the fallback loop.
//!
//! * `batched`: the batched tensor and how it is rearranged and stacked;
//! * `interpreter`: rule dispatch and the rule self-check;
//! * `fallback`: the per-example loop and its policy;
//! * `random`: random ops and each level's randomness policy;
//! * `api`: [`vmap`], [`Vmap`], in/out dims;
//! * `inputs`: the inputs and outputs a vmapped function takes and returns
//!   (structures of tensors).
//!
//! Layer 7 of the runtime, of 0 to 14 bottom up: it imports only from lower
//! layers (the crate root lists the order; `tests/suite/layers.rs` enforces it).

mod api;
mod batched;
mod fallback;
mod inputs;
mod interpreter;
pub(crate) mod join;
mod random;

pub use api::{vmap, vmap_depth, FieldDims, InDim, InDims, OutDims, Vmap};
pub use fallback::{fallback_policy, set_fallback_policy, FallbackPolicy};
pub use inputs::{Inputs, LeafCounts, VmapInputs, VmapOutputs};
pub use random::Randomness;
