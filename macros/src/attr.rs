//! The four registration attributes: `#[kernel]`, `#[meta]`, `#[batching_rule]`
//! and `#[decompose]`.
//!
//! Parse the attribute and the function (collecting every error), validate what
//! can be judged without the op table, then expand into the function itself,
//! `const` checks the compiler evaluates against the op table, and an
//! `inventory` registration.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, FnArg, Item, ItemFn, Lit, LitStr, Meta, Path, Token, Type};

use crate::types;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Kernel,
    Meta,
    BatchingRule,
    Decompose,
}

impl Role {
    fn attr(self) -> &'static str {
        match self {
            Role::Kernel => "kernel",
            Role::Meta => "meta",
            Role::BatchingRule => "batching_rule",
            Role::Decompose => "decompose",
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            Role::Decompose => &["op", "table", "vmap"],
            _ => &["op", "table"],
        }
    }

    fn runtime_role(self) -> TokenStream {
        match self {
            Role::Kernel => quote!(Kernel),
            Role::Meta => quote!(Meta),
            Role::BatchingRule => quote!(BatchingRule),
            Role::Decompose => quote!(Decomposition),
        }
    }
}

/// Collects errors so that one expansion reports all of them.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        let e = syn::Error::new(span, msg);
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
}

/// The parsed attribute arguments.
struct Args {
    op: Option<LitStr>,
    table: Option<Path>,
    vmap_fallback: bool,
}

fn parse_args(role: Role, attr: TokenStream, errors: &mut Errors) -> Args {
    let mut op_seen = false;
    let mut args = Args {
        op: None,
        table: None,
        vmap_fallback: false,
    };
    let example = format!("#[{}(op = \"name\")]", role.attr());
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr.clone()) {
        Ok(m) => m,
        Err(e) => {
            errors.push(
                e.span(),
                format!("cannot parse the attribute arguments; write `{example}`"),
            );
            return args;
        }
    };
    for meta in metas {
        let Meta::NameValue(nv) = &meta else {
            errors.push(
                meta.span(),
                format!("expected `key = value` arguments, as in `{example}`"),
            );
            continue;
        };
        let key = nv.path.to_token_stream().to_string();
        let string = match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(s.clone()),
            _ => None,
        };
        match key.as_str() {
            "op" => match string {
                _ if std::mem::replace(&mut op_seen, true) && args.op.is_none() => {}
                Some(s) if args.op.is_some() => {
                    errors.push(
                        s.span(),
                        format!(
                            "`op` is given twice (`op = {:?}` and `op = {:?}`), but a function registers for exactly one op; keep one `op = ...`, and register the other op with a function of its own",
                            args.op.as_ref().map(LitStr::value).unwrap_or_default(),
                            s.value()
                        ),
                    );
                }
                Some(s) => args.op = Some(s),
                None => errors.push(
                    nv.value.span(),
                    format!(
                        "the value of `op` must be a string literal naming the op, e.g. `op = \"{}\"`",
                        nv.value.to_token_stream()
                    ),
                ),
            },
            "table" if role.keys().contains(&"table") => match &nv.value {
                Expr::Path(p) => args.table = Some(p.path.clone()),
                other => errors.push(
                    other.span(),
                    match &string {
                        Some(s) => format!(
                            "the value of `table` must be the path of the module that invokes `op_table!`, not a string; write it without quotes: `table = {}`",
                            s.value()
                        ),
                        None => "the value of `table` must be the path of the module that invokes `op_table!`, e.g. `table = crate::ops`".to_string(),
                    },
                ),
            },
            "vmap" if role == Role::Decompose => match string.as_ref().map(LitStr::value) {
                Some(v) if v == "fallback" => args.vmap_fallback = true,
                Some(v) if v == "decompose" => args.vmap_fallback = false,
                _ => errors.push(
                    nv.value.span(),
                    format!(
                        "`vmap = {}` is not a vmap mode of `#[decompose]`: write `vmap = \"decompose\"` (the default: run the decomposition on the batched tensors) or `vmap = \"fallback\"` (run the per-example loop instead)",
                        nv.value.to_token_stream()
                    ),
                ),
            },
            "vmap" => errors.push(
                nv.path.span(),
                format!(
                    "`vmap` only applies to `#[decompose]`, where it chooses how vmap runs a decomposition; `#[{}]` takes only {}, so remove `vmap = ...`",
                    role.attr(),
                    role.keys()
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            ),
            _ => errors.push(
                nv.path.span(),
                format!(
                    "unknown key `{key}` for `#[{}]`; the keys are {}",
                    role.attr(),
                    role.keys()
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        }
    }
    if !op_seen {
        errors.push(
            Span::call_site(),
            format!(
                "`#[{}]` needs the op it registers for: write `{example}`",
                role.attr()
            ),
        );
    }
    args
}

fn validate_fn(
    role: Role,
    op: Option<&LitStr>,
    item: &Item,
    errors: &mut Errors,
) -> Option<ItemFn> {
    // The attribute as written, for messages: `#[kernel(op = "triu")]`.
    let attr = match op {
        Some(op) => format!("#[{}(op = {:?})]", role.attr(), op.value()),
        None => format!("#[{}]", role.attr()),
    };
    let Item::Fn(f) = item else {
        errors.push(
            item.span(),
            format!(
                "`{attr}` registers a function, but it is placed on something that is not a free function; put it on a `fn` item with the op's signature"
            ),
        );
        return None;
    };
    let sig = &f.sig;
    let what = format!("a `{attr}` function");
    if let Some(a) = &sig.asyncness {
        errors.push(
            a.span(),
            format!(
                "{what} cannot be `async`: the dispatcher calls it synchronously; remove `async`"
            ),
        );
    }
    if let Some(u) = &sig.unsafety {
        errors.push(
            u.span(),
            format!("{what} cannot be `unsafe`: the dispatcher calls it as a safe fn; remove `unsafe` and wrap the unsafe code in a block"),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.push(
            abi.span(),
            format!(
                "{what} must use the Rust ABI; remove `{}`",
                abi.to_token_stream()
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        errors.push(v.span(), format!("{what} cannot be variadic"));
    }
    for param in &sig.generics.params {
        if !matches!(param, syn::GenericParam::Lifetime(_)) {
            errors.push(
                param.span(),
                format!("{what} cannot be generic: it is registered as one concrete fn; write a non-generic wrapper that calls the generic code"),
            );
        }
    }
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => errors.push(
                r.span(),
                format!("{what} must be a free function, not a method; remove `self`"),
            ),
            FnArg::Typed(t) if mentions_impl(&t.ty) => errors.push(
                t.ty.span(),
                format!("{what} cannot take `impl Trait` parameters (that makes it generic); write the concrete type the op schema gives"),
            ),
            FnArg::Typed(_) => {}
        }
    }
    Some(f.clone())
}

/// Whether a type contains `impl Trait` anywhere.
fn mentions_impl(ty: &Type) -> bool {
    fn scan(ts: TokenStream) -> bool {
        ts.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == "impl",
            proc_macro2::TokenTree::Group(g) => scan(g.stream()),
            _ => false,
        })
    }
    scan(ty.to_token_stream())
}

