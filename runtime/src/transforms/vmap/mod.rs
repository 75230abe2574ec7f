//! `vmap`: the first transform on the level stack.
//!
//! Each call of [`Vmap::call`] pushes a level with a `VmapInterpreter` on
//! this thread's level stack (see [`crate::dispatch`]) and wraps the batched
//! inputs as `Batched` tensors at that level. When an op call's highest level
//! is a vmap level, the dispatcher runs the op's meta on the logical shapes and
//! hands the call to the interpreter, which runs the op's batching rule, its
//! decomposition, or the fallback loop.
//!
//! * `level`: the state of one vmap level (`VmapInterpreter`: batch size,
//!   fallback and randomness policies), which `fallback`, `random`,
//!   `interpreter` and `api` read;
//! * `batched`: the batched tensor and how it is rearranged and stacked;
//! * `fallback`: the per-example loop and the global fallback policy;
//! * `random`: random ops under each level's randomness policy;
//! * `interpreter`: rule dispatch and the rule self-check;
//! * `api`: [`vmap`] and the builder [`Vmap`], and how a call runs;
//! * `dims`: the in/out dims a vmap takes ([`InDims`], [`OutDims`]);
//! * `inputs`: the inputs and outputs a vmapped function takes and returns
//!   (structures of tensors).
//!
//! In the `transforms` layer (`runtime/src/transforms/`). It may use the
//! `core`, `table` and `dispatch` layers; in its own layer, `transform_fn`.
//! `tests/suite/layers.rs` enforces it.

mod api;
mod batched;
pub(crate) mod chunks;
mod dim_specs;
mod fallback;
mod inputs;
pub(crate) mod interpreter;
mod level;
mod randomness;
pub(crate) mod rules;

pub use api::{vmap, vmap_depth, Vmap};
pub use dim_specs::{FieldDims, InDim, InDims, OutDims};
pub use fallback::{
    fallback_policy, scoped_fallback_policy, set_fallback_policy, FallbackPolicyScope,
};
pub use inputs::{Inputs, LeafCounts, VmapInputs, VmapOutputs};
pub use level::{FallbackPolicy, Randomness};
