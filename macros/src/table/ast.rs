//! The typed form of an `op_table!` invocation: the runtime crate's path, the
//! table texts, and the ops they declare, each schema parsed and validated.
//! Every problem of every entry goes to the [`Ctxt`], with its table line.

use std::path::PathBuf;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::quote;
use serde::Deserialize;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

use super::methods::{self, Method};
use crate::ctxt::Ctxt;
use crate::schema::{self, Schema};

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
    /// `differentiable = false`: no gradient flows through the op. Primitives
    /// only; absent means differentiable.
    #[serde(default)]
    differentiable: Option<toml::Spanned<bool>>,
    /// `linear = true`: the op is linear jointly in its tensor arguments, so
    /// its jvp is the op applied to the tangents; `linear = ["self",
    /// "source"]`: linear jointly in those, the others (indices, masks) held
    /// at their value. Differentiable primitives only; absent means not
    /// linear.
    #[serde(default)]
    linear: Option<toml::Spanned<toml::Value>>,
    /// `random = true`: the op draws random numbers from its `int seed`
    /// argument, so vmap applies its randomness policy to it.
    #[serde(default)]
    random: Option<toml::Spanned<bool>>,
    /// `methods = ["sum_dim(dim)", ...]`: methods beside (or, under the op's
    /// own name, instead of) the default one; see [`super::methods`].
    #[serde(default)]
    methods: Option<toml::Spanned<Vec<String>>>,
    /// `samples = "float"`: the tests run the op on the table's shared
    /// sample set of that name (`batchrules::sample_set!`) instead of inputs
    /// of its own (`op_samples!`).
    #[serde(default)]
    samples: Option<toml::Spanned<String>>,
}

pub struct Op {
    pub schema: Schema,
    /// The schema string as written.
    pub text: String,
    pub kind: Kind,
    pub doc: String,
    /// Whether gradients flow through the op (always for a composite).
    pub differentiable: bool,
    /// The tensor arguments the op is linear in (`linear = true`: all of
    /// them); empty when it is not linear.
    pub linear: Vec<String>,
    /// Whether the op draws random numbers (from its `int seed` argument).
    pub random: bool,
    /// The op's methods on `Tensor`.
    pub methods: Vec<Method>,
    /// The name of the shared sample set the tests run the op on, if any.
    pub samples: Option<String>,
}

#[derive(Clone, Copy)]
pub enum Kind {
    Primitive,
    Composite,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Primitive => "primitive",
            Kind::Composite => "composite",
        }
    }
}

/// The macro's input: `crate = $crate;` (passed by `batchrules::op_table!`;
/// `::batchrules` when absent), then the table's files or inline TOML.
pub struct Input {
    pub krate: TokenStream,
    pub sources: Sources,
}

/// Where the table comes from: one or more files, or TOML written inline.
pub enum Sources {
    Files(Vec<LitStr>),
    Inline(LitStr),
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let krate = if input.peek(Token![crate]) && input.peek2(Token![=]) {
            input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            // The path as given (`$crate` from the runtime's `op_table!`),
            // up to the `;`.
            let mut path = TokenStream::new();
            while !input.is_empty() && !input.peek(Token![;]) {
                path.extend([input.parse::<TokenTree>()?]);
            }
            input.parse::<Token![;]>()?;
            path
        } else {
            quote!(::batchrules)
        };
        Ok(Input {
            krate,
            sources: input.parse()?,
        })
    }
}

impl Parse for Sources {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            let files = syn::punctuated::Punctuated::<LitStr, Token![,]>::parse_terminated(input)?;
            return Ok(Sources::Files(files.into_iter().collect()));
        }
        let key: Ident = input.parse()?;
        if key != "toml" {
            return Err(syn::Error::new(
                key.span(),
                "expected a path or `toml = \"...\"`",
            ));
        }
        input.parse::<Token![=]>()?;
        Ok(Sources::Inline(input.parse()?))
    }
}

/// One table text to parse: what to call it in messages, and where to point.
pub struct Text<'a> {
    lit: &'a LitStr,
    name: String,
    source: String,
}

/// Reads the table texts. Returns the files to track and the texts; a file
/// that cannot be read is reported to `cx` and skipped.
pub fn read<'a>(cx: &Ctxt, src: &'a Sources) -> (Vec<PathBuf>, Vec<Text<'a>>) {
    match src {
        Sources::Inline(lit) => (
            Vec::new(),
            vec![Text {
                lit,
                name: "(inline)".to_string(),
                source: lit.value(),
            }],
        ),
        Sources::Files(lits) => {
            let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
                cx.error_at(
                    Span::call_site(),
                    "CARGO_MANIFEST_DIR is not set; build with cargo",
                );
                return (Vec::new(), Vec::new());
            };
            let mut paths = Vec::new();
            let mut texts = Vec::new();
            for lit in lits {
                let path = PathBuf::from(&dir).join(lit.value());
                match std::fs::read_to_string(&path) {
                    Ok(source) => {
                        paths.push(path);
                        texts.push(Text {
                            lit,
                            name: lit.value(),
                            source,
                        });
                    }
                    Err(e) => cx.error_spanned_by(
                        lit,
                        format!("cannot read op table `{}`: {e}", path.display()),
                    ),
                }
            }
            (paths, texts)
        }
    }
}