pub fn expand(role: Role, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = parse_args(role, attr, &mut errors);
    let parsed: Option<Item> = match syn::parse2::<Item>(item.clone()) {
        Ok(i) => Some(i),
        Err(_) => {
            errors.push(
                Span::call_site(),
                format!(
                    "`#[{}]` must be placed on a free function (`fn`)",
                    role.attr()
                ),
            );
            None
        }
    };
    let func = parsed
        .as_ref()
        .and_then(|i| validate_fn(role, args.op.as_ref(), i, &mut errors));
    match (errors.0, func, args.op) {
        (None, Some(func), Some(op)) => expand_ok(role, &func, &op, args.table, args.vmap_fallback),
        (Some(e), _, _) => {
            let err = e.to_compile_error();
            quote!(#item #err)
        }
        _ => item,
    }
}

/// The spans of the first and last token of `tokens`.
fn span_range(tokens: &dyn ToTokens) -> (Span, Span) {
    let mut spans = tokens.to_token_stream().into_iter().map(|t| t.span());
    let first = spans.next().unwrap_or_else(Span::call_site);
    (first, spans.last().unwrap_or(first))
}

/// A `const` item that fails the build with the message `call` returns, if any.
/// The failing expression is made of tokens carrying the first and the last
/// span of `tokens`, so rustc points at all of the user's tokens, not just the
/// first one.
fn check((first, last): (Span, Span), call: TokenStream) -> TokenStream {
    let open = quote_spanned!(first=> ::core::panic!);
    let args = quote_spanned!(last=> ("{}", msg.as_str()));
    quote_spanned! {first=>
        const _: () = {
            if let ::core::option::Option::Some(msg) = #call {
                #open #args
            }
        };
    }
}

