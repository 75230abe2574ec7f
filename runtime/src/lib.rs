//! # batchrules
//!
//! Per-sample gradients, Jacobians and ensembles over [`ndarray`] tensors,
//! as PyTorch's `torch.func` and JAX compute them: [`vmap`](fn@vmap), [`grad`](fn@grad),
//! [`value_and_grad`], [`vjp`](fn@vjp), [`jacrev`], [`jvp`](fn@jvp),
//! [`jacfwd`], [`hvp`] and [`hessian`] are transforms that compose in any
//! order.
//!
//! ```
//! use batchrules::prelude::*;
//! use ndarray::array;
//!
//! #[derive(Clone, TensorTree)]
//! struct Linear { w: Tensor, b: Tensor }
//!
//! // The squared error of one example.
//! fn loss((p, x, y): (Linear, Tensor, Tensor)) -> Result<Tensor> {
//!     (x.dot(&p.w)? + &p.b)?.mse_loss(&y)
//! }
//!
//! let model = Linear { w: Tensor::from(array![0.5f64, -1.0]), b: Tensor::scalar(0.0f64) };
//! let xs = Tensor::from(array![[1.0f64, 2.0], [3.0, 4.0], [5.0, 6.0]]);
//! let ys = Tensor::from(array![1.0f64, 0.0, -1.0]);
//! // One gradient per example: parameters shared, data batched along dim 0.
//! let grads: Linear = vmap(|(p, x, y): (Linear, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
//!     .in_dims([None, Some(0), Some(0)])
//!     .call((&model, &xs, &ys))?;
//! assert_eq!(grads.w.shape(), &[3, 2]);
//! // An SGD step with their mean, over the whole struct.
//! let step = tree_map(&grads, |g| g.mean_dim(0))?;
//! let model = tree_zip_map(&model, &step, |p, g| p - &(g * 0.01)?)?;
//! # let _ = model;
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! The model writer's API is at the crate root and in [`prelude`]: [`Tensor`]
//! (built from an ndarray array of any dimension, with operators returning
//! `Result<Tensor>`, the ops as methods with their defaults applied
//! ([`ops::Methods`]), conversions back to arrays, a numpy-like `Display`),
//! the transforms, [`TensorTree`] with [`tree_map`] and [`tree_zip_map`], and
//! weights in and out in [`io`] (safetensors, npy, npz).
//!
//! Ops are declared once in an op table (see [`op_table!`]); kernels, metas,
//! batching rules, decompositions, vjps and jvps are registered with the
//! attributes [`kernel`], [`meta`], [`batching_rule`], [`decompose`],
//! [`vjp`](macro@vjp) and [`jvp`](macro@jvp), each checked at compile time
//! against the table, with two differences from the peers:
//!
//! * a batching rule or derivative registered for a *composite* op (one
//!   implemented by decomposing into other ops) is a **compile error**,
//!   because it would never run;
//! * every op's meta function (shape and dtype checks) runs on **logical**
//!   shapes (batch dims removed) at every vmap level, before any batching
//!   rule, so an op invalid per example is invalid under vmap too.
//!
//! Their readers' items are in [`rules`] (kernel and rule authors, with
//! [`batching`] and [`testing`]), [`transform`] (authors of transforms) and
//! [`tuning`] (process-wide limits); the [`guide`] walks through adding an op.
//!
//! ## Cargo features
//!
//! * `rayon` (**on by default**): splits the fallback loop and large kernels
//!   (elementwise, matrix products, convolution, pooling, reductions) across
//!   rayon's thread pool, every core unless told otherwise:
//!   [`tuning::set_num_threads(1)`](tuning::set_num_threads) pins them to the
//!   calling thread, as `torch.set_num_threads(1)` does, and results are the
//!   same bits for every number of threads (see [`tuning`] for the spin
//!   window). `default-features = false` builds without rayon.
//! * `ndarray-0-16`: conversions between [`Tensor`] and ndarray 0.16 arrays
//!   (`From<ndarray_016::ArrayD<T>>`, `Tensor::to_array_v016`), for code not
//!   yet on ndarray 0.17.
//! * `bench-internals`: switches for this crate's benchmarks only (meta
//!   checks off, a forced fallback); not for use in programs.
//! * `unit-tests`: compiles in the crate's unit tests, for the workspace's
//!   test suite, which runs them; not for use in programs.
//!
//! Limits: CPU only, eager (no tracing or fusion), dtypes `f32`, `f64`, `i64`
//! and `bool`.
#![warn(missing_docs)]

extern crate self as batchrules;

