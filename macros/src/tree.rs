//! `#[derive(TensorTree)]`: a struct of tensors as a structure the transforms
//! can take apart and rebuild (see `batchrules::TensorTree`).
//!
//! Phases, as in the registration attributes: [`parse`] reads the item and its
//! `#[tree(...)]` attributes into a [`Tree`], reporting every problem to one
//! [`Ctxt`]; [`expand`] writes the impl. Nothing is expanded while the context
//! holds an error.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{
    Data, DeriveInput, Expr, ExprLit, Fields, Generics, Ident, Index, Lit, Member, Path, Token,
    Type,
};

use crate::ctxt::Ctxt;

/// A struct that derives `TensorTree`, as validated.
struct Tree {
    name: Ident,
    generics: Generics,
    /// `crate = path`, or `::batchrules`.
    krate: Path,
    shape: Shape,
    fields: Vec<Field>,
}

/// How the struct is built: `S { a, b }`, `S(a, b)` or `S`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Named,
    Tuple,
    Unit,
}

struct Field {
    member: Member,
    ty: Type,
    /// `#[tree(skip)]`: not a tree; cloned as it is.
    skip: bool,
    /// `#[tree(rename = "...")]`: the key segment in weights files, in place
    /// of the field's name.
    rename: Option<String>,
}

impl Field {
    /// The segment of this field's leaves' keys in weights files.
    fn key(&self) -> String {
        self.rename
            .clone()
            .unwrap_or_else(|| member_name(&self.member))
    }
}

pub fn derive(input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let input = match syn::parse2::<DeriveInput>(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let tree = parse(&cx, &input);
    match (cx.check(), tree) {
        (Ok(()), Some(tree)) => expand(&tree),
        (Err(e), _) => e.to_compile_error(),
        (Ok(()), None) => TokenStream::new(),
    }
}

const SUPPORTED: &str =
    "`#[derive(TensorTree)]` works on structs (with named fields, tuple structs and unit structs)";

fn parse(cx: &Ctxt, input: &DeriveInput) -> Option<Tree> {
    let krate = container_attrs(cx, input);
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            let (keyword, ident) = (e.enum_token, &input.ident);
            cx.error_spanned_by(
                quote!(#keyword #ident),
                format!(
                    "{SUPPORTED}, but `{}` is an enum; keep the tensors in a struct (a choice such as an activation goes in a field marked `#[tree(skip)]`, a part that may be absent in an `Option<Tensor>` field), or implement `TensorTree` for the enum by hand",
                    input.ident
                ),
            );
            return None;
        }
        Data::Union(u) => {
            let (keyword, ident) = (u.union_token, &input.ident);
            cx.error_spanned_by(
                quote!(#keyword #ident),
                format!(
                    "{SUPPORTED}, but `{}` is a union, whose fields share their storage, so which one holds a tensor is not known; keep the tensors in a struct",
                    input.ident
                ),
            );
            return None;
        }
    };
    let shape = match fields {
        Fields::Named(_) => Shape::Named,
        Fields::Unnamed(_) => Shape::Tuple,
        Fields::Unit => Shape::Unit,
    };
    let mut keys: Vec<(String, String)> = Vec::new();
    let fields = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let member = match &f.ident {
                Some(id) => Member::Named(id.clone()),
                None => Member::Unnamed(Index {
                    index: i as u32,
                    span: f.ty.span(),
                }),
            };
            let attrs = field_attrs(cx, f);
            let field = Field {
                member,
                ty: f.ty.clone(),
                skip: attrs.skip,
                rename: attrs.rename.as_ref().map(|r| r.value()),
            };
            if !field.skip {
                // Two fields whose leaves would be saved under one key.
                let (key, name) = (field.key(), member_name(&field.member));
                if let Some((_, other)) = keys.iter().find(|(k, _)| *k == key) {
                    let how = |n: &str| {
                        if *n == key {
                            format!("field `{n}`")
                        } else {
                            format!("field `{n}` (renamed)")
                        }
                    };
                    let message = format!(
                        "two fields are saved under the key `{key}` in weights files: {} and {}; give each field its own name with `#[tree(rename = \"...\")]`",
                        how(other),
                        how(&name)
                    );
                    match &attrs.rename {
                        Some(r) => cx.error_spanned_by(r, message),
                        None => cx.error_spanned_by(&field.member, message),
                    }
                }
                keys.push((key, name));
            }
            field
        })
        .collect();
    Some(Tree {
        name: input.ident.clone(),
        generics: input.generics.clone(),
        krate: krate.unwrap_or_else(|| syn::parse_quote!(::batchrules)),
        shape,
        fields,
    })
}

