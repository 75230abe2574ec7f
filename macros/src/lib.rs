//! Procedural macros of [batchrules](https://docs.rs/batchrules): the op-table
//! generator and the six registration attributes. Use them through the
//! `batchrules` crate, which re-exports them and documents each one.
//!
//! Layout: `registration` (the attributes) and `table` (`op_table!`) each
//! go parse → typed AST → validate → expand, reporting to one diagnostics
//! context (`ctxt`); `role` is the role vocabulary both share with the
//! runtime, `schema` the schema strings, `types` the spelling of types.

mod ctxt;
mod registration;
mod role;
mod schema;
mod table;
mod tree;
mod types;

use proc_macro::TokenStream;

use role::Role;

/// Generates the typed op functions, op ids and schema constants of an op table.
/// Use it as `batchrules::op_table!`, which passes the runtime crate's path;
/// see `batchrules::op_table`.
#[proc_macro]
pub fn op_table(input: TokenStream) -> TokenStream {
    table::expand(input.into()).into()
}

/// Registers a dense kernel for a primitive op. See `batchrules::kernel`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    registration::expand(Role::Kernel, attr.into(), item.into()).into()
}

/// Registers a meta function (checks and output shape). See `batchrules::meta`.
#[proc_macro_attribute]
pub fn meta(attr: TokenStream, item: TokenStream) -> TokenStream {
    registration::expand(Role::Meta, attr.into(), item.into()).into()
}

/// Registers a batching rule for a primitive op. See `batchrules::batching_rule`.
#[proc_macro_attribute]
pub fn batching_rule(attr: TokenStream, item: TokenStream) -> TokenStream {
    registration::expand(Role::BatchingRule, attr.into(), item.into()).into()
}

/// Registers the vector-Jacobian product of a differentiable primitive op. See
/// `batchrules::vjp`.
#[proc_macro_attribute]
pub fn vjp(attr: TokenStream, item: TokenStream) -> TokenStream {
    registration::expand(Role::Vjp, attr.into(), item.into()).into()
}

/// Registers the Jacobian-vector product (the forward-mode derivative) of a
/// differentiable primitive op that its table does not mark `linear`. See
/// `batchrules::jvp`, which documents it.
///
/// The function takes the kernel's parameters, then each output (`result`,
/// or `result0`, `result1`, ...), then one tangent per tensor argument
/// (`<argument>_tangent`: `Option<&Tensor>`, `&[Option<Tensor>]` for a
/// `Tensor[]`; `None` is zero), and returns the tangent of each output
/// (`Option<Tensor>`, a tuple for several, `Vec<Option<Tensor>>` for a
/// `Tensor[]` output). For `mul(Tensor self, Tensor other) -> Tensor`:
///
/// ```ignore
/// use batchrules::{jvp, ops, Result, Tensor};
///
/// // d(a * b) = da * b + a * db
/// #[jvp(op = "mul")]
/// fn mul_jvp(
///     a: &Tensor,
///     b: &Tensor,
///     _result: &Tensor,
///     a_tangent: Option<&Tensor>,
///     b_tangent: Option<&Tensor>,
/// ) -> Result<Option<Tensor>> {
///     let da = a_tangent.map(|t| ops::mul(t, b)).transpose()?;
///     let db = b_tangent.map(|t| ops::mul(a, t)).transpose()?;
///     Ok(match (da, db) {
///         (Some(x), Some(y)) => Some(ops::add(&x, &y)?),
///         (x, y) => x.or(y),
///     })
/// }
/// ```
///
/// (Not run here: this crate cannot depend on `batchrules`; the examples of
/// `batchrules::jvp` and the guide's "Writing a jvp" are compiled and run as
/// its doc tests.) Tangent parameters are matched by position, so their names
/// are free; the signature shown in messages names them after the arguments.
#[proc_macro_attribute]
pub fn jvp(attr: TokenStream, item: TokenStream) -> TokenStream {
    registration::expand(Role::Jvp, attr.into(), item.into()).into()
}

/// Registers the decomposition of a composite op. See `batchrules::decompose`.
#[proc_macro_attribute]
pub fn decompose(attr: TokenStream, item: TokenStream) -> TokenStream {
    registration::expand(Role::Decomposition, attr.into(), item.into()).into()
}

/// `#[derive(TensorTree)]` (module `tree`): implements `TensorTree` for a
/// struct of tensors. Use it as `batchrules::TensorTree`, which documents it.
#[proc_macro_derive(TensorTree, attributes(tree))]
pub fn derive_tensor_tree(input: TokenStream) -> TokenStream {
    tree::derive(input.into()).into()
}