// The modules by layer, bottom up, as `tests/suite/layers.rs` enforces it.
// Each layer is a folder of `runtime/src/`, and its modules are listed here
// in order: a module imports only from the layers below its own and from the
// modules listed before it in its layer (on one line, two modules of one rank
// import neither from the other). The `#[path]`s put each module in its
// layer's folder while its path in the crate stays what users write
// (`batchrules::ops`, `batchrules::schema`, ...).
//
// Layer core: tensors, dtypes, errors, dims, broadcasting, casting, size checks
mod core;
// Layer table: op schemas, compile-time checks of registrations, the registry
// schema: op schemas as generated from op tables
#[path = "table/schema.rs"]
pub mod schema;
// checks: compile-time checks of registrations against a schema
#[path = "table/checks.rs"]
mod checks;
// registry: the registrations of every op, audited, and the rule tables transforms own
#[path = "table/registry/mod.rs"]
pub mod registry;
// Layer dispatch: calling an op, and the interface of the built-in ops
// dispatch: op calls: meta, dense path, hand-off to a level's interpreter
#[path = "dispatch/dispatcher/mod.rs"]
pub mod dispatch;
// macro_support: what the macros' generated code names
#[doc(hidden)]
#[path = "dispatch/macro_support.rs"]
pub mod macro_support;
// ops: the built-in ops' typed functions and methods (their interface)
#[path = "dispatch/ops/mod.rs"]
pub mod ops;
// Layer transforms: vmap, reverse mode, forward mode, Jacobians
// transform_fn: the functions transforms run: one argument, returning Result
#[path = "transforms/transform_fn.rs"]
pub mod transform_fn;
// vmap: the vmap transform: its interpreter, fallback loop and API; batching:
// helpers and generators for batching rules
#[path = "transforms/batching.rs"]
pub mod batching;
#[path = "transforms/vmap/mod.rs"]
mod vmap;
// grad: reverse mode: tracked tensors, the graph, grad/vjp
#[path = "transforms/grad/mod.rs"]
mod grad;
// forward: forward mode: dual tensors, jvp/hvp
#[path = "transforms/forward/mod.rs"]
mod forward;
// jacobian: Jacobians in both modes (one builder) and the Hessian
#[path = "transforms/jacobian.rs"]
pub mod jacobian;
// jit: tracing to a program, its passes and replay
#[path = "transforms/jit/mod.rs"]
pub mod jit;
// Layer library: the built-in op library
mod library;
// Layer api: weights files, testing helpers, coverage, owned ops, operators
// io: weights in and out: safetensors, npy, npz; testing: vmap against the
// per-example loop, gradients against differences
#[path = "api/io/mod.rs"]
pub mod io;
#[path = "api/testing/mod.rs"]
pub mod testing;
// coverage: what each op has, and what vmap uses; owned: pointwise ops that
// reuse the buffer of an operand given by value
#[path = "api/coverage.rs"]
pub mod coverage;
#[path = "api/owned.rs"]
pub mod owned;
// operators: `+ - * /` and unary `-` on tensors and scalars
#[path = "api/operators.rs"]
mod operators;
// Outside the layers: every module's unit tests (feature `unit-tests`, for the
// workspace's test suite only), which may reach any module.
#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod unit_tests;

#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub use dispatch::bench as __bench;

#[doc(hidden)]
pub use macro_support as __private;

// The crate root holds the model writer's API. Items for other readers live
// in modules named for them: `rules` (kernel and rule authors), `transform`
// (authors of transforms), `tuning` (process-wide limits and knobs).
pub use crate::core::dtype::DType;
pub use crate::core::error::{Error, Result};
pub use crate::core::reduction::Reduction;
pub use crate::core::rng::derive_seed;
pub use crate::core::tensor::{Element, Tensor};
pub use crate::core::tree::{
    push_key_segment, tree_leaves, tree_map, tree_zip_map, StructTree, TensorTree,
};
pub use forward::{hvp, jvp, jvp_with_aux};
pub use grad::{
    grad, linearize, needs_gradient, value_and_grad, vjp, vjp_with_aux, ArgAt, Argnum, Argnums,
    Argnums2, Argnums3, Argnums4, Grad, GradArgs, GradOutput, LinearizeFn, ValueAndGrad, VjpFn,
};
pub use jacobian::{
    hessian, jacfwd, jacfwd_with_aux, jacrev, jacrev_with_aux, HasAux, Hessian, Jacfwd,
    JacfwdWithAux, Jacobian, JacobianOf, JacobianOutput, Jacrev, JacrevWithAux, NoAux, WithAux,
};
pub use jit::{jit, Jit};
pub use vmap::{
    fallback_policy, scoped_fallback_policy, set_fallback_policy, vmap, vmap_depth, FallbackPolicy,
    FallbackPolicyScope, FieldDims, InDim, InDims, Inputs, LeafCounts, OutDims, Randomness, Vmap,
    VmapInputs, VmapOutputs,
};

