//! The one diagnostics context of the crate: every phase of every macro reports
//! its problems here instead of returning at the first, so one build shows all
//! of them (as serde_derive's `internals::Ctxt` does).

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// Collects the errors of one macro expansion.
///
/// Shared by reference (parsing closures hold it while the caller also does), so
/// the errors live in a `RefCell`. [`Ctxt::check`] hands them back as one
/// [`syn::Error`]; dropping a context with errors in it loses them, which is
/// never done on purpose (macro code must not panic, so there is no drop bomb).
#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt::default()
    }

    /// An error covering all of `tokens`: the caret runs from their first token
    /// to their last on every toolchain (`syn::Error::new_spanned`).
    pub fn error_spanned_by<T: ToTokens>(&self, tokens: T, msg: impl Display) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    /// An error at one span, for problems with no tokens of their own (a
    /// missing key points at the whole attribute).
    pub fn error_at(&self, span: Span, msg: impl Display) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// All errors as one `syn::Error`, in the order they were reported.
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut all) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            all.combine(e);
        }
        Err(all)
    }

    /// The errors as `compile_error!` invocations, after `keep` (the user's
    /// item, so that it still exists and does not cause errors of its own).
    pub fn into_output(self, keep: TokenStream) -> TokenStream {
        match self.check() {
            Ok(()) => keep,
            Err(e) => {
                let errors = e.to_compile_error();
                quote::quote!(#keep #errors)
            }
        }
    }
}
