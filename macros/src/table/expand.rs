//! The items `op_table!` writes into the invoking module.
//!
//! Every runtime path goes through `__rt`, a hidden re-export of the runtime's
//! `__private` module made from the crate path the runtime's `op_table!`
//! passes (`$crate`), so the table works under any name the user's
//! Cargo.toml gives the runtime. The registration attributes reach the
//! runtime the same way, as `path::to::table::__rt`.

use std::path::PathBuf;

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote};

use super::ast::{Kind, Op};
use crate::role::Role;
use crate::schema::{self, Schema};

/// Rewrites the bare names of a normalized type (`Tensor`, `Option`, ...) into
/// paths (into the runtime through `__rt`, into `core` and `std`), so the
/// generated code does not depend on what the module imports.
fn qualify(ty: &str) -> TokenStream {
    let tokens: TokenStream = ty.parse().unwrap_or_default();
    qualify_tokens(tokens)
}

fn qualify_tokens(tokens: TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    for tt in tokens {
        match tt {
            TokenTree::Ident(id) if id == "Option" => {
                out.extend(quote!(::core::option::Option));
            }
            TokenTree::Ident(id) if id == "Vec" => out.extend(quote!(::std::vec::Vec)),
            TokenTree::Ident(id)
                if ["Tensor", "TensorMeta", "DType", "Reduction", "Result"]
                    .contains(&id.to_string().as_str()) =>
            {
                out.extend(quote!(__rt::#id));
            }
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), qualify_tokens(g.stream()));
                ng.set_span(g.span());
                out.extend([TokenTree::Group(ng)]);
            }
            other => out.extend([other]),
        }
    }
    out
}