// The crate's own code names these at the root, as it always has.
pub(crate) use crate::core::tensor::{Data, LevelId, LevelTensor};
pub(crate) use crate::core::value::{Arg, Outs, TensorMeta};

/// For kernel and rule authors: the types the registration attributes'
/// functions take and return. A kernel reads a tensor's [`Data`]; a meta
/// computes [`TensorMeta`]s; a batching rule's generic form works on
/// [`Arg`]s and [`BDim`](rules::BDim)s and returns [`Outs`]. The helpers that batching
/// rules are written with are in [`batching`]; the attributes themselves
/// ([`kernel`](macro@crate::kernel), [`meta`](macro@crate::meta), ...) are
/// at the crate root, and re-exported here. See the [guide].
pub mod rules {
    pub use crate::core::tensor::Data;
    pub use crate::core::value::{Arg, BDim, Outs, TensorMeta};
    pub use crate::{batching_rule, decompose, each_dtype, jvp, kernel, meta, op_table, vjp};
}

/// For authors of transforms: a transform's tensors implement
/// [`LevelTensor`], and are told apart by the [`LevelId`] of the level they
/// live at. A transform that needs a rule per op owns a rule table
/// ([`rule_table!`](crate::rule_table), [`rule!`](crate::rule),
/// [`RuleTable`](crate::registry::RuleTable)), as the built-in ones do:
/// [`batching_rules`](self::transform::batching_rules) (vmap),
/// [`vjps`](self::transform::vjps) (grad) and
/// [`jvps`](self::transform::jvps) (jvp), which the `#[batching_rule]`,
/// `#[vjp]` and `#[jvp]` attributes fill. See the [guide] and `dispatch`.
///
/// ```
/// use batchrules::registry::registry;
/// use batchrules::transform::{batching_rules, jvps, vjps};
///
/// let exp = registry()?.find("batchrules::ops", "exp").unwrap();
/// assert!(batching_rules::TABLE.get(exp)?.is_some());
/// assert!(vjps::TABLE.get(exp)?.is_some());
/// assert!(jvps::TABLE.get(exp)?.is_some());
/// // `sum` is linear: its jvp is `sum` of the tangents, not a rule.
/// let sum = registry()?.find("batchrules::ops", "sum").unwrap();
/// assert!(jvps::TABLE.get(sum)?.is_none());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub mod transform {
    pub use crate::core::tensor::{LevelId, LevelTensor};
    pub use crate::forward::rules::{jvps, JvpRuleFn};
    pub use crate::grad::rules::{vjps, VjpRuleFn};
    pub use crate::vmap::rules::{batching_rules, BatchingRuleFn};
}

/// Process-wide limits and knobs: the largest tensor an op may allocate, the
/// per-thread cache of freed buffers (which follows the workload's
/// high-water mark), how many threads the kernels use, and (feature `rayon`)
/// how long idle worker threads keep looking for work.
pub mod tuning {
    pub use crate::core::alloc::{
        allocation_limit, set_allocation_limit, DEFAULT_ALLOCATION_LIMIT,
    };
    pub use crate::core::buffers::{
        buffer_cache_limit, buffer_high_water, cached_bytes, clear_buffer_cache,
        set_buffer_cache_limit, DEFAULT_BUFFER_CACHE_LIMIT, HIGH_WATER_FLOOR,
    };
    pub use crate::core::simd::{set_simd_level, simd_level, SimdLevel};
    #[cfg(feature = "rayon")]
    pub use crate::core::spin::{live_spinners, set_spin_window, spin_window, DEFAULT_SPIN_WINDOW};
    pub use crate::core::threads::{num_threads, set_num_threads};
}

/// The model writer's imports in one line: `use batchrules::prelude::*;`.
///
/// It brings the [`Tensor`] type with the built-in ops as methods
/// ([`ops::Methods`], with the schema's defaults
/// applied), the `ops` module, the transforms, the [`TensorTree`] trait and
/// derive with [`tree_map`], [`tree_zip_map`] and [`tree_leaves`],
/// [`Reduction`], [`DType`], and the crate's `Result` and `Error`.
///
/// ```
/// use batchrules::prelude::*;
///
/// let x = Tensor::from(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]]);
/// let y = (x.softmax(-1)? * 2.0)?.sum_dim(1)?;
/// assert!(y.allclose(&Tensor::from(ndarray::array![2.0f64, 2.0]), 1e-12, 0.0)?);
/// let g = grad(|x: Tensor| x.tanh()?.sum()).call(&x)?;
/// assert_eq!(g.shape(), &[2, 2]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub mod prelude {
    pub use crate::ops::{self, Methods as _};
    pub use crate::{
        grad, hessian, hvp, jacfwd, jacfwd_with_aux, jacrev, jacrev_with_aux, jvp, jvp_with_aux,
        linearize, tree_leaves, tree_map, tree_zip_map, value_and_grad, vjp, vjp_with_aux, vmap,
        DType, Error, FallbackPolicy, Randomness, Reduction, Result, Tensor, TensorTree,
    };
}

