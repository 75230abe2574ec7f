//! What can be judged of a registered item without its op table: that it is a
//! plain function the dispatcher can call through a `fn` pointer.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{FnArg, Item, ItemFn, LitStr, Type};

use crate::ctxt::Ctxt;
use crate::role::Role;

/// The function under the attribute, if the item is one; every problem with it
/// reported to `cx`.
pub fn function(cx: &Ctxt, role: Role, op: Option<&LitStr>, item: &Item) -> Option<ItemFn> {
    // The attribute as written, for messages: `#[kernel(op = "triu")]`.
    let attr = match op {
        Some(op) => format!("#[{}(op = {:?})]", role.attr(), op.value()),
        None => format!("#[{}]", role.attr()),
    };
    let Item::Fn(f) = item else {
        cx.error_spanned_by(
            item,
            format!(
                "`{attr}` registers a function, but it is placed on something that is not a free function; put it on a `fn` item with the op's signature"
            ),
        );
        return None;
    };
    let sig = &f.sig;
    let what = format!("a `{attr}` function");
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(
            a,
            format!(
                "{what} cannot be `async`: the dispatcher calls it synchronously; remove `async`"
            ),
        );
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        cx.error_spanned_by(
            u,
            format!("{what} cannot be `unsafe`: the dispatcher calls it as a safe fn; remove `unsafe` and wrap the unsafe code in a block"),
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(
            abi,
            format!(
                "{what} must use the Rust ABI; remove `{}`",
                abi.to_token_stream()
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(v, format!("{what} cannot be variadic"));
    }
    for param in &sig.generics.params {
        if !matches!(param, syn::GenericParam::Lifetime(_)) {
            cx.error_spanned_by(
                param,
                format!("{what} cannot be generic: it is registered as one concrete fn; write a non-generic wrapper that calls the generic code"),
            );
        }
    }
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => cx.error_spanned_by(
                r,
                format!("{what} must be a free function, not a method; remove `self`"),
            ),
            FnArg::Typed(t) if mentions_impl(&t.ty) => cx.error_spanned_by(
                &t.ty,
                format!("{what} cannot take `impl Trait` parameters (that makes it generic); write the concrete type the op schema gives"),
            ),
            FnArg::Typed(_) => {}
        }
    }
    Some(f.clone())
}

/// Whether a type contains `impl Trait` anywhere.
pub fn mentions_impl(ty: &Type) -> bool {
    fn scan(ts: TokenStream) -> bool {
        ts.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == "impl",
            proc_macro2::TokenTree::Group(g) => scan(g.stream()),
            _ => false,
        })
    }
    scan(ty.to_token_stream())
}
