//! The normalized spelling of a user's parameter and return types, compared
//! against the spelling the op table generates (see `schema::Schema::signature`).
//!
//! Paths are reduced to their last segment (`batchrules::Tensor` is `Tensor`),
//! lifetimes are dropped, and `Result<T, Error>` is written `Result<T>`.

use syn::{GenericArgument, PathArguments, ReturnType, Type};

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

pub fn normalize_return(ret: &ReturnType) -> String {
    match ret {
        ReturnType::Default => String::new(),
        ReturnType::Type(_, ty) => normalize(ty),
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
}