/// Declares an op table: reads a TOML file (path relative to the crate root) and
/// generates, in the invoking module, one typed function per op, the schema
/// constants and expected types the attribute macros check against, and the
/// table's registration.
///
/// Each entry gives a schema string and a kind:
///
/// ```toml
/// [[op]]
/// schema = "triu(Tensor self, int diagonal=0) -> Tensor"
/// kind = "primitive"   # or "composite"
/// doc = "Upper triangle of the last two dims."
/// ```
///
/// A primitive through which no gradient flows (a comparison, a factory, an
/// integer-valued output such as `argmax`) says `differentiable = false`: a
/// `#[vjp]` for it then fails the build. A composite takes no such line: it is
/// differentiated through its decomposition.
///
/// A primitive that is linear jointly in its tensor arguments (`add`, `sum`,
/// `reshape`, `cat`, ...) says `linear = true`, or names the ones it is linear
/// in (`linear = ["self"]` for `gather(self, dim, index)`): its jvp is the op
/// itself applied to their tangents, with its other arguments (ints, indices,
/// `where`'s condition) held, so it takes no `#[jvp]`, and one fails the
/// build. `linear` on a composite, with `differentiable = false`, or naming
/// an argument that is not a tensor, is an error of the table.
///
/// An op that draws random numbers says `random = true` and takes its stream
/// as an `int seed` argument (a random op without one fails the build). Under
/// [`vmap`](fn@vmap) it follows the vmap's [`Randomness`] policy: an error by default,
/// one derived seed per example, or one draw for all. A random primitive is
/// batched by running it once per example with the seed the policy gives that
/// example, so a `#[batching_rule]` for it fails the build; to vectorize one,
/// declare it a composite over `random_key` and the keyed draws
/// (`random_uniform`, `random_normal`), as `rand` and `dropout` are.
///
/// ```compile_fail
/// # pub mod ops {
/// batchrules::op_table!(toml = r#"
/// [[op]]
/// schema = "noise(int[] size) -> Tensor"
/// kind = "primitive"
/// random = true
/// "#);
/// # }
/// # fn main() {}
/// ```
///
/// The schema types ([`schema::SCHEMA_TYPES`]) and the Rust type each role's
/// function takes for them are in the [guide]'s "Step 1"; an op returns
/// `Tensor`, `Tensor[]` or a tuple of up to three `Tensor`s. An argument may
/// be written with a default (`int diagonal=0`, `Reduction reduction=mean`),
/// checked against the type. A malformed entry fails the build with the
/// table's line.
///
/// The generated function (`ops::triu(&x, 0)`) takes every argument. The
/// table module also gets a trait `Methods`, implemented for [`Tensor`], with
/// the defaults applied: an op whose first argument is `Tensor self` (or
/// `Tensor input`) is a method named after it that takes the arguments
/// without a default (`x.triu()`, `x.softmax(dim)`). An entry adds methods,
/// or replaces that one by reusing the op's name, with a list of specs, each
/// naming the arguments after the receiver the method takes; the others take
/// their defaults:
///
/// ```toml
/// [[op]]
/// schema = "sum(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"
/// kind = "primitive"
/// # `x.sum()`, `x.sum_dim(1)` (an optional argument named plainly is taken as
/// # its plain type and passed as `Some`), `x.sum_keepdim(1)` (a fixed value);
/// # `bias?` would take an optional argument as the `Option` it is.
/// methods = ["sum_dim(dim)", "sum_keepdim(dim, keepdim=True)"]
/// ```
///
/// A spec naming an unknown argument, leaving out one without a default, or
/// reusing a method name of the table fails the build.
///
/// Several files make one table (`op_table!("a.toml", "b.toml")`), and the TOML
/// can be written inline (`op_table!(toml = r#"..."#)`).
///
/// The built-in table is [`ops`]; a downstream crate declares its own the same
/// way and points its attributes at it with `table = path::to::module`. The
/// generated code names this crate through the table module, so a crate that
/// renames the dependency (`br = { package = "batchrules", ... }`) writes
/// `br::op_table!` and it works the same.
#[macro_export]
macro_rules! op_table {
    ($($input:tt)*) => {
        $crate::__private::op_table_impl! { crate = $crate; $($input)* }
    };
}

