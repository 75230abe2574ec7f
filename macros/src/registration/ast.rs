//! The typed form of one registration: the attribute's arguments resolved
//! (the table to check against) and the function's parameters and return type
//! with their spellings, ready for expansion.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::{FnArg, ItemFn, LitStr, ReturnType, Type};

use super::attr::{Args, VmapMode};
use crate::role::Role;
use crate::types;

pub struct Registration {
    pub role: Role,
    pub op: LitStr,
    /// The path of the op table's module: `table = ...`, else `ops` in the
    /// crate `crate = ...` names, else `::batchrules::ops`.
    pub table: TokenStream,
    pub vmap: VmapMode,
    pub func: ItemFn,
    pub params: Vec<Param>,
    pub ret: Return,
}

pub struct Param {
    pub ty: Type,
    /// The normalized spelling (`&Tensor`), see [`types::normalize`].
    pub spelling: String,
    /// Whether the spelling alone decides a mismatch, see [`types::spelling_decides`].
    pub decides: bool,
}

pub struct Return {
    /// `None` for a function that returns nothing.
    pub ty: Option<Type>,
    pub spelling: String,
    pub decides: bool,
}

impl Registration {
    pub fn new(role: Role, op: LitStr, args: Args, func: ItemFn) -> Self {
        let table = match (args.table, args.krate) {
            (Some(table), _) => table.to_token_stream(),
            (None, Some(krate)) => quote!(#krate::ops),
            (None, None) => quote!(::batchrules::ops),
        };
        let params = func
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                FnArg::Typed(t) => Some(Param {
                    spelling: types::normalize(&t.ty),
                    decides: types::spelling_decides(&t.ty),
                    ty: (*t.ty).clone(),
                }),
                FnArg::Receiver(_) => None,
            })
            .collect();
        let ret = match &func.sig.output {
            ReturnType::Default => Return {
                ty: None,
                spelling: String::new(),
                decides: true,
            },
            ReturnType::Type(_, ty) => Return {
                spelling: types::normalize(ty),
                decides: types::spelling_decides(ty),
                ty: Some((**ty).clone()),
            },
        };
        Registration {
            role,
            op,
            table,
            vmap: args.vmap,
            func,
            params,
            ret,
        }
    }

    /// `#[kernel(op = "triu")]`, for messages.
    pub fn attribute(&self) -> String {
        format!("#[{}(op = {:?})]", self.role.attr(), self.op.value())
    }
}