/// The container's `#[tree(crate = path)]`.
fn container_attrs(cx: &Ctxt, input: &DeriveInput) -> Option<Path> {
    let mut krate: Option<Path> = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("tree")) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta.path.to_token_stream().to_string();
            match key.as_str() {
                "crate" => {
                    if !meta.input.peek(Token![=]) {
                        cx.error_spanned_by(
                            &meta.path,
                            "`crate` needs a value: write `#[tree(crate = br)]` with the path of the batchrules crate as this crate names it",
                        );
                        return Ok(());
                    }
                    let value: Expr = meta.value()?.parse()?;
                    match value {
                        Expr::Path(p) if krate.is_none() => krate = Some(p.path),
                        Expr::Path(p) => cx.error_spanned_by(
                            p,
                            "`crate` is given twice; keep one `crate = ...`",
                        ),
                        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => cx.error_spanned_by(
                            &s,
                            format!(
                                "the value of `crate` must be the path of the batchrules crate, not a string; write it without quotes: `crate = {}`",
                                s.value()
                            ),
                        ),
                        other => cx.error_spanned_by(
                            other,
                            "the value of `crate` must be the path of the batchrules crate as this crate names it in Cargo.toml, e.g. `crate = br` for `br = { package = \"batchrules\", ... }`",
                        ),
                    }
                }
                "skip" => cx.error_spanned_by(
                    &meta.path,
                    "`skip` applies to a field, not to the whole struct: put `#[tree(skip)]` on each field that holds no tensor",
                ),
                "rename" => {
                    cx.error_spanned_by(
                        &meta.path,
                        "`rename` applies to a field, not to the whole struct: put `#[tree(rename = \"...\")]` on the field whose name in weights files differs",
                    );
                    skip_value(&meta)?;
                }
                _ => {
                    cx.error_spanned_by(
                        &meta.path,
                        format!("unknown key `{key}` in `#[tree(...)]` on a struct; the key there is `crate = path` (and `skip` or `rename` on a field)"),
                    );
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            cx.error_at(
                e.span(),
                "cannot parse `#[tree(...)]` on the struct; write `#[tree(crate = path)]`",
            );
        }
    }
    krate
}

/// Consumes the `= value` of a key already reported as misplaced or unknown,
/// so the parse goes on to the next key.
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    }
    Ok(())
}

/// A field's `#[tree(...)]` attributes.
struct FieldAttrs {
    /// `skip`.
    skip: bool,
    /// `rename = "..."` (a non-empty string).
    rename: Option<syn::LitStr>,
}