/// Registers the dense kernel of a **primitive** op.
///
/// The function takes the op's arguments (`Tensor` as `&Tensor`, `int` as
/// `i64`, `int[]` as `&[i64]`, `float` as `f64`, `ScalarType` as [`DType`],
/// `T?` as `Option<T>`) and returns `Result<Tensor>`. The op's meta has already
/// checked the arguments, so the kernel does not repeat checks. Registering a
/// kernel for a composite op, for an unknown op, or with a signature that does not
/// fit the schema fails the build. The compiler compares the types themselves, so
/// an alias of `Tensor` is accepted and another type named `Tensor` is not.
///
/// Keys: `op = "name"` (required), `table = path` (the module of the op table;
/// default `batchrules::ops`), `crate = path` (this crate as your Cargo.toml
/// names it, e.g. `crate = br`: the default table is then `br::ops`). The function
/// must be declared at module level: not in an `impl` block, where the
/// registration cannot name it. See the [guide] for the whole story.
///
/// ```rust,standalone_crate
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "double(Tensor self, float by=2.0) -> Tensor"
/// # kind = "primitive"
/// # [[op]]
/// # schema = "quadruple(Tensor self) -> Tensor"
/// # kind = "composite"
/// # "#);
/// # }
/// use batchrules::{kernel, Error, Result, Tensor};
/// use batchrules::rules::Data;
///
/// #[kernel(op = "double", table = ops)]
/// fn double_kernel(x: &Tensor, by: f64) -> Result<Tensor> {
///     match x.data()? {
///         Data::F64(a) => Ok(Tensor::from(a.mapv(|v| v * by))),
///         other => Err(Error::invalid(format!("unsupported dtype {}", other.dtype()))),
///     }
/// }
/// # fn main() {}
/// ```
pub use batchrules_macros::kernel;

/// Registers the meta function of an op: its argument checks and output
/// shape/dtype, computed from [`TensorMeta`]s only.
///
/// Inside vmap the metas carry logical shapes, so the same checks hold per
/// example at every vmap level. Return `Err(Error::invalid(...))` to reject a call.
///
/// ```rust,standalone_crate
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "double(Tensor self, float by=2.0) -> Tensor"
/// # kind = "primitive"
/// # [[op]]
/// # schema = "quadruple(Tensor self) -> Tensor"
/// # kind = "composite"
/// # "#);
/// # }
/// use batchrules::{meta, Error, Result};
/// use batchrules::rules::TensorMeta;
///
/// #[meta(op = "double", table = ops)]
/// fn double_meta(x: &TensorMeta, _by: f64) -> Result<TensorMeta> {
///     if !x.dtype().is_float() {
///         return Err(Error::invalid(format!("needs a float tensor, got {}", x.dtype())));
///     }
///     Ok(x.clone())
/// }
/// # fn main() {}
/// ```
pub use batchrules_macros::meta;

/// Registers the batching rule of a **primitive** op.
///
/// Each tensor parameter is followed by its batch dim (`Option<usize>`, or
/// `&[Option<usize>]` after `&[Tensor]`); the rule returns each output with its
/// batch dim, `Result<(Tensor, Option<usize>)>`. Rules never check shapes (the
/// meta already did).
///
/// The dispatcher calls a rule only when at least one of its tensor arguments
/// has a batch dim at the rule's level (an op call with nothing batched at a
/// level never reaches that level's rules), so a rule has no "nothing batched"
/// case to handle; the helpers in [`batching`] serve batched and unbatched
/// operands with one code path.
///
/// A rule on a composite op fails the build: the composite
/// is decomposed before vmap sees it, so the rule would never run. So does a
/// rule on an op without tensor arguments (a factory such as `zeros`): vmap
/// never batches it. And so does a rule on a random op (`random = true`):
/// vmap batches it by its [`Randomness`] policy, never by a rule:
///
/// ```compile_fail,E0080
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "jitter(Tensor self, int seed) -> Tensor"
/// # kind = "primitive"
/// # random = true
/// # "#);
/// # }
/// use batchrules::{batching_rule, Result, Tensor};
///
/// #[batching_rule(op = "jitter", table = ops)]
/// fn jitter_rule(x: &Tensor, bdim: Option<usize>, seed: i64) -> Result<(Tensor, Option<usize>)> {
///     Ok((x.clone(), bdim))
/// }
/// # fn main() {}
/// ```
///
/// ```rust,standalone_crate
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "double(Tensor self, float by=2.0) -> Tensor"
/// # kind = "primitive"
/// # [[op]]
/// # schema = "quadruple(Tensor self) -> Tensor"
/// # kind = "composite"
/// # "#);
/// # }
/// use batchrules::{batching_rule, Result, Tensor};
///
/// // Pointwise: the op applied to the physical tensor keeps the batch dim.
/// #[batching_rule(op = "double", table = ops)]
/// fn double_rule(x: &Tensor, bdim: Option<usize>, by: f64) -> Result<(Tensor, Option<usize>)> {
///     Ok((ops::double(x, by)?, bdim))
/// }
/// # fn main() {}
/// ```
///
/// The same rule on the composite op fails the build:
///
/// ```compile_fail,E0080
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "double(Tensor self, float by=2.0) -> Tensor"
/// # kind = "primitive"
/// # [[op]]
/// # schema = "quadruple(Tensor self) -> Tensor"
/// # kind = "composite"
/// # "#);
/// # }
/// use batchrules::{batching_rule, Result, Tensor};
///
/// #[batching_rule(op = "quadruple", table = ops)]
/// fn quadruple_rule(x: &Tensor, bdim: Option<usize>) -> Result<(Tensor, Option<usize>)> {
///     Ok((x.clone(), bdim))
/// }
/// # fn main() {}
/// ```
pub use batchrules_macros::batching_rule;

