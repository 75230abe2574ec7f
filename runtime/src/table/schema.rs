//! Op schemas as generated from an op table by [`op_table!`](crate::op_table).
//!
//! Everything here is `const`-constructible: the generated table is a `const`
//! slice that the attribute macros' compile-time checks read (`const fn`s the
//! compiler evaluates), and a `static` [`OpTable`] that the registry indexes.
//!
//! In the `table` layer (`runtime/src/table/`). It may use the `core` layer.
//! `tests/suite/layers.rs` enforces it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Whether an op has a kernel of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// Has a dense kernel; may have a batching rule, else vmap uses the fallback.
    Primitive,
    /// Has no kernel: it is implemented by its decomposition into other ops.
    Composite,
}

impl OpKind {
    /// `"primitive"` or `"composite"`, as written in the table.
    pub const fn as_str(self) -> &'static str {
        match self {
            OpKind::Primitive => "primitive",
            OpKind::Composite => "composite",
        }
    }
}

/// The type of one schema argument, without optionality: declared once, in
/// `batchrules-roles`, next to the list of schema types, and shared with the
/// `op_table!` macro that parses schemas into it.
pub use batchrules_roles::ArgType;

/// One argument of an op schema.
#[derive(Clone, Copy, Debug)]
pub struct ArgSchema {
    /// The name in the schema (`self`, `diagonal`, ...).
    pub name: &'static str,
    /// Its type.
    pub ty: ArgType,
    /// Written with `?`: may be `None`.
    pub optional: bool,
    /// The default as written in the schema, if any.
    pub default: Option<&'static str>,
}

/// The role a registered function plays for an op: one per registration
/// attribute. Declared once for the workspace, in the `batchrules-roles`
/// crate, which the attribute macros use too.
pub use batchrules_roles::Role;

/// The signature of each role's function, as data next to [`Role`]
/// ([`Role::layout`]), and the ops each role's function would never run for
/// ([`Role::refusals`]): the attribute macros write [`RoleSignature`]s from
/// them, and the compile-time checks read them to count, place and explain
/// parameters.
pub use batchrules_roles::{
    Each, Forms, Naming, ParamGroup, Refusal, Refuse, ReturnLayout, SignatureLayout,
};

/// The types an op schema may give an argument, declared once for the
/// workspace in the `batchrules-roles` crate: `op_table!` accepts exactly
/// these, and the guide's list ("Step 1") is checked against them.
///
/// ```
/// use batchrules::schema::{schema_type, SCHEMA_TYPES};
///
/// assert_eq!(SCHEMA_TYPES[0].name, "Tensor");
/// assert!(schema_type("int").unwrap().not_optional.is_none());
/// assert!(schema_type("Tensor[]").unwrap().not_optional.is_some()); // no `Tensor[]?`
/// ```
pub use batchrules_roles::{schema_type, SchemaType, SCHEMA_TYPES};

/// The Rust signature a function in one role must have, as generated from the
/// schema. Types are in the normalized spelling the attribute macros compare
/// against (`&Tensor`, `Option<usize>`, `Result<Tensor>`).
#[derive(Clone, Copy, Debug)]
pub struct RoleSignature {
    /// The parameter types, in order.
    pub params: &'static [&'static str],
    /// The parameters' names, as [`display`](Self::display) writes them
    /// (`self_`, `self_bdim`, `result`, `grad0`, `self_tangent`).
    pub param_names: &'static [&'static str],
    /// The return type.
    pub ret: &'static str,
    /// The whole signature, for messages: `fn(self_: &Tensor, diagonal: i64) -> Result<Tensor>`.
    pub display: &'static str,
}