/// Reads a field's `#[tree(skip)]` and `#[tree(rename = "...")]`.
fn field_attrs(cx: &Ctxt, field: &syn::Field) -> FieldAttrs {
    let mut skip: Option<Span> = None;
    let mut rename: Option<syn::LitStr> = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("tree")) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta.path.to_token_stream().to_string();
            match key.as_str() {
                "skip" if !meta.input.is_empty() && !meta.input.peek(Token![,]) => {
                    cx.error_spanned_by(
                        &meta.path,
                        "`skip` takes no value: write `#[tree(skip)]`",
                    );
                    // Consume the rest so the parse can go on.
                    let _: TokenStream = meta.input.parse()?;
                }
                "skip" if skip.is_some() => cx.error_spanned_by(
                    &meta.path,
                    "`skip` is given twice on this field; once is enough",
                ),
                "skip" => skip = Some(meta.path.span()),
                "rename" => {
                    if !meta.input.peek(Token![=]) {
                        cx.error_spanned_by(
                            &meta.path,
                            "`rename` needs a value: write `#[tree(rename = \"weight\")]` with the name this field's tensors have in weights files",
                        );
                        return Ok(());
                    }
                    let value: Expr = meta.value()?.parse()?;
                    match value {
                        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => {
                            if rename.is_some() {
                                cx.error_spanned_by(
                                    &s,
                                    "`rename` is given twice on this field; keep one `rename = \"...\"`",
                                );
                            } else if s.value().is_empty() {
                                cx.error_spanned_by(
                                    &s,
                                    "the name given by `rename` is empty; a key in a weights file needs a name, e.g. `rename = \"weight\"`",
                                );
                            } else {
                                rename = Some(s);
                            }
                        }
                        other => cx.error_spanned_by(
                            other,
                            "the value of `rename` must be a string literal: the name this field's tensors have in weights files, e.g. `rename = \"weight\"`",
                        ),
                    }
                }
                "crate" => {
                    cx.error_spanned_by(
                        &meta.path,
                        "`crate = path` applies to the whole struct: put `#[tree(crate = ...)]` on the struct, not on a field",
                    );
                    skip_value(&meta)?;
                }
                _ => {
                    cx.error_spanned_by(
                        &meta.path,
                        format!("unknown key `{key}` in `#[tree(...)]` on a field; the keys there are `skip` (for a field that holds no tensor) and `rename = \"...\"` (its name in weights files)"),
                    );
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            cx.error_at(
                e.span(),
                "cannot parse `#[tree(...)]` on the field; write `#[tree(skip)]` or `#[tree(rename = \"name\")]`",
            );
        }
    }
    if let (Some(_), Some(r)) = (skip, &rename) {
        cx.error_spanned_by(
            r,
            "`rename` names a field's tensors in weights files, but this field is `#[tree(skip)]` and holds none; remove `rename` (or `skip`)",
        );
    }
    FieldAttrs {
        skip: skip.is_some(),
        rename,
    }
}

/// Whether `ty` mentions one of `params` (then the impl needs a bound on it).
fn mentions(ty: &Type, params: &[&Ident]) -> bool {
    fn walk(tokens: TokenStream, params: &[&Ident]) -> bool {
        tokens.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(id) => params.iter().any(|p| **p == id),
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), params),
            _ => false,
        })
    }
    walk(ty.to_token_stream(), params)
}