fn str_list(items: &[String]) -> TokenStream {
    quote!(&[#(#items),*])
}

fn role_signature(schema: &Schema, role: Role) -> TokenStream {
    let sig = schema.signature(role);
    let params = str_list(&sig.params);
    let names = str_list(&sig.param_names);
    let ret = &sig.ret;
    let display = &sig.display;
    quote! {
        __rt::schema::RoleSignature {
            params: #params,
            param_names: #names,
            ret: #ret,
            display: #display,
        }
    }
}

fn schema_const(op: &Op) -> TokenStream {
    let s = &op.schema;
    let name = &s.name;
    let text = &op.text;
    let doc = &op.doc;
    let kind = match op.kind {
        Kind::Primitive => quote!(Primitive),
        Kind::Composite => quote!(Composite),
    };
    let args = s.args.iter().map(|a| {
        let name = &a.name;
        let ty = Ident::new(a.ty.variant(), Span::call_site());
        let optional = a.optional;
        let default = match &a.default {
            Some(d) => quote!(::core::option::Option::Some(#d)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            __rt::schema::ArgSchema {
                name: #name,
                ty: __rt::schema::ArgType::#ty,
                optional: #optional,
                default: #default,
            }
        }
    });
    let returns = s.returns.iter().map(|b| {
        let ty = Ident::new(b.variant(), Span::call_site());
        quote!(__rt::schema::ArgType::#ty)
    });
    let kernel = role_signature(s, Role::Kernel);
    let meta = role_signature(s, Role::Meta);
    let rule = role_signature(s, Role::BatchingRule);
    let vjp = role_signature(s, Role::Vjp);
    let jvp = role_signature(s, Role::Jvp);
    let differentiable = op.differentiable;
    let linear = !op.linear.is_empty();
    let linear_in = &op.linear;
    let random = op.random;
    let samples = match &op.samples {
        Some(set) => quote!(::core::option::Option::Some(#set)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        __rt::schema::OpSchema {
            name: #name,
            kind: __rt::schema::OpKind::#kind,
            schema: #text,
            args: &[#(#args),*],
            returns: &[#(#returns),*],
            doc: #doc,
            kernel: #kernel,
            meta: #meta,
            rule: #rule,
            differentiable: #differentiable,
            vjp: #vjp,
            linear: #linear,
            linear_in: &[#(#linear_in),*],
            jvp: #jvp,
            random: #random,
            samples: #samples,
        }
    }
}

fn op_function(op: &Op, index: usize) -> TokenStream {
    let s = &op.schema;
    let fn_name = format_ident!("{}", schema::rust_ident(&s.name));
    let sig = s.signature(Role::Kernel);
    let params: Vec<Ident> = s
        .args
        .iter()
        .map(|a| format_ident!("{}", schema::rust_ident(&a.name)))
        .collect();
    let types: Vec<TokenStream> = sig.params.iter().map(|t| qualify(t)).collect();
    let ret = qualify(&sig.ret);
    let mut doc = String::new();
    if !op.doc.is_empty() {
        doc.push_str(op.doc.trim());
        doc.push_str("\n\n");
    }
    doc.push_str(&format!("Schema: `{}` ({} op).", op.text, op.kind.as_str()));
    if !op.differentiable {
        doc.push_str(" Not differentiable: no gradient flows through it.");
    }
    if !op.linear.is_empty() {
        let names: Vec<String> = op.linear.iter().map(|n| format!("`{n}`")).collect();
        doc.push_str(&format!(
            " Linear in {}: its jvp is the op applied to their tangents.",
            names.join(" and ")
        ));
    }
    if op.random {
        doc.push_str(" Random: draws from the stream `seed` names; under vmap it follows the vmap's randomness policy (`batchrules::Randomness`).");
    }
    let defaults: Vec<String> = s
        .args
        .iter()
        .filter_map(|a| {
            a.default
                .as_ref()
                .map(|d| format!("`{}` = `{d}`", schema::rust_ident(&a.name)))
        })
        .collect();
    if !defaults.is_empty() {
        doc.push_str(&format!(
            "\n\nSchema defaults: {} (documentation only: the function takes every argument).",
            defaults.join(", ")
        ));
    }
    quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments)]
        pub fn #fn_name(#(#params: #types),*) -> #ret {
            let args = [#(__rt::IntoArg::into_arg(#params)),*];
            let outs = __rt::call(&__TABLE, #index, &args)?;
            __rt::Outputs::from_outputs(outs)
        }
    }
}

/// The trait `Methods`: every op's methods on `Tensor` (see [`super::methods`]).
fn methods_trait(ops: &[Op]) -> TokenStream {
    let (decls, bodies): (Vec<_>, Vec<_>) = ops
        .iter()
        .flat_map(|op| {
            op.methods
                .iter()
                .map(move |m| super::methods::method_items(&op.schema, &op.doc, m, qualify))
        })
        .unzip();
    quote! {
        /// The ops of this table as methods on `Tensor`, with the schema's
        /// defaults applied: `x.sum()?`, `x.softmax(-1)?`, `x.matmul(&w)?`.
        /// Each method's documentation says which op call it makes; to pass
        /// an argument the method fixes, call the op function itself.
        ///
        /// Bring the methods into scope with `use <table module>::Methods as _;`
        /// (`batchrules::prelude` does so for the built-in table).
        pub trait Methods {
            #(#decls)*
        }

        impl Methods for __rt::Tensor {
            #(#bodies)*
        }
    }
}

pub fn table(krate: &TokenStream, paths: &[PathBuf], ops: &[Op]) -> TokenStream {
    let schemas = ops.iter().map(schema_const);
    let methods = methods_trait(ops);
    let functions = ops.iter().enumerate().map(|(i, op)| op_function(op, i));
    let indices = ops.iter().enumerate().map(|(i, op)| {
        let name = format_ident!("{}", schema::rust_ident(&op.schema.name));
        quote!(pub const #name: usize = #i;)
    });
    let count = ops.len();
    // Rebuild when a table file changes.
    let tracked = paths.iter().map(|p| {
        let p = p.display().to_string();
        let arg = Group::new(Delimiter::Parenthesis, quote!(#p));
        quote!(const _: &str = ::core::include_str! #arg;)
    });
    quote! {
        #(#tracked)*

        /// The runtime crate, under the name this crate gives it: every path of
        /// the generated code, here and in the registration attributes, goes
        /// through it.
        #[doc(hidden)]
        pub use #krate::__private as __rt;

        /// The built-in transforms' rule tables, which `#[batching_rule]`,
        /// `#[vjp]` and `#[jvp]` register into (the transforms sit above the
        /// glue `__rt` points at, so the tables have a path of their own).
        #[doc(hidden)]
        pub use #krate::transform as __transforms;

        /// The module path of this op table.
        #[doc(hidden)]
        pub const __PATH: &str = ::core::module_path!();

        /// The schemas of this table, read by the attribute macros' compile-time checks.
        #[doc(hidden)]
        pub const __SCHEMA: &[__rt::schema::OpSchema; #count] = &[#(#schemas),*];

        /// This table, as the registry indexes it.
        #[doc(hidden)]
        pub static __TABLE: __rt::schema::OpTable = __rt::schema::OpTable::new(__PATH, __SCHEMA);

        __rt::inventory::submit! {
            __rt::schema::TableRegistration(&__TABLE)
        }

        /// Each op's index in this table, under the op's name: code that
        /// needs an op's registry entry (`registry::entry(&__TABLE, __index::add)`)
        /// names it at compile time, never by a string.
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        pub mod __index {
            #(#indices)*
        }

        #(#functions)*

        #methods
    }
}
