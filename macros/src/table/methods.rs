//! The model writer's methods: each op whose first argument is a tensor
//! becomes a method of that tensor, with the schema's defaults applied, in a
//! trait `Methods` the table module declares and implements for `Tensor`.
//!
//! An op gets one method by default, named after it, taking the arguments
//! that have no default (`x.softmax(dim)`, `x.sum()`), when its first
//! argument is `Tensor self` or `Tensor input`. A table entry adds others
//! (or replaces that one, by reusing the op's name) with
//! `methods = ["sum_dim(dim)", "sum_keepdim(dim, keepdim=True)"]`: each spec
//! names the method and the arguments it takes after the receiver; an
//! argument not listed takes its default. In a spec:
//!
//! * `dim`: the method takes the argument; an optional one (`int? dim`) is
//!   taken as its plain type and passed as `Some`;
//! * `bias?`: an optional argument taken as the `Option` it is;
//! * `keepdim=True`: the argument fixed to a value (checked as a default is).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::role::Role;
use crate::schema::{self, Arg, Base, Schema};

/// How a method passes one of the op's arguments after the receiver.
#[derive(Clone, Debug)]
pub enum Binding {
    /// A parameter of the method; `some`: the argument is optional and the
    /// method takes its plain type, passing `Some`.
    Param { some: bool },
    /// A fixed value (a schema default, or a spec's `arg=value`).
    Value(String),
}

/// One method: its name and how it passes each argument after the receiver.
#[derive(Clone, Debug)]
pub struct Method {
    pub name: String,
    pub bindings: Vec<Binding>,
}

/// Whether the op's first argument can be a method's receiver.
fn has_receiver(s: &Schema) -> bool {
    matches!(s.args.first(), Some(a) if a.ty == Base::Tensor && !a.optional)
}

/// The method an op gets without a spec, if any.
pub fn default_method(s: &Schema) -> Option<Method> {
    let first = s.args.first()?;
    if !has_receiver(s) || !matches!(first.name.as_str(), "self" | "input") {
        return None;
    }
    let bindings = s.args[1..]
        .iter()
        .map(|a| match &a.default {
            Some(v) => Binding::Value(v.clone()),
            None => Binding::Param { some: false },
        })
        .collect();
    Some(Method {
        name: s.name.clone(),
        bindings,
    })
}

/// Parses a spec such as `sum_keepdim(dim, keepdim=True)` against the schema.
pub fn parse_spec(s: &Schema, spec: &str) -> Result<Method, String> {
    if !has_receiver(s) {
        return Err(format!(
            "`{}` has no method: its first argument is not a `Tensor`, and a method's receiver \
             is the op's first argument",
            s.name
        ));
    }
    let spec = spec.trim();
    let (name, rest) = spec
        .split_once('(')
        .ok_or("expected `name(args)`, e.g. `sum_dim(dim)`")?;
    let name = name.trim();
    let body = rest
        .trim_end()
        .strip_suffix(')')
        .ok_or("expected the argument list to end with `)`")?;
    if name.is_empty() || !is_method_name(name) {
        return Err(format!("method name `{name}` is not an identifier"));
    }
    let mut bindings: Vec<Option<Binding>> = vec![None; s.args.len() - 1];
    for piece in schema::split_top(body) {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let (arg_name, binding) = match piece.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (piece, None),
        };
        let (arg_name, keep_option) = match arg_name.strip_suffix('?') {
            Some(n) => (n.trim(), true),
            None => (arg_name, false),
        };
        let Some(i) = s.args[1..].iter().position(|a| a.name == arg_name) else {
            let receiver = &s.args[0].name;
            return Err(if arg_name == receiver.as_str() {
                format!("`{receiver}` is the method's receiver (`x.{name}(...)`); list only the arguments after it")
            } else {
                format!(
                    "`{arg_name}` is not an argument of `{}` (its arguments after the receiver: {})",
                    s.name,
                    s.args[1..].iter().map(|a| format!("`{}`", a.name)).collect::<Vec<_>>().join(", ")
                )
            });
        };
        if bindings[i].is_some() {
            return Err(format!("argument `{arg_name}` is listed twice"));
        }
        let arg = &s.args[i + 1];
        bindings[i] = Some(match (binding, keep_option) {
            (Some(_), true) => {
                return Err(format!(
                    "`{arg_name}?` takes the argument as an Option, so it cannot also be fixed to a value"
                ))
            }
            (Some(v), false) => {
                schema::check_default(arg, v).map_err(|e| e.replacen("default", "value", 1))?;
                Binding::Value(v.to_string())
            }
            (None, true) if !arg.optional => {
                return Err(format!(
                    "`{arg_name}?` takes an optional argument as an `Option`, and `{arg_name}` is not optional; write `{arg_name}` to take it, or leave it out to use its default"
                ))
            }
            (None, true) => Binding::Param { some: false },
            (None, false) => Binding::Param { some: arg.optional },
        });
    }
    let mut out = Vec::new();
    for (b, arg) in bindings.into_iter().zip(&s.args[1..]) {
        out.push(match (b, &arg.default) {
            (Some(b), _) => b,
            (None, Some(v)) => Binding::Value(v.clone()),
            (None, None) => {
                return Err(format!(
                    "argument `{}` has no default, so the method must take it: list it",
                    arg.name
                ))
            }
        });
    }
    Ok(Method {
        name: name.to_string(),
        bindings: out,
    })
}

