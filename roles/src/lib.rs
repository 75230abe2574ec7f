//! The roles a registered function plays for an op, declared once.
//!
//! The attribute macros (`batchrules-macros`: which attribute is being
//! expanded, the signature a schema gives it, the code it generates) and the
//! runtime (`batchrules::schema::Role`: the registry, the compile-time checks
//! of the generated code, error messages) use this one enum; the generated
//! code names a variant by [`Role::name`]. Use it as `batchrules::schema::Role`.
//!
//! ```
//! use batchrules_roles::Role;
//!
//! assert_eq!(Role::BatchingRule.attr(), "batching_rule");
//! assert_eq!(Role::BatchingRule.attribute(), "#[batching_rule]");
//! // A decomposition has the kernel's signature.
//! assert_eq!(Role::Decomposition.signature_role(), Role::Kernel);
//! assert!(Role::ALL.iter().all(|r| Role::from_attr(r.attr()) == Some(*r)));
//! ```

#![no_std]
#![forbid(unsafe_code)]

/// The role a registered function plays for an op: one per registration
/// attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `#[kernel]`: the op's computation on plain tensors.
    Kernel,
    /// `#[meta]`: the op's shape, dtype and error checks, on tensor metas.
    Meta,
    /// `#[batching_rule]`: the op under `vmap`.
    BatchingRule,
    /// `#[decompose]`: a composite op's body in terms of other ops.
    Decomposition,
    /// `#[vjp]`: the op's reverse-mode derivative.
    Vjp,
    /// `#[jvp]`: the op's forward-mode derivative.
    Jvp,
}

/// The keys every attribute takes.
const KEYS: &[&str] = &["op", "table", "crate"];
/// The keys of `#[decompose]`: those of every attribute, and `vmap`.
const DECOMPOSE_KEYS: &[&str] = &["op", "table", "crate", "vmap"];

impl Role {
    /// Every role, in declaration order.
    pub const ALL: [Role; 6] = [
        Role::Kernel,
        Role::Meta,
        Role::BatchingRule,
        Role::Decomposition,
        Role::Vjp,
        Role::Jvp,
    ];

    /// The variant's name, as the generated code writes it: `Kernel`, ...
    pub const fn name(self) -> &'static str {
        match self {
            Role::Kernel => "Kernel",
            Role::Meta => "Meta",
            Role::BatchingRule => "BatchingRule",
            Role::Decomposition => "Decomposition",
            Role::Vjp => "Vjp",
            Role::Jvp => "Jvp",
        }
    }

    /// The attribute's name, as written: `kernel`, `batching_rule`, ...
    pub const fn attr(self) -> &'static str {
        match self {
            Role::Kernel => "kernel",
            Role::Meta => "meta",
            Role::BatchingRule => "batching_rule",
            Role::Decomposition => "decompose",
            Role::Vjp => "vjp",
            Role::Jvp => "jvp",
        }
    }

    /// The attribute that registers this role, with its brackets:
    /// `#[kernel]`, ...
    pub const fn attribute(self) -> &'static str {
        match self {
            Role::Kernel => "#[kernel]",
            Role::Meta => "#[meta]",
            Role::BatchingRule => "#[batching_rule]",
            Role::Decomposition => "#[decompose]",
            Role::Vjp => "#[vjp]",
            Role::Jvp => "#[jvp]",
        }
    }

    /// The role of the attribute named `attr` (`"kernel"`, ...), if any.
    pub fn from_attr(attr: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.attr() == attr)
    }

    /// The keys the attribute accepts (`op`, `table`, `crate`; and `vmap`
    /// for `#[decompose]`).
    pub const fn keys(self) -> &'static [&'static str] {
        match self {
            Role::Decomposition => DECOMPOSE_KEYS,
            _ => KEYS,
        }
    }

    /// The role whose signature this role's function has (a decomposition has
    /// the kernel's).
    pub const fn signature_role(self) -> Role {
        match self {
            Role::Decomposition => Role::Kernel,
            other => other,
        }
    }

    /// The type of the tensors in this role's signature: `TensorMeta` for a
    /// meta, `Tensor` for the others.
    pub const fn tensor(self) -> &'static str {
        match self {
            Role::Meta => "TensorMeta",
            _ => "Tensor",
        }
    }
}

/// A type an op schema may give an argument, as a schema string writes it.
///
/// [`SCHEMA_TYPES`] lists them all; the `op_table!` macro accepts exactly
/// these, and the kernel author guide's list is checked against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaType {
    /// The type as written: `Tensor`, `Tensor[]`, `int`, ...
    pub name: &'static str,
    /// Why `name?` (an optional argument) is refused, if it is; `None` if a
    /// schema may write `name?`.
    pub not_optional: Option<&'static str>,
}

/// Every schema type, in the order messages list them.
pub const SCHEMA_TYPES: [SchemaType; 9] = [
    SchemaType {
        name: "Tensor",
        not_optional: None,
    },
    SchemaType {
        name: "Tensor[]",
        not_optional: Some("use an empty `Tensor[]`"),
    },
    SchemaType {
        name: "int",
        not_optional: None,
    },
    SchemaType {
        name: "int[]",
        not_optional: None,
    },
    SchemaType {
        name: "float",
        not_optional: None,
    },
    SchemaType {
        name: "bool",
        not_optional: None,
    },
    SchemaType {
        name: "ScalarType",
        not_optional: None,
    },
    SchemaType {
        name: "Reduction",
        not_optional: Some("`Reduction::None` already means no reduction"),
    },
    SchemaType {
        name: "str",
        not_optional: Some("give the `str` a default value instead (`str padding=\"valid\"`)"),
    },
];

/// The schema type written `name`, if there is one.
pub fn schema_type(name: &str) -> Option<SchemaType> {
    SCHEMA_TYPES.into_iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::Role;

    #[test]
    fn attribute_is_attr_in_brackets() {
        for r in Role::ALL {
            let inner = r
                .attribute()
                .strip_prefix("#[")
                .and_then(|a| a.strip_suffix(']'));
            assert_eq!(inner, Some(r.attr()));
        }
    }

    #[test]
    fn names_are_the_variants_and_attrs_are_distinct() {
        for r in Role::ALL {
            // `Debug` of a unit variant is its name, which generated code writes.
            assert_eq!(std::format!("{r:?}"), r.name());
            assert_eq!(Role::from_attr(r.attr()), Some(r));
        }
        assert_eq!(Role::from_attr("rule"), None);
    }
}
