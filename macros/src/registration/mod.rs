//! The six registration attributes: `#[kernel]`, `#[meta]`, `#[batching_rule]`,
//! `#[decompose]`, `#[vjp]` and `#[jvp]`.
//!
//! Phases, as in thiserror and serde_derive: [`attr`] parses the arguments,
//! [`valid`] checks the function for what needs no op table, [`ast`] holds the
//! typed registration, and [`expand`](fn@expand) writes the function back with the
//! compile-time checks against the op table and the registration inside it.
//! Every phase reports to one [`Ctxt`]; nothing is expanded while it holds an
//! error, and the user's item is kept so it causes no errors of its own.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::{Span, TokenStream};
use syn::Item;

use crate::ctxt::Ctxt;
use crate::role::Role;

pub fn expand(role: Role, args: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let args = attr::parse(&cx, role, args);
    let func = match syn::parse2::<Item>(item.clone()) {
        Ok(parsed) => valid::function(&cx, role, args.op.as_ref(), &parsed),
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                format!(
                    "`#[{}]` must be placed on a free function (`fn`)",
                    role.attr()
                ),
            );
            None
        }
    };
    if cx.has_errors() {
        return cx.into_output(item);
    }
    match (func, args.op.clone()) {
        (Some(func), Some(op)) => {
            expand::registration(&ast::Registration::new(role, op, args, func))
        }
        _ => item,
    }
}