fn is_method_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The Rust expression of a schema value (a default, or a spec's fixed
/// value), already checked against the argument's type.
fn value_expr(arg: &Arg, value: &str) -> TokenStream {
    if value == "None" {
        return quote!(::core::option::Option::None);
    }
    let inner = match arg.ty {
        Base::Int => {
            let v: i64 = value.parse().unwrap_or_default();
            quote!(#v)
        }
        Base::Float => {
            let v: f64 = value.parse().unwrap_or_default();
            quote!(#v)
        }
        Base::Bool => {
            let v = matches!(value, "True" | "true");
            quote!(#v)
        }
        Base::IntList => {
            let items: Vec<i64> = value
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .filter(|i| !i.trim().is_empty())
                .map(|i| i.trim().parse().unwrap_or_default())
                .collect();
            quote!(&[#(#items),*][..])
        }
        Base::ScalarType => {
            let v = format_ident!(
                "{}",
                match value {
                    "bool" => "Bool",
                    "i64" => "I64",
                    "f64" => "F64",
                    _ => "F32",
                }
            );
            quote!(__rt::DType::#v)
        }
        Base::Reduction => {
            let v = format_ident!(
                "{}",
                match value {
                    "none" => "None",
                    "sum" => "Sum",
                    _ => "Mean",
                }
            );
            quote!(__rt::Reduction::#v)
        }
        Base::Str => {
            let v = crate::schema::str_default(value).unwrap_or_default();
            quote!(#v)
        }
        Base::Tensor | Base::TensorList => quote!(::core::option::Option::None),
    };
    if arg.optional {
        quote!(::core::option::Option::Some(#inner))
    } else {
        inner
    }
}

/// A value as the method's documentation shows it (`Some(dim)`, `false`,
/// `Reduction::Mean`).
fn value_text(arg: &Arg, value: &str) -> String {
    let inner = match (arg.ty, value) {
        (_, "None") => return "None".to_string(),
        (Base::Bool, v) => matches!(v, "True" | "true").to_string(),
        (Base::IntList, v) if !v.starts_with('[') => format!("&[{v}]"),
        (Base::IntList, v) => format!("&{v}"),
        (Base::ScalarType, v) => format!("DType::{}", v.to_uppercase()),
        (Base::Reduction, v) => format!("Reduction::{}{}", v[..1].to_uppercase(), &v[1..]),
        (Base::Str, v) => format!("{:?}", crate::schema::str_default(v).unwrap_or_default()),
        (_, v) => v.to_string(),
    };
    if arg.optional {
        format!("Some({inner})")
    } else {
        inner
    }
}

/// One method: its declaration in the trait and its body in the impl.
pub fn method_items(
    s: &Schema,
    doc: &str,
    m: &Method,
    qualify: impl Fn(&str) -> TokenStream,
) -> (TokenStream, TokenStream) {
    let name = format_ident!("{}", schema::rust_ident(&m.name));
    let op_fn = format_ident!("{}", schema::rust_ident(&s.name));
    let mut params = Vec::new();
    let mut call = vec![quote!(self)];
    let mut shown = vec!["self".to_string()];
    let mut taken = Vec::new();
    for (arg, b) in s.args[1..].iter().zip(&m.bindings) {
        let ident = format_ident!("{}", schema::rust_ident(&arg.name));
        match b {
            Binding::Param { some } => {
                let mut plain = arg.clone();
                plain.optional = arg.optional && !some;
                let ty = qualify(&Schema::param_type(&plain, Role::Kernel));
                params.push(quote!(#ident: #ty));
                taken.push(format!("`{}`", schema::rust_ident(&arg.name)));
                if *some {
                    call.push(quote!(::core::option::Option::Some(#ident)));
                    shown.push(format!("Some({})", schema::rust_ident(&arg.name)));
                } else {
                    call.push(quote!(#ident));
                    shown.push(schema::rust_ident(&arg.name));
                }
            }
            Binding::Value(v) => {
                call.push(value_expr(arg, v));
                shown.push(value_text(arg, v));
            }
        }
    }
    let ret = qualify(&s.signature(Role::Kernel).ret);
    let summary = doc
        .split(". ")
        .next()
        .unwrap_or("")
        .trim()
        .trim_end_matches('.');
    let mut text = String::new();
    if !summary.is_empty() {
        text.push_str(summary);
        text.push_str(".\n\n");
    }
    text.push_str(&format!(
        "`x.{}(..)` is [`{}`](fn@{})`({})`.",
        m.name,
        s.name,
        schema::rust_ident(&s.name),
        shown.join(", ")
    ));
    let decl = quote! {
        #[doc = #text]
        fn #name(&self #(, #params)*) -> #ret;
    };
    let body = quote! {
        #[inline]
        fn #name(&self #(, #params)*) -> #ret {
            #op_fn(#(#call),*)
        }
    };
    (decl, body)
}