/// Registers the decomposition of a **composite** op: its implementation in
/// terms of other ops. Under vmap the decomposition runs on the batched tensors
/// (each constituent op is batched on its own); `vmap = "fallback"` opts out and
/// uses the per-example loop instead.
///
/// ```rust,standalone_crate
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "double(Tensor self, float by=2.0) -> Tensor"
/// # kind = "primitive"
/// # [[op]]
/// # schema = "quadruple(Tensor self) -> Tensor"
/// # kind = "composite"
/// # "#);
/// # }
/// use batchrules::{decompose, Result, Tensor};
///
/// #[decompose(op = "quadruple", table = ops)]
/// fn quadruple(x: &Tensor) -> Result<Tensor> {
///     let two = ops::double(x, 2.0)?;
///     ops::double(&two, 2.0)
/// }
/// # fn main() {}
/// ```
pub use batchrules_macros::decompose;

/// Registers the vector-Jacobian product (the backward formula) of a
/// **differentiable primitive** op, which grad calls to send gradients back
/// through it.
///
/// The function takes the op's arguments (as the kernel does), then each of the
/// op's outputs (`result`, or `result0`, `result1`, ... for several), then the
/// cotangent of each output (`grad`, or `grad0`, ...), all as `&Tensor`. It
/// returns one gradient per tensor argument of the op, in order:
/// `Option<Tensor>` (`None` when no gradient flows to that argument, or when an
/// optional `Tensor?` argument was `None`), `Vec<Option<Tensor>>` (one per
/// element) for a `Tensor[]`; a tuple when the op has several tensor arguments.
/// Each gradient has its argument's shape: a broadcasting op sums its gradient
/// back to the argument's shape.
///
/// Write it with the op functions (`ops::mul`, ...), not by reading data: then
/// under an outer `vmap` the backward is batched like any other code (per-sample
/// gradients), and under an outer grad it is itself differentiated (higher-order
/// derivatives).
///
/// The build fails for a vjp on a composite op (grad differentiates it through
/// its decomposition, so the vjp would never run), on an op its table marks
/// `differentiable = false`, on an op that returns a `Tensor[]` (not
/// differentiable yet), and for a signature that does not fit the schema. Two
/// vjps for one op are an error of the registry audit. Keys as for [`kernel`].
///
/// ```rust,standalone_crate
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "scale(Tensor self, Tensor factor) -> Tensor"
/// # kind = "primitive"
/// # "#);
/// # }
/// use batchrules::{batching_rule, kernel, meta, vjp, Error, Result, Tensor};
/// use batchrules::rules::TensorMeta;
///
/// #[meta(op = "scale", table = ops)]
/// fn scale_meta(x: &TensorMeta, factor: &TensorMeta) -> Result<TensorMeta> {
///     if factor.shape() != x.shape() || factor.dtype() != x.dtype() {
///         return Err(Error::invalid("factor must have the shape and dtype of self"));
///     }
///     Ok(x.clone())
/// }
///
/// #[kernel(op = "scale", table = ops)]
/// fn scale_kernel(x: &Tensor, factor: &Tensor) -> Result<Tensor> {
///     batchrules::ops::mul(x, factor)
/// }
///
/// #[batching_rule(op = "scale", table = ops)]
/// fn scale_rule(
///     x: &Tensor,
///     x_bdim: Option<usize>,
///     factor: &Tensor,
///     factor_bdim: Option<usize>,
/// ) -> Result<(Tensor, Option<usize>)> {
///     // Both operands with the batch dim in front (an unbatched one repeated).
///     let both = [x.clone(), factor.clone()];
///     let front = batchrules::batching::materialize_at_front(&both, &[x_bdim, factor_bdim])?;
///     Ok((ops::scale(&front[0], &front[1])?, Some(0)))
/// }
///
/// // d(x * f) = grad * f for x, grad * x for f; written with ops, so it batches.
/// #[vjp(op = "scale", table = ops)]
/// fn scale_vjp(
///     x: &Tensor,
///     factor: &Tensor,
///     _result: &Tensor,
///     grad: &Tensor,
/// ) -> Result<(Option<Tensor>, Option<Tensor>)> {
///     Ok((Some(ops::scale(grad, factor)?), Some(ops::scale(grad, x)?)))
/// }
/// # fn main() {}
/// ```
///
/// A vjp on a composite op fails the build:
///
/// ```compile_fail,E0080
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "double(Tensor self) -> Tensor"
/// # kind = "composite"
/// # "#);
/// # }
/// use batchrules::{vjp, Result, Tensor};
///
/// #[vjp(op = "double", table = ops)]
/// fn double_vjp(_x: &Tensor, _result: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
///     Ok(Some(batchrules::ops::add(grad, grad)?))
/// }
/// # fn main() {}
/// ```
pub use batchrules_macros::vjp;

