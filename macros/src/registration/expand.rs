//! Expansion of a registration. The output is the user's function, unchanged
//! but for items at the start of its body:
//!
//! * `const` checks the compiler evaluates against the op table (the op exists,
//!   the role fits its kind, the arity, each parameter's and the return type's
//!   spelling), each failing the build with a message pointed at the user's
//!   tokens;
//! * assertions that each parameter and the return type *is* the type the op
//!   table expects (so a look-alike type fails and an alias passes);
//! * the shim that unpacks erased arguments and calls the function, and its
//!   `inventory` registration.
//!
//! The output is one item, the function, so it is also valid where the
//! registration cannot work: inside an `impl` block, where the function is an
//! associated function, or inside another function's body. There the
//! registration cannot name the function, and the build fails with one
//! message saying so (see [`registration_items`]).
//!
//! Runtime paths all go through the table module, `#table::__rt`, which
//! `op_table!` points at the runtime crate under whatever name the user's crate
//! gives it.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::{Item, Stmt};

use super::ast::Registration;
use super::attr::VmapMode;
use super::valid::mentions_impl;
use crate::role::Role;
use crate::types;

/// The spans of the first and last token of `tokens`.
fn span_range(tokens: &dyn ToTokens) -> (Span, Span) {
    let mut spans = tokens.to_token_stream().into_iter().map(|t| t.span());
    let first = spans.next().unwrap_or_else(Span::call_site);
    (first, spans.last().unwrap_or(first))
}

/// A `const` item that fails the build with the message `call` returns, if any.
/// The failing expression is made of tokens carrying the first and the last
/// span of the user's tokens, so rustc points at all of them, not just the
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

pub fn registration(r: &Registration) -> TokenStream {
    let items = [
        registered(r),
        spelling_checks(r),
        type_assertions(r),
        registration_items(r),
    ];
    let mut func = r.func.clone();
    let stmts = items
        .into_iter()
        .map(|tokens| Stmt::Item(Item::Verbatim(tokens)));
    func.block.stmts.splice(0..0, stmts);
    func.into_token_stream()
}

/// The paths every part of the expansion uses.
struct Paths {
    /// The runtime crate's hidden module, through the table: `#table::__rt`.
    rt: TokenStream,
    /// The schemas: `#table::__SCHEMA`.
    schema: TokenStream,
    /// The `const` registration every check reads (see [`registered`]).
    reg: syn::Ident,
}