fn expand_ok(
    role: Role,
    func: &ItemFn,
    op: &LitStr,
    table: Option<Path>,
    vmap_fallback: bool,
) -> TokenStream {
    let table = table.map_or_else(|| quote!(::batchrules::ops), |p| quote!(#p));
    let private = quote!(::batchrules::__private);
    let runtime_role = role.runtime_role();
    let role_path = quote!(#private::Role::#runtime_role);
    let sig = &func.sig;
    let name = &sig.ident;
    let schema = quote!(#table::__SCHEMA);

    let param_types: Vec<&Type> = sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(t) => Some(&*t.ty),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let normalized: Vec<String> = param_types.iter().map(|t| types::normalize(t)).collect();
    let count = normalized.len();

    let mut checks = vec![check(
        (op.span(), op.span()),
        quote!(#private::check_op(#schema, #table::__PATH, #op, #role_path)),
    )];
    checks.push(check(
        (sig.paren_token.span.open(), sig.paren_token.span.close()),
        quote!(#private::check_arity(#schema, #op, #role_path, #count)),
    ));
    for (i, (ty, norm)) in param_types.iter().zip(&normalized).enumerate() {
        checks.push(check(
            span_range(ty),
            quote!(#private::check_param(#schema, #op, #role_path, #count, #i, #norm)),
        ));
    }
    let ret_norm = types::normalize_return(&sig.output);
    let ret_span = match &sig.output {
        syn::ReturnType::Default => {
            let close = sig.paren_token.span.close();
            (close, close)
        }
        syn::ReturnType::Type(_, t) => span_range(t),
    };
    checks.push(check(
        ret_span,
        quote!(#private::check_return(#schema, #op, #role_path, #ret_norm)),
    ));

    // The shim unpacks the erased arguments into the function's own parameter
    // types. It goes through probes, so a parameter type that the checks above
    // reject does not also produce a trait error here.
    let item_ty = match role {
        Role::Meta => quote!(::batchrules::TensorMeta),
        _ => quote!(::batchrules::Tensor),
    };
    let mut value_index = 0usize;
    let call_args: Vec<TokenStream> = param_types
        .iter()
        .zip(&normalized)
        .map(|(ty, norm)| {
            let ty = types::erase_lifetimes(ty);
            let is_bdim = role == Role::BatchingRule
                && (norm == "Option<usize>" || norm == "&[Option<usize>]");
            if is_bdim {
                let i = value_index.wrapping_sub(1);
                quote!((&&#private::Probe::<#private::BDim, #ty>::new()).bdim(bdims, #i)?)
            } else {
                let i = value_index;
                value_index += 1;
                quote!((&&#private::Probe::<#item_ty, #ty>::new()).arg(args, #i)?)
            }
        })
        .collect();
    let shim = format_ident!("__batchrules_{}_shim", role.attr());
    let (shim_fn, func_value) = match role {
        Role::BatchingRule => (
            quote! {
                fn #shim(
                    args: &[#private::Arg<::batchrules::Tensor>],
                    bdims: &[#private::BDim],
                ) -> ::batchrules::Result<#private::Outs<#private::BatchedOutput>> {
                    #[allow(unused_imports)]
                    use #private::{ProbeArg as _, ProbeArgFallback as _, ProbeBDim as _, ProbeBDimFallback as _, ProbeRet as _, ProbeRetFallback as _};
                    let _ = bdims;
                    (&&#private::RetProbe::<#private::BatchedOutput, _>::new(#name(#(#call_args),*))).outputs()
                }
            },
            quote!(#private::RegisteredFn::BatchingRule(#shim)),
        ),
        _ => (
            quote! {
                fn #shim(
                    args: &[#private::Arg<#item_ty>],
                ) -> ::batchrules::Result<#private::Outs<#item_ty>> {
                    #[allow(unused_imports)]
                    use #private::{ProbeArg as _, ProbeArgFallback as _, ProbeRet as _, ProbeRetFallback as _};
                    (&&#private::RetProbe::<#item_ty, _>::new(#name(#(#call_args),*))).outputs()
                }
            },
            match role {
                Role::Kernel => quote!(#private::RegisteredFn::Kernel(#shim)),
                Role::Meta => quote!(#private::RegisteredFn::Meta(#shim)),
                _ => {
                    let mode = if vmap_fallback {
                        quote!(Fallback)
                    } else {
                        quote!(Decompose)
                    };
                    quote!(#private::RegisteredFn::Decomposition(#shim, #private::DecomposeVmap::#mode))
                }
            },
        ),
    };
    let name_str = name.to_string();
    let loc_span = name.span();
    let file = quote_spanned!(loc_span=> ::core::file!());
    let line = quote_spanned!(loc_span=> ::core::line!());
    quote! {
        #func
        #(#checks)*
        const _: () = {
            #shim_fn
            #private::inventory::submit! {
                #private::Registration {
                    table: &#table::__TABLE,
                    op: #op,
                    func: #func_value,
                    location: #private::Location {
                        file: #file,
                        line: #line,
                        function: #name_str,
                    },
                }
            }
        };
    }
}