fn line_of(source: &str, offset: usize) -> usize {
    source[..offset.min(source.len())].matches('\n').count() + 1
}

/// Parses and validates the table texts; every problem goes to `cx`, with the
/// table's name and line, pointed at the table's literal.
pub fn load(cx: &Ctxt, texts: &[Text<'_>]) -> Vec<Op> {
    // (op, "file:line" where it is declared)
    let mut ops: Vec<(Op, String)> = Vec::new();
    for Text { lit, name, source } in texts {
        let file: TableFile = match toml::from_str(source) {
            Ok(f) => f,
            Err(e) => {
                let at = e
                    .span()
                    .map_or(String::new(), |s| format!(":{}", line_of(source, s.start)));
                cx.error_spanned_by(lit, format!("op table {name}{at}: {}", e.message()));
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
                    cx.error_spanned_by(lit, format!(
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
                    cx.error_spanned_by(
                        lit,
                        format!("op table {name}:{line}: malformed schema `{text}`: {msg}"),
                    );
                    None
                }
            };
            let op_name = text.split('(').next().unwrap_or("").trim();
            // A problem with one of the entry's flags, at the flag's line.
            let flag_error = |flag: &toml::Spanned<bool>, problem: String| {
                let at = line_of(source, flag.span().start);
                cx.error_spanned_by(lit, format!("op table {name}:{at}: {problem}"));
            };
            let differentiable = match (kind, &entry.differentiable) {
                (Some(Kind::Composite), Some(flag)) => {
                    flag_error(flag, format!(
                        "`differentiable = {}` on `{op_name}`, a composite op: a composite is differentiated through its decomposition, so whether gradients flow is decided by the ops it calls; remove the `differentiable` line (it is only meaningful on a primitive)",
                        flag.get_ref(),
                    ));
                    true
                }
                (_, Some(flag)) => *flag.get_ref(),
                (_, None) => true,
            };
            let linear = match (&entry.linear, &parsed) {
                (Some(flag), Some(schema)) => linear_args(
                    cx,
                    lit,
                    name,
                    source,
                    op_name,
                    kind,
                    differentiable,
                    flag,
                    schema,
                ),
                _ => Vec::new(),
            };
            let (Some(schema), Some(kind)) = (parsed, kind) else {
                continue;
            };
            let random = random_flag(cx, name, source, lit, &entry.random, &schema);
            let samples = entry.samples.as_ref().and_then(|set| {
                let plain = !set.get_ref().is_empty()
                    && set
                        .get_ref()
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_');
                if plain {
                    return Some(set.get_ref().clone());
                }
                let at = line_of(source, set.span().start);
                cx.error_spanned_by(lit, format!(
                    "op table {name}:{at}: `samples = \"{}\"` on `{op_name}`: a sample set's name is letters, digits and `_` (the name a `batchrules::sample_set!` declares, such as \"float\")",
                    set.get_ref()
                ));
                None
            });
            if let Some((_, first)) = ops.iter().find(|(o, _)| o.schema.name == schema.name) {
                let first = first
                    .strip_prefix(&format!("{name}:"))
                    .map_or_else(|| first.clone(), |l| format!("line {l}"));
                cx.error_spanned_by(lit, format!(
                    "op table {name}:{entry_line}: op `{}` is already declared at {first}; each op is declared once: rename or remove one of the entries",
                    schema.name
                ));
                continue;
            }
            let mut op_methods: Vec<Method> = Vec::new();
            if let Some(specs) = &entry.methods {
                let at = line_of(source, specs.span().start);
                for spec in specs.get_ref() {
                    match methods::parse_spec(&schema, spec) {
                        Ok(m) => op_methods.push(m),
                        Err(problem) => cx.error_spanned_by(
                            lit,
                            format!(
                                "op table {name}:{at}: method `{spec}` of `{}`: {problem}",
                                schema.name
                            ),
                        ),
                    }
                }
            }
            if !op_methods.iter().any(|m| m.name == schema.name)
                && let Some(m) = methods::default_method(&schema)
            {
                op_methods.insert(0, m);
            }
            for m in &op_methods {
                let twice = ops
                    .iter()
                    .flat_map(|(o, at)| o.methods.iter().map(move |om| (om, o, at)))
                    .find(|(om, _, _)| om.name == m.name);
                if let Some((_, other, at)) = twice {
                    let at = at
                        .strip_prefix(&format!("{name}:"))
                        .map_or_else(|| at.clone(), |l| format!("line {l}"));
                    cx.error_spanned_by(lit, format!(
                        "op table {name}:{entry_line}: method `{}` of `{}` is already a method of `{}` (declared at {at}); each method name is used once per table: give one of them another name in its `methods` list",
                        m.name, schema.name, other.schema.name
                    ));
                }
            }
            ops.push((
                Op {
                    schema,
                    text,
                    kind,
                    doc: entry.doc,
                    differentiable,
                    linear,
                    random,
                    methods: op_methods,
                    samples,
                },
                format!("{name}:{entry_line}"),
            ));
        }
    }
    ops.into_iter().map(|(o, _)| o).collect()
}

/// The tensor arguments named by an op's `linear` entry (`true`: all of
/// them), after checking that the op can be linear and the names are its
/// tensor arguments.
#[allow(clippy::too_many_arguments)]
fn linear_args(
    cx: &Ctxt,
    lit: &syn::LitStr,
    name: &str,
    source: &str,
    op_name: &str,
    kind: Option<Kind>,
    differentiable: bool,
    flag: &toml::Spanned<toml::Value>,
    schema: &schema::Schema,
) -> Vec<String> {
    let at = line_of(source, flag.span().start);
    let tensors: Vec<&str> = schema
        .args
        .iter()
        .filter(|a| a.ty.is_tensor())
        .map(|a| a.name.as_str())
        .collect();
    let names: Vec<String> = match flag.get_ref() {
        toml::Value::Boolean(false) => return Vec::new(),
        toml::Value::Boolean(true) => tensors.iter().map(|s| s.to_string()).collect(),
        toml::Value::Array(items) if !items.is_empty() => {
            let mut names = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(arg) if tensors.contains(&arg) => names.push(arg.to_string()),
                    _ => {
                        cx.error_spanned_by(lit, format!(
                            "op table {name}:{at}: `linear` of `{op_name}` lists {item}, which is not one of its tensor arguments ({}): a linear op's jvp applies the op to the tangents of the arguments `linear` names, and only a tensor has a tangent; list the tensor arguments the op is linear in, by name (the others are held at their value)",
                            tensors.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ")
                        ));
                        return Vec::new();
                    }
                }
            }
            names
        }
        other => {
            cx.error_spanned_by(lit, format!(
                "op table {name}:{at}: `linear = {other}` on `{op_name}`: write `linear = true` for an op linear in all its tensor arguments, or `linear = [\"self\", ...]` naming the ones it is linear in (the others, such as indices, are held at their value)"
            ));
            return Vec::new();
        }
    };
    if matches!(kind, Some(Kind::Composite)) {
        cx.error_spanned_by(lit, format!(
            "op table {name}:{at}: `linear = {}` on `{op_name}`, a composite op: a composite is differentiated through its decomposition, so its jvp is made of the jvps of the ops it calls; remove the `linear` line (it is only meaningful on a primitive, and a composite of linear ops is linear already)",
            flag.get_ref()
        ));
        return Vec::new();
    }
    if !differentiable {
        cx.error_spanned_by(lit, format!(
            "op table {name}:{at}: `linear = {}` on `{op_name}`, which is also marked `differentiable = false`: a linear op's derivative is the op itself, so it is differentiable, while `differentiable = false` says no derivative flows through it; remove the `linear` line if no derivative flows through `{op_name}`, or remove `differentiable = false` if it is linear in its tensor arguments",
            flag.get_ref()
        ));
        return Vec::new();
    }
    names
}

/// The `random` flag of an entry; a random op must take its stream as an
/// `int seed` argument (vmap derives each example's seed from it).
fn random_flag(
    cx: &Ctxt,
    name: &str,
    source: &str,
    lit: &LitStr,
    flag: &Option<toml::Spanned<bool>>,
    schema: &Schema,
) -> bool {
    let Some(flag) = flag else { return false };
    let random = *flag.get_ref();
    let has_seed = schema
        .args
        .iter()
        .any(|a| a.name == "seed" && a.ty == schema::Base::Int && !a.optional);
    if random && !has_seed {
        cx.error_spanned_by(lit, format!(
            "op table {name}:{}: `random = true` on `{}`, which has no `int seed` argument: a random op draws from the stream its `int seed` names, and vmap derives each example's seed from it; add `int seed` to the schema",
            line_of(source, flag.span().start),
            schema.name
        ));
    }
    random
}