/// Registers the Jacobian-vector product (the forward-mode derivative) of a
/// **differentiable primitive** op that is not marked `linear`: given the
/// tangents of the op's arguments, it returns the tangents of its outputs.
///
/// The function takes the op's arguments (as the kernel does), then each of
/// the op's outputs (`result`, or `result0`, `result1`, ... for several; all
/// `&Tensor`, `&[Tensor]` for a `Tensor[]` output), then one tangent per
/// tensor argument of the op, in order, named `<argument>_tangent`:
/// `Option<&Tensor>` for a `Tensor` or `Tensor?` argument (`None` when the
/// tangent is zero, or the optional argument is `None`), `&[Option<Tensor>]`
/// (one per element) for a `Tensor[]`. It returns the tangent of each output:
/// `Option<Tensor>` (`None` for a zero tangent), `Vec<Option<Tensor>>` for a
/// `Tensor[]` output, a tuple when the op has several outputs. Each tangent
/// has its output's shape.
///
/// Write it with the op functions, as a vjp is written, so it is batched
/// under an outer `vmap` and differentiated under an outer transform.
///
/// An op that is linear jointly in its float tensor arguments (`add`,
/// `sum`, `reshape`, `cat`, ...) takes no jvp: its table entry says
/// `linear = true` and its jvp is the op itself applied to the tangents (as
/// JAX's `deflinear`; index and condition arguments keep their value). The
/// build fails for a jvp on such an op, on a composite op (differentiated
/// through its decomposition), on an op its table marks `differentiable =
/// false` or that takes no tensor, and for a signature that does not fit the
/// schema. Two jvps for one op are an error of the registry audit. Keys as
/// for [`kernel`].
///
/// ```rust,standalone_crate
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "scale(Tensor self, Tensor factor) -> Tensor"
/// # kind = "primitive"
/// # "#);
/// # }
/// # use batchrules::{kernel, meta};
/// # use batchrules::rules::TensorMeta;
/// # #[meta(op = "scale", table = ops)]
/// # fn scale_meta(x: &TensorMeta, _factor: &TensorMeta) -> Result<TensorMeta> {
/// #     Ok(x.clone())
/// # }
/// # #[kernel(op = "scale", table = ops)]
/// # fn scale_kernel(x: &Tensor, factor: &Tensor) -> Result<Tensor> {
/// #     batchrules::ops::mul(x, factor)
/// # }
/// use batchrules::{jvp, Result, Tensor};
///
/// // d(x * f) = dx * f + x * df; a zero tangent (None) drops its term.
/// #[jvp(op = "scale", table = ops)]
/// fn scale_jvp(
///     x: &Tensor,
///     factor: &Tensor,
///     _result: &Tensor,
///     self_tangent: Option<&Tensor>,
///     factor_tangent: Option<&Tensor>,
/// ) -> Result<Option<Tensor>> {
///     let dx = self_tangent.map(|t| ops::scale(t, factor)).transpose()?;
///     let df = factor_tangent.map(|t| ops::scale(x, t)).transpose()?;
///     Ok(match (dx, df) {
///         (Some(a), Some(b)) => Some(batchrules::ops::add(&a, &b)?),
///         (a, b) => a.or(b),
///     })
/// }
///
/// # fn main() -> Result<()> {
/// // The registered jvp, called as the jvp transform calls it.
/// let registry = batchrules::registry::registry()?;
/// let entry = registry.find(ops::__PATH, "scale").unwrap();
/// let jvp = batchrules::transform::jvps::TABLE.get(entry)?.unwrap();
/// let t = |v: f64| Tensor::from(ndarray::array![v].into_dyn());
/// let (x, f) = (t(3.0), t(2.0));
/// let args = [batchrules::rules::Arg::Tensor(x.clone()), batchrules::rules::Arg::Tensor(f.clone())];
/// let tangents = jvp(&args, &[ops::scale(&x, &f)?], &[vec![Some(t(1.0))], vec![None]])?;
/// assert_eq!(tangents[0].as_ref().unwrap().to_array::<f64>()?, t(2.0).to_array::<f64>()?);
/// # Ok(())
/// # }
/// ```
///
/// A jvp on an op the table marks linear fails the build:
///
/// ```compile_fail,E0080
/// # pub mod ops {
/// #     batchrules::op_table!(toml = r#"
/// # [[op]]
/// # schema = "double(Tensor self) -> Tensor"
/// # kind = "primitive"
/// # linear = true
/// # "#);
/// # }
/// use batchrules::{jvp, Result, Tensor};
///
/// #[jvp(op = "double", table = ops)]
/// fn double_jvp(_x: &Tensor, _result: &Tensor, self_tangent: Option<&Tensor>) -> Result<Option<Tensor>> {
///     self_tangent.map(|t| batchrules::ops::add(t, t)).transpose()
/// }
/// # fn main() {}
/// ```
pub use batchrules_macros::jvp;

