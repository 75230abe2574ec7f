//! `op_table!`: reads an op table (TOML) and generates the typed op functions,
//! the schema constants the attribute macros check against, and the table
//! registration.

use std::path::PathBuf;

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote};
use serde::Deserialize;
use syn::LitStr;

use crate::schema::{self, Schema, SigRole};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[serde(default)]
    op: Vec<toml::Spanned<Entry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    schema: toml::Spanned<String>,
    kind: toml::Spanned<String>,
    #[serde(default)]
    doc: String,
}

struct Op {
    schema: Schema,
    text: String,
    kind: Kind,
    doc: String,
}

#[derive(Clone, Copy)]
enum Kind {
    Primitive,
    Composite,
}

fn line_of(source: &str, offset: usize) -> usize {
    source[..offset.min(source.len())].matches('\n').count() + 1
}

/// Where the table comes from: one or more files, or TOML written inline.
enum Sources {
    Files(Vec<LitStr>),
    Inline(LitStr),
}

impl syn::parse::Parse for Sources {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            let files =
                syn::punctuated::Punctuated::<LitStr, syn::Token![,]>::parse_terminated(input)?;
            return Ok(Sources::Files(files.into_iter().collect()));
        }
        let key: Ident = input.parse()?;
        if key != "toml" {
            return Err(syn::Error::new(
                key.span(),
                "expected a path or `toml = \"...\"`",
            ));
        }
        input.parse::<syn::Token![=]>()?;
        Ok(Sources::Inline(input.parse()?))
    }
}

/// One table text to parse: what to call it in messages, and where to point.
struct Text<'a> {
    lit: &'a LitStr,
    name: String,
    source: String,
}

/// Collects every problem, to report them all at once.
#[derive(Default)]
struct Problems(Option<syn::Error>);

impl Problems {
    fn push(&mut self, lit: &LitStr, msg: String) {
        let e = syn::Error::new(lit.span(), msg);
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
}

/// Reads the table texts. Returns the files to track and the texts.
fn read(src: &Sources) -> Result<(Vec<PathBuf>, Vec<Text<'_>>), syn::Error> {
    match src {
        Sources::Inline(lit) => Ok((
            Vec::new(),
            vec![Text {
                lit,
                name: "(inline)".to_string(),
                source: lit.value(),
            }],
        )),
        Sources::Files(lits) => {
            let dir = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| {
                syn::Error::new(
                    Span::call_site(),
                    "CARGO_MANIFEST_DIR is not set; build with cargo",
                )
            })?;
            let mut paths = Vec::new();
            let mut texts = Vec::new();
            for lit in lits {
                let path = PathBuf::from(&dir).join(lit.value());
                let source = std::fs::read_to_string(&path).map_err(|e| {
                    syn::Error::new(
                        lit.span(),
                        format!("cannot read op table `{}`: {e}", path.display()),
                    )
                })?;
                paths.push(path);
                texts.push(Text {
                    lit,
                    name: lit.value(),
                    source,
                });
            }
            Ok((paths, texts))
        }
    }
}