/// One op, as declared in an op table.
#[derive(Clone, Copy, Debug)]
pub struct OpSchema {
    /// The op name.
    pub name: &'static str,
    /// Primitive or composite.
    pub kind: OpKind,
    /// The schema string as written in the table.
    pub schema: &'static str,
    /// The arguments.
    pub args: &'static [ArgSchema],
    /// The return types (each [`ArgType::Tensor`] or [`ArgType::TensorList`]).
    pub returns: &'static [ArgType],
    /// Documentation from the table.
    pub doc: &'static str,
    /// Signature of a `#[kernel]` (and of a `#[decompose]`, and of the typed op function).
    pub kernel: RoleSignature,
    /// Signature of a `#[meta]`.
    pub meta: RoleSignature,
    /// Signature of a `#[batching_rule]`.
    pub rule: RoleSignature,
    /// Whether gradients flow through the op (`differentiable = false` in the
    /// table says they do not: comparisons, factories, integer-valued
    /// outputs). Always `true` for a composite, which is differentiated
    /// through its decomposition.
    pub differentiable: bool,
    /// Signature of a `#[vjp]`: the kernel's parameters, then one `&Tensor`
    /// per output (`result`, or `result0`, `result1`, ...), then one `&Tensor`
    /// cotangent per output (`grad`, or `grad0`, ...); it returns one
    /// `Option<Tensor>` per tensor-valued argument (`Vec<Option<Tensor>>` for a
    /// `Tensor[]`), a tuple when there are several.
    pub vjp: RoleSignature,
    /// Whether the op is linear jointly in the tensor arguments
    /// [`linear_in`](Self::linear_in) names (`linear` in the table): its jvp
    /// is the op itself applied to the tangents of those arguments, with the
    /// others (indices, `where`'s condition) held at their value, as JAX's
    /// `deflinear`; so it takes no `#[jvp]`. A missing tangent is a zero of
    /// the argument's shape and dtype. Only a differentiable primitive can be
    /// linear.
    pub linear: bool,
    /// The tensor arguments the op is linear in (empty when it is not).
    pub linear_in: &'static [&'static str],
    /// Signature of a `#[jvp]`: the kernel's parameters, then one `&Tensor`
    /// per output (`result`, or `result0`, `result1`, ...; `&[Tensor]` for a
    /// `Tensor[]` output), then one tangent per tensor-valued argument
    /// (`<arg>_tangent`: `Option<&Tensor>` for a `Tensor` or `Tensor?`,
    /// `&[Option<Tensor>]` for a `Tensor[]`; `None` is a zero tangent); it
    /// returns one `Option<Tensor>` tangent per output (`Vec<Option<Tensor>>`
    /// for a `Tensor[]` output), a tuple when there are several.
    pub jvp: RoleSignature,
    /// Whether the op draws random numbers (`random = true` in the table):
    /// it takes its stream as an `int seed` argument, and under vmap it
    /// follows the level's randomness policy (see `Vmap::randomness`).
    pub random: bool,
    /// The shared sample set the tests run the op on (`samples = "float"` in
    /// the table): the sample and error inputs a
    /// [`sample_set!`](crate::sample_set) of that name declares for the
    /// table, which [`testing::op_infos`](crate::testing::op_infos) gives as
    /// the op's [`OpInfo`](crate::testing::OpInfo). `None` when the op
    /// declares inputs of its own with [`op_samples!`](crate::op_samples).
    pub samples: Option<&'static str>,
}

impl OpSchema {
    /// The signature a function registered in `role` must have.
    pub const fn signature(&self, role: Role) -> &RoleSignature {
        match role {
            Role::Kernel | Role::Decomposition => &self.kernel,
            Role::Meta => &self.meta,
            Role::BatchingRule => &self.rule,
            Role::Vjp => &self.vjp,
            Role::Jvp => &self.jvp,
        }
    }

    /// Whether any argument is a tensor (`Tensor`, `Tensor?` or `Tensor[]`):
    /// an op without one is never batched and has nothing to differentiate.
    pub const fn takes_tensors(&self) -> bool {
        let mut i = 0;
        while i < self.args.len() {
            if matches!(self.args[i].ty, ArgType::Tensor | ArgType::TensorList) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Whether the op returns a `Tensor[]`.
    pub const fn returns_list(&self) -> bool {
        let mut i = 0;
        while i < self.returns.len() {
            if matches!(self.returns[i], ArgType::TensorList) {
                return true;
            }
            i += 1;
        }
        false
    }
}

/// An op table: the ops one `op_table!` invocation declares.
#[derive(Debug)]
pub struct OpTable {
    /// The Rust path of the module holding the table, e.g. `batchrules::ops`.
    pub path: &'static str,
    /// The ops, in table order.
    pub ops: &'static [OpSchema],
    base: AtomicUsize,
}

impl OpTable {
    /// A table whose op ids are not assigned yet (the registry assigns them).
    #[doc(hidden)]
    pub const fn new(path: &'static str, ops: &'static [OpSchema]) -> Self {
        OpTable {
            path,
            ops,
            base: AtomicUsize::new(usize::MAX),
        }
    }

    /// The global id of this table's first op, once the registry is built.
    pub(crate) fn base(&self) -> usize {
        self.base.load(Ordering::Acquire)
    }

    pub(crate) fn set_base(&self, base: usize) {
        self.base.store(base, Ordering::Release);
    }

    /// The op called `name`, with its index in the table.
    pub fn find(&self, name: &str) -> Option<(usize, &'static OpSchema)> {
        self.ops.iter().enumerate().find(|(_, op)| op.name == name)
    }
}

/// Submitted once per op table so the registry can find every table linked
/// into the program.
#[doc(hidden)]
pub struct TableRegistration(pub &'static OpTable);

inventory::collect!(TableRegistration);