/// Implements [`TensorTree`](trait@TensorTree) for a struct of tensors, so it
/// can go through [`vmap`](fn@vmap) (and the other transforms) as one value.
///
/// Every field is a tree (a [`Tensor`], a `Vec`/array/`Option`/`Box`/tuple of
/// trees, or another derived struct), visited in declaration order. A field
/// that holds no tensor (a size, a flag, an activation choice) is marked
/// `#[tree(skip)]`: it has no leaves and is cloned as it is, so its type must be
/// `Clone`. Named-field, tuple and unit structs are supported; generic structs
/// get the bounds their fields need. An enum or a union is a compile error.
///
/// A crate that renames the dependency writes `#[tree(crate = br)]` on the
/// struct (the default is `::batchrules`).
///
/// In weights files ([`io`]) each leaf is saved under its key
/// ([`TensorTree::leaf_key`]), built from the field names: `layers.1.w`.
/// `#[tree(rename = "weight")]` on a field saves it under another name, so a
/// PyTorch `state_dict` (`fc1.weight`, `fc1.bias`, ...) loads into fields
/// named as you like; the name may hold dots (`rename = "0"` or `"block.0"`
/// for an entry of an `nn.Sequential`). The rename changes the key only, not
/// [`TensorTree::leaf_path`]. A rename on a skipped field, an empty or
/// non-string name, and two fields with one key are compile errors.
///
/// The derive also implements [`StructTree`], so the struct can be passed to
/// [`vmap`](fn@vmap) on its own (`.call(&params)`, one argument) and returned from the
/// vmapped function (one output); see [`vmap`](fn@vmap) for an example.
///
/// ```
/// use batchrules::{ops, Tensor, TensorTree};
/// use ndarray::array;
///
/// #[derive(Clone, TensorTree)]
/// struct Linear {
///     w: Tensor,
///     b: Option<Tensor>,
/// }
///
/// #[derive(Clone, TensorTree)]
/// struct Mlp {
///     layers: Vec<Linear>,
///     #[tree(skip)]
///     relu: bool,
/// }
///
/// let t = |v: f64| Tensor::from(array![v].into_dyn());
/// let mlp = Mlp {
///     layers: vec![
///         Linear { w: t(1.0), b: Some(t(2.0)) },
///         Linear { w: t(3.0), b: None },
///     ],
///     relu: true,
/// };
/// assert_eq!(mlp.leaf_count(), 3);
/// assert_eq!(mlp.leaf_path(2), ".layers[1].w");
///
/// // Every tensor negated; the structure and `relu` are kept.
/// let neg = mlp.map_leaves(&mut |x| ops::neg(x))?;
/// assert_eq!(neg.layers[1].w.to_array::<f64>()?, array![-3.0].into_dyn());
/// assert!(neg.relu && neg.layers[1].b.is_none());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub use batchrules_macros::TensorTree;

#[doc = include_str!("../docs/guide.md")]
pub mod guide {}