/// Parses and validates the table texts, collecting every problem.
fn load(texts: &[Text<'_>]) -> Result<Vec<Op>, syn::Error> {
    let mut problems = Problems::default();
    // (op, "file:line" where it is declared)
    let mut ops: Vec<(Op, String)> = Vec::new();
    for Text { lit, name, source } in texts {
        let file: TableFile = match toml::from_str(source) {
            Ok(f) => f,
            Err(e) => {
                let at = e
                    .span()
                    .map_or(String::new(), |s| format!(":{}", line_of(source, s.start)));
                problems.push(lit, format!("op table {name}{at}: {}", e.message()));
                continue;
            }
        };
        for entry in file.op {
            let entry_line = line_of(source, entry.span().start);
            let entry = entry.into_inner();
            let line = line_of(source, entry.schema.span().start);
            let text = entry.schema.get_ref().clone();
            let kind = match entry.kind.get_ref().as_str() {
                "primitive" => Some(Kind::Primitive),
                "composite" => Some(Kind::Composite),
                other => {
                    problems.push(lit, format!(
                        "op table {name}:{}: kind `{other}` of `{}` is not `primitive` or `composite`; write `kind = \"primitive\"` for an op with a kernel, `kind = \"composite\"` for one implemented by other ops",
                        line_of(source, entry.kind.span().start),
                        text.split('(').next().unwrap_or("").trim()
                    ));
                    None
                }
            };
            let parsed = match schema::parse(&text) {
                Ok(s) => Some(s),
                Err(msg) => {
                    problems.push(
                        lit,
                        format!("op table {name}:{line}: malformed schema `{text}`: {msg}"),
                    );
                    None
                }
            };
            let (Some(schema), Some(kind)) = (parsed, kind) else {
                continue;
            };
            if let Some((_, first)) = ops.iter().find(|(o, _)| o.schema.name == schema.name) {
                let first = first
                    .strip_prefix(&format!("{name}:"))
                    .map_or_else(|| first.clone(), |l| format!("line {l}"));
                problems.push(lit, format!(
                    "op table {name}:{entry_line}: op `{}` is already declared at {first}; each op is declared once: rename or remove one of the entries",
                    schema.name
                ));
                continue;
            }
            ops.push((
                Op {
                    schema,
                    text,
                    kind,
                    doc: entry.doc,
                },
                format!("{name}:{entry_line}"),
            ));
        }
    }
    match problems.0 {
        Some(e) => Err(e),
        None => Ok(ops.into_iter().map(|(o, _)| o).collect()),
    }
}

/// Rewrites the bare names of a normalized type (`Tensor`, `DType`, ...) into
/// paths into the runtime crate, so generated code does not depend on imports.
pub fn qualify(ty: &str) -> TokenStream {
    let tokens: TokenStream = ty.parse().unwrap_or_default();
    qualify_tokens(tokens)
}

fn qualify_tokens(tokens: TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    for tt in tokens {
        match tt {
            TokenTree::Ident(id)
                if ["Tensor", "TensorMeta", "DType", "Result"]
                    .contains(&id.to_string().as_str()) =>
            {
                out.extend(quote!(::batchrules::#id));
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

fn role_signature(schema: &Schema, role: SigRole) -> TokenStream {
    let sig = schema.signature(role);
    let params = str_list(&sig.params);
    let names = str_list(&sig.param_names);
    let ret = &sig.ret;
    let display = &sig.display;
    quote! {
        ::batchrules::schema::RoleSignature {
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
            ::batchrules::schema::ArgSchema {
                name: #name,
                ty: ::batchrules::schema::ArgType::#ty,
                optional: #optional,
                default: #default,
            }
        }
    });
    let returns = s.returns.iter().map(|b| {
        let ty = Ident::new(b.variant(), Span::call_site());
        quote!(::batchrules::schema::ArgType::#ty)
    });
    let kernel = role_signature(s, SigRole::Kernel);
    let meta = role_signature(s, SigRole::Meta);
    let rule = role_signature(s, SigRole::Rule);
    quote! {
        ::batchrules::schema::OpSchema {
            name: #name,
            kind: ::batchrules::schema::OpKind::#kind,
            schema: #text,
            args: &[#(#args),*],
            returns: &[#(#returns),*],
            doc: #doc,
            kernel: #kernel,
            meta: #meta,
            rule: #rule,
        }
    }
}

fn op_function(op: &Op, index: usize) -> TokenStream {
    let s = &op.schema;
    let fn_name = format_ident!("{}", schema::rust_ident(&s.name));
    let sig = s.signature(SigRole::Kernel);
    let params: Vec<Ident> = s
        .args
        .iter()
        .map(|a| format_ident!("{}", schema::rust_ident(&a.name)))
        .collect();
    let types: Vec<TokenStream> = sig.params.iter().map(|t| qualify(t)).collect();
    let ret = qualify(&sig.ret);
    let kind = match op.kind {
        Kind::Primitive => "primitive",
        Kind::Composite => "composite",
    };
    let mut doc = String::new();
    if !op.doc.is_empty() {
        doc.push_str(op.doc.trim());
        doc.push_str("\n\n");
    }
    doc.push_str(&format!("Schema: `{}` ({kind} op).", op.text));
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
        doc.push_str(&format!("\n\nSchema defaults: {}.", defaults.join(", ")));
    }
    quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments)]
        pub fn #fn_name(#(#params: #types),*) -> #ret {
            let args = [#(::batchrules::__private::IntoArg::into_arg(#params)),*];
            let outs = ::batchrules::__private::call(&__TABLE, #index, &args)?;
            ::batchrules::__private::Outputs::from_outputs(outs)
        }
    }
}

pub fn expand(input: TokenStream) -> TokenStream {
    let src: Sources = match syn::parse2(input) {
        Ok(l) => l,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                "expected the op table's path relative to the crate root, e.g. `op_table!(\"ops.toml\")`, or inline TOML, `op_table!(toml = r#\"...\"#)`",
            )
            .to_compile_error()
        }
    };
    let (paths, texts) = match read(&src) {
        Ok(v) => v,
        Err(e) => return e.to_compile_error(),
    };
    let ops = match load(&texts) {
        Ok(v) => v,
        Err(e) => return e.to_compile_error(),
    };
    let schemas = ops.iter().map(schema_const);
    let functions = ops.iter().enumerate().map(|(i, op)| op_function(op, i));
    let count = ops.len();
    // Rebuild when a table file changes.
    let tracked = paths.iter().map(|p| {
        let p = p.display().to_string();
        let arg = Group::new(Delimiter::Parenthesis, quote!(#p));
        quote!(const _: &str = ::core::include_str! #arg;)
    });
    quote! {
        #(#tracked)*

        /// The module path of this op table.
        #[doc(hidden)]
        pub const __PATH: &str = ::core::module_path!();

        /// The schemas of this table, read by the attribute macros' compile-time checks.
        #[doc(hidden)]
        pub const __SCHEMA: &[::batchrules::schema::OpSchema; #count] = &[#(#schemas),*];

        /// This table, as the registry indexes it.
        #[doc(hidden)]
        pub static __TABLE: ::batchrules::schema::OpTable =
            ::batchrules::schema::OpTable::new(__PATH, __SCHEMA);

        ::batchrules::__private::inventory::submit! {
            ::batchrules::schema::TableRegistration(&__TABLE)
        }

        #(#functions)*
    }
}