impl Paths {
    fn new(r: &Registration) -> Self {
        let table = &r.table;
        Paths {
            rt: quote!(#table::__rt),
            schema: quote!(#table::__SCHEMA),
            reg: format_ident!("__BATCHRULES_{}", r.role.attr().to_uppercase()),
        }
    }
}

/// The registration as the checks see it (`Registered`: the table, the op,
/// the role), a `const` made once: with it the op's index in the table,
/// since the checks' `const` evaluation is dominated by name lookups, and
/// there are about four checks per parameter.
fn registered(r: &Registration) -> TokenStream {
    let Paths { rt, schema, reg } = Paths::new(r);
    let op = &r.op;
    let variant = crate::role::variant(r.role);
    quote! {
        #[allow(non_upper_case_globals)]
        const #reg: #rt::Registered<'static> =
            #rt::Registered::new(#schema, #op, #rt::Role::#variant);
    }
}

/// `Spelled { text, decides }`: a type as the user wrote it, for the checks.
fn spelled(rt: &TokenStream, spelling: &str, decides: bool) -> TokenStream {
    quote!(#rt::Spelled { text: #spelling, decides: #decides })
}

/// The `const` checks on the op and on the spelling of the signature.
fn spelling_checks(r: &Registration) -> TokenStream {
    let Paths { rt, reg, .. } = Paths::new(r);
    let table = &r.table;
    let op = &r.op;
    let sig = &r.func.sig;
    let count = r.params.len();
    let mut checks = vec![check(
        (op.span(), op.span()),
        quote!(#reg.check_op(#table::__PATH)),
    )];
    checks.push(check(
        (sig.paren_token.span.open(), sig.paren_token.span.close()),
        quote!(#reg.check_arity(#count)),
    ));
    for (i, p) in r.params.iter().enumerate() {
        let found = spelled(&rt, &p.spelling, p.decides);
        checks.push(check(
            span_range(&p.ty),
            quote!(#reg.check_param(#count, #i, #found)),
        ));
    }
    let ret_span = match &r.ret.ty {
        None => {
            let close = sig.paren_token.span.close();
            (close, close)
        }
        Some(t) => span_range(t),
    };
    let found = spelled(&rt, &r.ret.spelling, r.ret.decides);
    checks.push(check(ret_span, quote!(#reg.check_return(#found))));
    quote!(#(#checks)*)
}

/// Assertions, evaluated by the trait solver, that each parameter and the
/// return type are the types the op's schema gives this role:
/// `<UserType as ParamIs<Expected, CHECKED, N>>::OK`, the expected type named
/// by a code the runtime computes from the op table (`param_code`). `CHECKED`
/// is false when a `const` check above already reports the parameter (or the
/// op is unknown), so one mistake gives one error.
fn type_assertions(r: &Registration) -> TokenStream {
    let Paths { rt, reg, .. } = Paths::new(r);
    let attr = format!("#[{}]", r.role.attr());
    let op_name = r.op.value();
    let count = r.params.len();
    let param_message = format!(
        "parameter {{N}} of the `{attr}` for `{op_name}` has type `{{Self}}`, but the op table passes `{{E}}`, a different type (the compiler compares the types themselves, not their names). Write `{{E}}`, or an alias of it."
    );
    let return_message = format!(
        "the `{attr}` for `{op_name}` returns `{{Self}}`, but it must return `{{E}}`, a different type (the compiler compares the types themselves, not their names). Write `{{E}}`, or an alias of it."
    );
    let params = r.params.iter().enumerate().map(|(i, p)| {
        let ty = types::erase_lifetimes(&p.ty);
        let found = spelled(&rt, &p.spelling, p.decides);
        let code = format_ident!("P{i}");
        let number = i + 1;
        quote! {
            const #code: u8 = #rt::param_code(#reg, #count, #i, #found);
            let () = <#ty as ParamIs<
                <#rt::Code<#code> as #rt::ParamType<'_>>::Type,
                { #code != #rt::OFF },
                #number,
            >>::OK;
        }
    });
    let ret = match &r.ret.ty {
        // `impl Trait` cannot be named here; its spelling check already fails.
        Some(ty) if mentions_impl(ty) => None,
        Some(ty) => Some(types::erase_lifetimes(ty).into_token_stream()),
        None => {
            let close = r.func.sig.paren_token.span.close();
            Some(quote_spanned!(close=> ()))
        }
    };
    let ret = ret.map(|ty| {
        let found = spelled(&rt, &r.ret.spelling, r.ret.decides);
        quote! {
            const R: (u8, u8, u8) = #rt::return_code(#reg, #found);
            let () = <#ty as ReturnIs<
                <#rt::ReturnCode<{ R.0 }, { R.1 }, { R.2 }> as #rt::ReturnType>::Type,
                { R.0 != 0 },
            >>::OK;
        }
    });
    quote! {
        const _: () = {
            #[diagnostic::on_unimplemented(message = #param_message, label = "expected `{E}`")]
            trait ParamIs<E: ?Sized, const CHECKED: bool, const N: usize> {
                const OK: () = ();
            }
            impl<T: ?Sized, const N: usize> ParamIs<T, true, N> for T {}
            impl<T: ?Sized, E: ?Sized, const N: usize> ParamIs<E, false, N> for T {}
            #[diagnostic::on_unimplemented(message = #return_message, label = "expected `{E}`")]
            trait ReturnIs<E: ?Sized, const CHECKED: bool> {
                const OK: () = ();
            }
            impl<T: ?Sized> ReturnIs<T, true> for T {}
            impl<T: ?Sized, E: ?Sized> ReturnIs<E, false> for T {}
            #[allow(clippy::let_unit_value)]
            fn _types() {
                #(#params)*
                #ret
            }
        };
    }
}

/// The shim and its registration.
///
/// The shim calls the function by name. That name resolves only where the
/// function is an item of a module: inside an `impl` block it is an associated
/// function, which nothing nested in it can name, and inside another
/// function's body it is not an item of any module. So the registration is two
/// nested blocks: the inner one imports the module's items (`use self::*`),
/// which finds the function where it is a module item; the outer one declares
/// a stand-in of the same name, which is found only otherwise, and which fails
/// one trait assertion whose message says what to do.
fn registration_items(r: &Registration) -> TokenStream {
    let Paths { rt, schema, reg } = Paths::new(r);
    let table = &r.table;
    let op = &r.op;
    let name = &r.func.sig.ident;
    let item_ty = Ident::new(r.role.layout().tensor, Span::call_site());
    let item_ty = quote!(#rt::#item_ty);
    let location = location(r, &rt);
    let shim_name = format_ident!("__batchrules_{}_shim", r.role.attr());
    let shim = Shim::of(r, &rt, &item_ty, &schema, &location, &shim_name);

    // The arguments, unpacked through probes: a parameter type that the checks
    // reject does not also produce a trait error here. Whether a parameter is
    // an argument, and which, is read from the schema and the role's layout
    // (`param_source`).
    let call_args: Vec<TokenStream> = r
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let ty = types::erase_lifetimes(&p.ty);
            let arg = |at| quote!((&&#rt::Probe::<#item_ty, #ty>::new()).arg(args, #at)?);
            // Without other inputs, every parameter is an argument, in order.
            let Some((x, read)) = &shim.other else {
                return arg(quote!(#i));
            };
            let arg = arg(quote!(SOURCE.1));
            quote!({
                const SOURCE: (bool, usize) = #reg.param_source(#i);
                if SOURCE.0 {
                    (&&#rt::Probe::<#x, #ty>::new()).#read?
                } else {
                    #arg
                }
            })
        })
        .collect();

    // Where the function is not a module item, `#name(...)` builds the
    // stand-in instead of calling it, and this assertion fails.
    let ret_ty = match &r.ret.ty {
        Some(ty) if mentions_impl(ty) => None,
        Some(ty) => Some(types::erase_lifetimes(ty).into_token_stream()),
        None => Some(quote!(())),
    };
    let module_level = ret_ty.map(|ret_ty| {
        let span = name.span();
        // `ret` keeps the call-site span of the `let ret` it names: a
        // function whose name comes from a `macro_rules!` parameter has
        // another hygiene context, which must not be given to this local.
        let ret = proc_macro2::Ident::new("ret", proc_macro2::Span::call_site());
        quote_spanned!(span=> module_level::<_, #ret_ty>(&#ret);)
    });
    let module_level_message = format!(
        "`{}` is on `{name}`, which is not declared at module level: it is an associated function in an `impl` block (or a function inside another function's body), and the registration cannot name it there. Move `{name}` out to module level; to keep an associated function, register a module-level function that calls it.",
        r.attribute()
    );
    let module_level_label = "declared inside an `impl` block or a function body";
    let stand_in_params: Vec<_> = (0..r.params.len()).map(|i| format_ident!("P{i}")).collect();

    let Shim {
        inputs,
        prelude,
        output,
        finish,
        register,
        ..
    } = shim;
    let shim = shim_name;
    let shim_fn = quote! {
        fn #shim(args: &[#rt::Arg<#item_ty>], #inputs) -> #rt::Result<#output> {
            #[allow(unused_imports)]
            use #rt::{ProbeArg as _, ProbeArgFallback as _, ProbeBDim as _, ProbeBDimFallback as _, ProbeRet as _, ProbeRetFallback as _, ProbeTensor as _, ProbeTensorFallback as _, ProbeGradients as _, ProbeGradientsFallback as _, ProbeJvp as _, ProbeJvpFallback as _, ProbeTangents as _, ProbeTangentsFallback as _};
            #prelude
            let ret = #name(#(#call_args),*);
            #module_level
            #finish
        }
    };
    // The registry holds kernels, metas and decompositions; a transform's
    // rule goes to the rule table that transform owns, by op index.
    let submit = match register {
        Register::Rules(rules) => quote! {
            #rt::inventory::submit! {
                #table::__transforms::#rules::Registration(#rt::RuleRegistration {
                    table: &#table::__TABLE,
                    index: #reg.op,
                    rule: #shim,
                    location: #location,
                })
            }
        },
        Register::Registry(func) => quote! {
            #rt::inventory::submit! {
                #rt::Registration {
                    table: &#table::__TABLE,
                    op: #op,
                    func: #func,
                    location: #location,
                }
            }
        },
    };
    quote! {
        const _: () = {
            #[allow(non_camel_case_types, dead_code)]
            struct #name<#(#stand_in_params),*>(#(#stand_in_params),*);
            const _: () = {
                #[allow(unused_imports)]
                use self::*;
                #[diagnostic::on_unimplemented(message = #module_level_message, label = #module_level_label)]
                trait DeclaredAtModuleLevel<R> {}
                impl<T> DeclaredAtModuleLevel<T> for T {}
                fn module_level<T: DeclaredAtModuleLevel<R>, R>(_: &T) {}
                #shim_fn
                #submit
            };
        };
    }
}

/// `Location { file, line, function }` of the registered function, for the
/// registry's messages.
fn location(r: &Registration, rt: &TokenStream) -> TokenStream {
    let name = &r.func.sig.ident;
    let name_str = name.to_string();
    let file = quote_spanned!(name.span()=> ::core::file!());
    let line = quote_spanned!(name.span()=> ::core::line!());
    quote! {
        #rt::Location {
            file: #file,
            line: #line,
            function: #name_str,
        }
    }
}

/// Where a role's shim is registered.
enum Register {
    /// In the rule table of its transform, `#table::__transforms::<this>`.
    Rules(Ident),
    /// In the registry, as this `RegisteredFn`.
    Registry(TokenStream),
}

/// The calling convention of a role's function: how its transform (or the
/// registry) calls it through an erased shim. Which parameters the function
/// takes is the role's `SignatureLayout`, read through `param_source`; this
/// is what the erased inputs are that they are read from.
struct Shim {
    /// The shim's parameters after `args: &[Arg<..>]`.
    inputs: TokenStream,
    /// Statements before the call.
    prelude: TokenStream,
    /// The shim's output, inside its `Result`.
    output: TokenStream,
    /// How the function's return value, `ret`, becomes the output.
    finish: TokenStream,
    /// The probe type and call that read a parameter that is not an argument
    /// of the op, at `SOURCE.1`; `None` for a role whose function takes only
    /// the op's arguments.
    other: Option<(TokenStream, TokenStream)>,
    register: Register,
}

impl Shim {
    fn of(
        r: &Registration,
        rt: &TokenStream,
        item_ty: &TokenStream,
        schema: &TokenStream,
        location: &TokenStream,
        shim: &syn::Ident,
    ) -> Self {
        let reg = Paths::new(r).reg;
        let op = quote!(let op = #rt::schema_at(#schema, #reg.op)?;);
        let derivatives = quote!(::std::vec::Vec<::core::option::Option<#rt::Tensor>>);
        let rules = |name: &str| Register::Rules(Ident::new(name, Span::call_site()));
        match r.role {
            Role::BatchingRule => Shim {
                inputs: quote!(bdims: &[#rt::BDim]),
                prelude: quote!(),
                output: quote!(#rt::Outs<#rt::BatchedOutput>),
                finish: quote!((&&#rt::RetProbe::<#rt::BatchedOutput, _>::new(ret)).outputs()),
                other: Some((quote!(#rt::BDim), quote!(bdim(bdims, SOURCE.1)))),
                register: rules("batching_rules"),
            },
            Role::Vjp => Shim {
                inputs: quote!(outputs: &[#rt::Tensor], grads: &[#rt::Tensor]),
                prelude: op,
                output: derivatives,
                finish: quote! {
                    (&&#rt::RetProbe::<#rt::GradSlot, _>::new(ret)).gradients(op, &#location, args)
                },
                other: Some((
                    quote!(#rt::Tensor),
                    quote!(tensor(outputs, grads, SOURCE.1)),
                )),
                register: rules("vjps"),
            },
            Role::Jvp => Shim {
                inputs: quote! {
                    outputs: &[#rt::Tensor],
                    tangents: &[::std::vec::Vec<::core::option::Option<#rt::Tensor>>],
                },
                prelude: quote! {
                    #op
                    let inputs = #rt::JvpInputs { outputs, tangents, returns: op.returns.len() };
                },
                output: derivatives,
                finish: quote! {
                    (&&#rt::RetProbe::<#rt::GradSlot, _>::new(ret)).tangents(op, &#location, outputs)
                },
                other: Some((quote!(#rt::Tensor), quote!(jvp_input(&inputs, SOURCE.1)))),
                register: rules("jvps"),
            },
            Role::Kernel | Role::Meta | Role::Decomposition => Shim {
                inputs: quote!(),
                prelude: quote!(),
                output: quote!(#rt::Outs<#item_ty>),
                finish: quote!((&&#rt::RetProbe::<#item_ty, _>::new(ret)).outputs()),
                other: None,
                register: Register::Registry(match (r.role, r.vmap) {
                    (Role::Kernel, _) => quote!(#rt::RegisteredFn::Kernel(#shim)),
                    (Role::Meta, _) => quote!(#rt::RegisteredFn::Meta(#shim)),
                    (_, VmapMode::Fallback) => quote! {
                        #rt::RegisteredFn::Decomposition(#shim, #rt::DecomposeVmap::Fallback)
                    },
                    (_, VmapMode::Decompose) => quote! {
                        #rt::RegisteredFn::Decomposition(#shim, #rt::DecomposeVmap::Decompose)
                    },
                }),
            },
        }
    }
}
