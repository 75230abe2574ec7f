//! Procedural macros of [batchrules](https://docs.rs/batchrules): the op-table
//! generator and the four registration attributes. Use them through the
//! `batchrules` crate, which re-exports them and documents each one.

mod attr;
mod schema;
mod table;
mod types;

use proc_macro::TokenStream;

/// Generates the typed op functions, op ids and schema constants of an op table.
/// See `batchrules::op_table`.
#[proc_macro]
pub fn op_table(input: TokenStream) -> TokenStream {
    table::expand(input.into()).into()
}

/// Registers a dense kernel for a primitive op. See `batchrules::kernel`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    attr::expand(attr::Role::Kernel, attr.into(), item.into()).into()
}

/// Registers a meta function (checks and output shape). See `batchrules::meta`.
#[proc_macro_attribute]
pub fn meta(attr: TokenStream, item: TokenStream) -> TokenStream {
    attr::expand(attr::Role::Meta, attr.into(), item.into()).into()
}

/// Registers a batching rule for a primitive op. See `batchrules::batching_rule`.
#[proc_macro_attribute]
pub fn batching_rule(attr: TokenStream, item: TokenStream) -> TokenStream {
    attr::expand(attr::Role::BatchingRule, attr.into(), item.into()).into()
}

/// Registers the decomposition of a composite op. See `batchrules::decompose`.
#[proc_macro_attribute]
pub fn decompose(attr: TokenStream, item: TokenStream) -> TokenStream {
    attr::expand(attr::Role::Decompose, attr.into(), item.into()).into()
}
