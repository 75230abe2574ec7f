//! The role vocabulary: the workspace's one `Role`, declared in the
//! `batchrules-roles` crate (the runtime re-exports it as
//! `batchrules::schema::Role`) with each role's signature layout, and the
//! identifier the generated code names a variant by.

pub use batchrules_roles::{Each, Naming, ParamGroup, Role};
use proc_macro2::{Ident, Span};

/// The identifier of `role`'s variant, for `#rt::Role::#variant` in generated
/// code.
pub fn variant(role: Role) -> Ident {
    Ident::new(role.name(), Span::call_site())
}
