//! The normalized spelling of a user's parameter and return types, compared
//! against the spelling the op table generates (see `schema::Schema::signature`).
//!
//! Paths are reduced to their last segment (`batchrules::Tensor` is `Tensor`),
//! lifetimes are dropped, and `Result<T, Error>` is written `Result<T>`.
//!
//! The spelling is what the compile-time messages show and what the common
//! mistakes (`i32` for `i64`, `Tensor` for `&Tensor`) are judged by. Whether a
//! type *is* the expected one is decided by the compiler on the real types (see
//! `registration::expand`); a spelling made only of [`KNOWN`] names is trusted
//! to reject, one with any other name (an alias) is left to the real types.

use syn::{GenericArgument, PathArguments, Type};

pub fn normalize(ty: &Type) -> String {
    match ty {
        Type::Reference(r) => {
            let m = if r.mutability.is_some() { "mut " } else { "" };
            format!("&{m}{}", normalize(&r.elem))
        }
        Type::Slice(s) => format!("[{}]", normalize(&s.elem)),
        Type::Array(a) => format!("[{}; _]", normalize(&a.elem)),
        Type::Tuple(t) => {
            let items: Vec<String> = t.elems.iter().map(normalize).collect();
            if items.len() == 1 {
                format!("({},)", items[0])
            } else {
                format!("({})", items.join(", "))
            }
        }
        Type::Paren(p) => normalize(&p.elem),
        Type::Group(g) => normalize(&g.elem),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return String::new();
            };
            let name = last.ident.to_string();
            let mut args: Vec<String> = match &last.arguments {
                PathArguments::AngleBracketed(a) => a
                    .args
                    .iter()
                    .filter_map(|g| match g {
                        GenericArgument::Type(t) => Some(normalize(t)),
                        GenericArgument::Lifetime(_) => None,
                        other => Some(quote::quote!(#other).to_string()),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            if name == "Result" && args.len() == 2 && args[1] == "Error" {
                args.pop();
            }
            if args.is_empty() {
                name
            } else {
                format!("{name}<{}>", args.join(", "))
            }
        }
        other => tidy(&quote::quote!(#other).to_string()),
    }
}

/// Removes the spaces token printing puts around punctuation (`& dyn Any` is
/// `&dyn Any`, `AsRef < Tensor >` is `AsRef<Tensor>`), keeping those between words.
fn tidy(s: &str) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let next = chars.peek().copied();
            let word = |ch: Option<char>| ch.is_some_and(|ch| ch.is_alphanumeric() || ch == '_');
            if word(prev) && word(next) {
                out.push(' ');
            }
            continue;
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// The type names the spelling check judges by: those of the schema
/// signatures and the usual wrong guesses. A type spelled with another name
/// (`&T` for an alias `T`) is judged on the real type only.
pub const KNOWN: &[&str] = &[
    "Tensor",
    "TensorMeta",
    "DType",
    "Option",
    "Result",
    "Vec",
    "Error",
    "String",
    "Box",
    "Rc",
    "Arc",
    "Cow",
    "bool",
    "char",
    "str",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
];

/// Whether the spelling of `ty` decides: every type name in it is [`KNOWN`]
/// (or it is a form no schema type has, such as `dyn Trait` or `fn()`).
pub fn spelling_decides(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => spelling_decides(&r.elem),
        Type::Slice(s) => spelling_decides(&s.elem),
        Type::Array(a) => spelling_decides(&a.elem),
        Type::Tuple(t) => t.elems.iter().all(spelling_decides),
        Type::Paren(p) => spelling_decides(&p.elem),
        Type::Group(g) => spelling_decides(&g.elem),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|last| {
            KNOWN.iter().any(|k| last.ident == k)
                && match &last.arguments {
                    PathArguments::AngleBracketed(a) => a.args.iter().all(|g| match g {
                        GenericArgument::Type(t) => spelling_decides(t),
                        _ => true,
                    }),
                    PathArguments::None => true,
                    PathArguments::Parenthesized(_) => false,
                }
        }),
        // A projection or a macro may name any type.
        Type::Path(_) | Type::Macro(_) | Type::Verbatim(_) => false,
        // Never a schema type, whatever the names in it.
        _ => true,
    }
}

/// A copy of `ty` with every lifetime replaced by `'_`, for use inside the
/// generated shim.
pub fn erase_lifetimes(ty: &Type) -> Type {
    struct Eraser;
    impl syn::visit_mut::VisitMut for Eraser {
        fn visit_lifetime_mut(&mut self, l: &mut syn::Lifetime) {
            *l = syn::Lifetime::new("'_", l.apostrophe);
        }
    }
    let mut ty = ty.clone();
    syn::visit_mut::VisitMut::visit_type_mut(&mut Eraser, &mut ty);
    ty
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize(&syn::parse_str(s).unwrap())
    }

    #[test]
    fn normalizes_paths_lifetimes_and_results() {
        assert_eq!(n("&'a batchrules::Tensor"), "&Tensor");
        assert_eq!(n("Option<&[i64]>"), "Option<&[i64]>");
        assert_eq!(
            n("std::result::Result<Tensor, batchrules::Error>"),
            "Result<Tensor>"
        );
        assert_eq!(
            n("Result<(Tensor, Option<usize>)>"),
            "Result<(Tensor, Option<usize>)>"
        );
        assert_eq!(n("&[Option<usize>]"), "&[Option<usize>]");
        assert_eq!(n("impl AsRef<Tensor>"), "impl AsRef<Tensor>");
        assert_eq!(n("&dyn std::any::Any"), "&dyn std::any::Any");
    }

    #[test]
    fn spelling_decides_on_known_names_only() {
        let d = |s: &str| spelling_decides(&syn::parse_str(s).unwrap());
        assert!(d("&batchrules::Tensor"));
        assert!(d("Option<&[i64]>"));
        assert!(d("std::result::Result<Tensor, Error>"));
        assert!(d("&fake::Tensor"));
        assert!(d("&dyn Alias"));
        assert!(!d("&T"));
        assert!(!d("Option<MyInt>"));
        assert!(!d("<X as Tr>::Out"));
    }
}