fn expand(tree: &Tree) -> TokenStream {
    let Tree {
        name,
        generics,
        krate,
        shape,
        fields,
    } = tree;
    let trait_ = quote!(#krate::TensorTree);
    let tensor = quote!(#krate::Tensor);
    let result = quote!(#krate::Result);

    // Bounds: a field whose type mentions a type parameter needs that type to
    // be a tree (or `Clone`, when skipped); the other fields are checked as
    // they are.
    let params: Vec<&Ident> = generics.type_params().map(|p| &p.ident).collect();
    let mut generics = generics.clone();
    {
        let where_clause = generics.make_where_clause();
        for f in fields.iter().filter(|f| mentions(&f.ty, &params)) {
            let ty = &f.ty;
            where_clause.predicates.push(if f.skip {
                syn::parse_quote!(#ty: ::core::clone::Clone)
            } else {
                syn::parse_quote!(#ty: #trait_)
            });
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();

    let leaves: Vec<&Field> = fields.iter().filter(|f| !f.skip).collect();
    // Each call is spanned at the field's type, so a field that is not a tree
    // is reported there.
    let push_leaves = leaves.iter().map(|f| {
        let (m, ty) = (&f.member, &f.ty);
        quote_spanned!(ty.span()=> <#ty as #trait_>::leaves(&self.#m, out);)
    });
    let counts = leaves.iter().map(|f| {
        let (m, ty) = (&f.member, &f.ty);
        quote_spanned!(ty.span()=> + <#ty as #trait_>::leaf_count(&self.#m))
    });
    let paths = leaves.iter().map(|f| {
        let (m, ty) = (&f.member, &f.ty);
        let segment = format!(".{}", member_name(m));
        quote_spanned!(ty.span()=> {
            let n = <#ty as #trait_>::leaf_count(&self.#m);
            if index < n {
                path.push_str(#segment);
                <#ty as #trait_>::write_leaf_path(&self.#m, index, path);
                return;
            }
            index -= n;
        })
    });
    let keys = leaves.iter().map(|f| {
        let (m, ty) = (&f.member, &f.ty);
        let segment = f.key();
        quote_spanned!(ty.span()=> {
            let n = <#ty as #trait_>::leaf_count(&self.#m);
            if index < n {
                #krate::push_key_segment(key, #segment);
                <#ty as #trait_>::write_leaf_key(&self.#m, index, key);
                return;
            }
            index -= n;
        })
    });
    let names = leaves.iter().map(|f| {
        let (m, ty) = (&f.member, &f.ty);
        let (segment, key) = (format!(".{}", member_name(m)), f.key());
        quote_spanned!(ty.span()=> {
            let (p, k) = (path.len(), key.len());
            path.push_str(#segment);
            #krate::push_key_segment(key, #key);
            <#ty as #trait_>::write_leaf_names(&self.#m, path, key, out);
            path.truncate(p);
            key.truncate(k);
        })
    });
    let mapped: Vec<TokenStream> = fields
        .iter()
        .map(|f| {
            let (m, ty) = (&f.member, &f.ty);
            if f.skip {
                quote_spanned!(ty.span()=> <#ty as ::core::clone::Clone>::clone(&self.#m))
            } else {
                quote_spanned!(ty.span()=> <#ty as #trait_>::map_leaves(&self.#m, f)?)
            }
        })
        .collect();
    let build = match shape {
        Shape::Named => {
            let members = fields.iter().map(|f| &f.member);
            quote!(#name { #(#members: #mapped),* })
        }
        Shape::Tuple => quote!(#name(#(#mapped),*)),
        Shape::Unit => quote!(#name),
    };
    // Parameter names that may go unused (a struct with no leaves).
    let out = format_ident!("out");
    let f = format_ident!("f");

    quote! {
        #[automatically_derived]
        impl #impl_generics #trait_ for #name #ty_generics #where_clause {
            #[allow(unused_variables)]
            fn leaves(&self, #out: &mut ::std::vec::Vec<#tensor>) {
                #(#push_leaves)*
            }

            #[allow(unused_variables)]
            fn map_leaves(
                &self,
                #f: &mut dyn ::core::ops::FnMut(&#tensor) -> #result<#tensor>,
            ) -> #result<Self> {
                ::core::result::Result::Ok(#build)
            }

            fn leaf_count(&self) -> usize {
                0 #(#counts)*
            }

            #[allow(unused_variables, unused_mut, unused_assignments)]
            fn write_leaf_path(&self, index: usize, path: &mut ::std::string::String) {
                let mut index = index;
                #(#paths)*
            }

            #[allow(unused_variables, unused_mut, unused_assignments)]
            fn write_leaf_key(&self, index: usize, key: &mut ::std::string::String) {
                let mut index = index;
                #(#keys)*
            }

            #[allow(unused_variables)]
            fn write_leaf_names(
                &self,
                path: &mut ::std::string::String,
                key: &mut ::std::string::String,
                out: &mut ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) {
                #(#names)*
            }
        }

        #[automatically_derived]
        impl #impl_generics #krate::StructTree for #name #ty_generics #where_clause {}
    }
}

fn member_name(m: &Member) -> String {
    match m {
        Member::Named(id) => syn::ext::IdentExt::unraw(id).to_string(),
        Member::Unnamed(i) => i.index.to_string(),
    }
}
