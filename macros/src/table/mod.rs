//! `op_table!`: reads an op table (TOML) and generates, in the invoking module,
//! the typed op functions, the schema constants and expected types the
//! registration attributes check against, and the table's registration.
//!
//! Phases: [`ast`] parses the invocation and the table texts into typed ops
//! (every problem of every entry reported to one [`Ctxt`]), [`expand`](fn@expand) writes
//! the module's items.

mod ast;
mod expand;
mod methods;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

pub fn expand(input: TokenStream) -> TokenStream {
    let input: ast::Input = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                "expected the op table's path relative to the crate root, e.g. `op_table!(\"ops.toml\")`, or inline TOML, `op_table!(toml = r#\"...\"#)`",
            )
            .to_compile_error()
        }
    };
    let cx = Ctxt::new();
    let (paths, texts) = ast::read(&cx, &input.sources);
    let ops = ast::load(&cx, &texts);
    match cx.check() {
        Ok(()) => expand::table(&input.krate, &paths, &ops),
        Err(e) => e.to_compile_error(),
    }
}
