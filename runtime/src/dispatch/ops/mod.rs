//! The built-in ops, generated from the op table in `ops/*.toml` (one file per
//! op family): a typed function per op (`ops::add(&a, &b)`), the [`Methods`]
//! trait with the schema's defaults applied, and the table the registry
//! indexes.
//!
//! This is the ops' interface only. Their kernels, metas, batching rules,
//! decompositions and derivatives are registered in the op library (the `library`
//! layer), which the registry joins to this table at run time. Declaring
//! the table below the transforms lets each transform call the built-in ops
//! it needs (grad adds gradients, vmap stacks the fallback loop's results,
//! both build views) through these typed functions, checked at compile time,
//! instead of looking an op up by its name.
//!
//! In the `dispatch` layer (`runtime/src/dispatch/`). It may use the `core` and
//! `table` layers; in its own layer, `dispatch` and `macro_support`.
//! `tests/suite/layers.rs` enforces it.

pub(crate) mod usize_args;

crate::op_table!(
    "ops/unary.toml",
    "ops/binary.toml",
    "ops/reduce.toml",
    "ops/shape.toml",
    "ops/dims.toml",
    "ops/join.toml",
    "ops/indexing.toml",
    "ops/linalg.toml",
    "ops/composites.toml",
    "ops/factories.toml",
    "ops/random.toml",
    "ops/activations.toml",
    "ops/attention.toml",
    "ops/einsum.toml",
    "ops/manipulation.toml",
    "ops/sorting.toml",
    "ops/normalization.toml",
    "ops/embedding.toml",
    "ops/losses.toml",
    "ops/pooling.toml",
    "ops/conv.toml",
);
