//! The role vocabulary: what a registered function is for an op.
//!
//! One enum for the whole crate (the attribute being expanded, the signature a
//! schema gives each role, the generated code), whose variants are named as
//! those of the runtime's public `batchrules::schema::Role`, so the generated
//! code names a role by the variant's own name.

use proc_macro2::{Ident, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `#[kernel]`
    Kernel,
    /// `#[meta]`
    Meta,
    /// `#[batching_rule]`
    BatchingRule,
    /// `#[decompose]`
    Decomposition,
    /// `#[vjp]`
    Vjp,
    /// `#[jvp]`
    Jvp,
}

/// The keys every attribute takes.
const KEYS: &[&str] = &["op", "table", "crate"];
/// The keys of `#[decompose]`.
const DECOMPOSE_KEYS: &[&str] = &["op", "table", "crate", "vmap"];

impl Role {
    /// The attribute's name, as written: `kernel`, `batching_rule`, ...
    pub fn attr(self) -> &'static str {
        match self {
            Role::Kernel => "kernel",
            Role::Meta => "meta",
            Role::BatchingRule => "batching_rule",
            Role::Decomposition => "decompose",
            Role::Vjp => "vjp",
            Role::Jvp => "jvp",
        }
    }

    /// The keys the attribute accepts.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Role::Decomposition => DECOMPOSE_KEYS,
            _ => KEYS,
        }
    }

    /// The runtime's `schema::Role` variant of the same name.
    pub fn variant(self) -> Ident {
        let name = match self {
            Role::Kernel => "Kernel",
            Role::Meta => "Meta",
            Role::BatchingRule => "BatchingRule",
            Role::Decomposition => "Decomposition",
            Role::Vjp => "Vjp",
            Role::Jvp => "Jvp",
        };
        Ident::new(name, Span::call_site())
    }

    /// The role whose signature this role's function has (a decomposition has
    /// the kernel's).
    pub fn signature_role(self) -> Role {
        match self {
            Role::Decomposition => Role::Kernel,
            other => other,
        }
    }

    /// Tensors in this role's signature: `TensorMeta` for a meta.
    pub fn tensor(self) -> &'static str {
        match self {
            Role::Meta => "TensorMeta",
            _ => "Tensor",
        }
    }
}
