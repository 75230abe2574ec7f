//! Parsing of an attribute's arguments, `#[kernel(op = "triu", table = ops)]`,
//! with `syn::meta::parser`. Every problem goes to the [`Ctxt`]; the parse
//! carries on after each, so one build reports all of them.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Expr, ExprLit, Lit, LitStr, Path, Token};

use crate::ctxt::Ctxt;
use crate::role::Role;

/// How vmap runs a decomposition (`#[decompose(vmap = "...")]`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub enum VmapMode {
    /// Run the decomposition on the batched tensors (the default).
    #[default]
    Decompose,
    /// Run the per-example loop.
    Fallback,
}

/// The arguments of one attribute, as written.
#[derive(Default)]
pub struct Args {
    /// `op = "name"`
    pub op: Option<LitStr>,
    /// `table = path::to::module`
    pub table: Option<Path>,
    /// `crate = path`: the batchrules crate as this crate names it, for the
    /// default table `path::ops`.
    pub krate: Option<Path>,
    /// `vmap = "..."` (`#[decompose]` only)
    pub vmap: VmapMode,
}

/// `#[kernel(op = "name")]`, the example the messages give.
pub fn example(role: Role) -> String {
    format!("#[{}(op = \"name\")]", role.attr())
}

/// `` `op`, `table` and `crate` ``
fn key_list(keys: &[&str], last_sep: &str) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{}{last_sep}{last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

pub fn parse(cx: &Ctxt, role: Role, attr: TokenStream) -> Args {
    let mut args = Args::default();
    // Whether `op = ...` was written at all, even with a bad value.
    let mut op_seen = false;
    let parser = syn::meta::parser(|meta| {
        parse_one(cx, role, &meta, &mut args, &mut op_seen)?;
        Ok(())
    });
    if let Err(e) = parser.parse2(attr) {
        cx.error_at(
            e.span(),
            format!(
                "cannot parse the attribute arguments; write `{}`",
                example(role)
            ),
        );
        return args;
    }
    if !op_seen {
        cx.error_at(
            Span::call_site(),
            format!(
                "`#[{}]` needs the op it registers for: write `{}`",
                role.attr(),
                example(role)
            ),
        );
    }
    args
}

/// One `key = value`. Returns `Err` only when the arguments cannot be read
/// further; a key or value that is read but wrong is reported to `cx`.
fn parse_one(
    cx: &Ctxt,
    role: Role,
    meta: &ParseNestedMeta,
    args: &mut Args,
    op_seen: &mut bool,
) -> syn::Result<()> {
    let key = meta.path.to_token_stream().to_string();
    if !meta.input.peek(Token![=]) {
        // `op` alone, or `op(...)`.
        let mut tokens = meta.path.to_token_stream();
        if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
            let rest: proc_macro2::TokenTree = meta.input.parse()?;
            rest.to_tokens(&mut tokens);
        }
        cx.error_spanned_by(
            tokens,
            format!(
                "expected `key = value` arguments, as in `{}`",
                example(role)
            ),
        );
        return Ok(());
    }
    let mut value: Expr = meta.value()?.parse()?;
    // A `macro_rules!` fragment (`op = $op` with `$op:literal` or `:expr`)
    // arrives wrapped in an invisible group: look inside it.
    while let Expr::Group(group) = value {
        value = *group.expr;
    }
    let string = match &value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.clone()),
        _ => None,
    };
    match key.as_str() {
        "op" => {
            if std::mem::replace(op_seen, true) && args.op.is_none() {
                // The first `op` was already reported as malformed.
                return Ok(());
            }
            match (string, &args.op) {
                (Some(s), Some(first)) => cx.error_spanned_by(
                    &s,
                    format!(
                        "`op` is given twice (`op = {:?}` and `op = {:?}`), but a function registers for exactly one op; keep one `op = ...`, and register the other op with a function of its own",
                        first.value(),
                        s.value()
                    ),
                ),
                (Some(s), None) => args.op = Some(s),
                (None, _) => cx.error_spanned_by(
                    &value,
                    format!(
                        "the value of `op` must be a string literal naming the op, e.g. `op = \"{}\"`",
                        value.to_token_stream()
                    ),
                ),
            }
        }
        "table" => match &value {
            Expr::Path(p) => args.table = Some(p.path.clone()),
            other => cx.error_spanned_by(
                other,
                match &string {
                    Some(s) => format!(
                        "the value of `table` must be the path of the module that invokes `op_table!`, not a string; write it without quotes: `table = {}`",
                        s.value()
                    ),
                    None => "the value of `table` must be the path of the module that invokes `op_table!`, e.g. `table = crate::ops`".to_string(),
                },
            ),
        },
        "crate" => match &value {
            Expr::Path(p) => args.krate = Some(p.path.clone()),
            other => cx.error_spanned_by(
                other,
                match &string {
                    Some(s) => format!(
                        "the value of `crate` must be the path of the batchrules crate, not a string; write it without quotes: `crate = {}`",
                        s.value()
                    ),
                    None => "the value of `crate` must be the path of the batchrules crate as this crate names it in Cargo.toml, e.g. `crate = br` for `br = { package = \"batchrules\", ... }`".to_string(),
                },
            ),
        },
        "vmap" if role == Role::Decomposition => match string.as_ref().map(LitStr::value) {
            Some(v) if v == "fallback" => args.vmap = VmapMode::Fallback,
            Some(v) if v == "decompose" => args.vmap = VmapMode::Decompose,
            _ => cx.error_spanned_by(
                &value,
                format!(
                    "`vmap = {}` is not a vmap mode of `#[decompose]`: write `vmap = \"decompose\"` (the default: run the decomposition on the batched tensors) or `vmap = \"fallback\"` (run the per-example loop instead)",
                    value.to_token_stream()
                ),
            ),
        },
        "vmap" => cx.error_spanned_by(
            &meta.path,
            format!(
                "`vmap` only applies to `#[decompose]`, where it chooses how vmap runs a decomposition; `#[{}]` takes only {}, so remove `vmap = ...`",
                role.attr(),
                key_list(role.keys(), " and ")
            ),
        ),
        _ => cx.error_spanned_by(
            &meta.path,
            format!(
                "unknown key `{key}` for `#[{}]`; the keys are {}",
                role.attr(),
                key_list(role.keys(), ", ")
            ),
        ),
    }
    Ok(())
}
