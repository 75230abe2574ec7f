//! The roles a registered function plays for an op, declared once, with
//! what each role's function looks like.
//!
//! The attribute macros (`batchrules-macros`: which attribute is being
//! expanded, the signature a schema gives it, the code it generates) and the
//! runtime (`batchrules::schema::Role`: the registry, the compile-time checks
//! of the generated code, error messages) use this one enum; the generated
//! code names a variant by [`Role::name`]. Use it as `batchrules::schema::Role`.
//!
//! Each role's signature is described here once, as data: its
//! [`SignatureLayout`] ([`Role::layout`]) says which groups of parameters
//! the function takes in which order (the op's arguments, a batch dim after
//! each tensor, the outputs, a cotangent per output, a tangent per tensor
//! argument), how each is written and named, what it returns, and how a
//! message explains each. The macros fill it in from an op's schema to write
//! the signature; the runtime's compile-time checks read it to count the
//! parameters, find where each comes from and word their messages. Which ops
//! a role's function would never run for, and the message saying so, are
//! data too ([`Role::refusals`]). A new role is a variant here, its layout
//! and its refusals, and its calling convention in the runtime.
//!
//! ```
//! use batchrules_roles::Role;
//!
//! assert_eq!(Role::BatchingRule.attr(), "batching_rule");
//! assert_eq!(Role::BatchingRule.attribute(), "#[batching_rule]");
//! // A decomposition has the kernel's signature.
//! assert_eq!(Role::Decomposition.signature_role(), Role::Kernel);
//! assert_eq!(Role::Decomposition.layout(), Role::Kernel.layout());
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

    /// The signature this role's function has, as a layout the schema
    /// fills in (a decomposition has the kernel's).
    pub const fn layout(self) -> &'static SignatureLayout {
        match self {
            Role::Kernel | Role::Decomposition => &KERNEL,
            Role::Meta => &META,
            Role::BatchingRule => &BATCHING_RULE,
            Role::Vjp => &VJP,
            Role::Jvp => &JVP,
        }
    }

    /// The ops this role's function would never run for, each with the
    /// message saying so, in the order they are tested: the first that
    /// applies to an op is reported.
    pub const fn refusals(self) -> &'static [Refusal] {
        match self {
            Role::Kernel => KERNEL_REFUSALS,
            Role::Meta => &[],
            Role::BatchingRule => BATCHING_RULE_REFUSALS,
            Role::Decomposition => DECOMPOSITION_REFUSALS,
            Role::Vjp => VJP_REFUSALS,
            Role::Jvp => JVP_REFUSALS,
        }
    }
}

/// What a group of a signature's parameters, or its returned items, has one
/// of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Each {
    /// Each argument of the op, in schema order.
    Arg,
    /// Each tensor-valued argument of the op (`Tensor`, `Tensor?` or
    /// `Tensor[]`), in schema order.
    TensorArg,
    /// Each output of the op, in schema order.
    Output,
}

/// How a parameter or a returned item is written for a `Tensor` (or a
/// `Tensor?`), and for a `Tensor[]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forms {
    /// For a `Tensor` or `Tensor?`: `&Tensor`, `Option<usize>`, ...
    pub one: &'static str,
    /// For a `Tensor[]`: `&[Tensor]`, `&[Option<usize>]`, ...
    pub list: &'static str,
}

impl Forms {
    /// The form for a `Tensor[]` if `list`, else for a `Tensor`.
    pub const fn of(self, list: bool) -> &'static str {
        if list {
            self.list
        } else {
            self.one
        }
    }
}

/// How the parameters of a group are named, in the signature the messages
/// show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// The argument's name as a Rust identifier: `self_`, `diagonal`.
    Arg,
    /// The argument's schema name and a suffix: `self_bdim`.
    ArgSuffix(&'static str),
    /// A word, numbered from 0 when the op has several outputs: `result`, or
    /// `result0`, `result1`, ...
    Numbered(&'static str),
}

/// One group of parameters of a signature: one parameter per argument,
/// tensor argument or output of the op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamGroup {
    /// What the group has one parameter for.
    pub each: Each,
    /// Each parameter stands right after its argument's (a batching rule's
    /// batch dims), not after the group before it. Only for an
    /// [`Each::TensorArg`] group, which then follows the [`Each::Arg`] group.
    pub after_its_argument: bool,
    /// The parameter's type; `None` for the type the schema gives the
    /// argument, with its tensors written as the layout's
    /// [`tensor`](SignatureLayout::tensor) (`&Tensor`, `Option<i64>`,
    /// `&[TensorMeta]`).
    pub forms: Option<Forms>,
    /// How the parameters are named.
    pub naming: Naming,
    /// What a parameter of the group must be, for the message about one of
    /// another type: `{arg}` is the schema name of its argument, `{param}`
    /// its own name, `{type}` its type.
    pub is: &'static str,
    /// What a function whose parameters stop inside this group is told,
    /// after "the `#[...]` for `op`": `{found}` is the number of its
    /// parameters, `{n}` the number the group has for the op. Empty: such a
    /// function is told the two counts.
    pub cut_short: &'static str,
}

/// What a signature returns, inside its `Result`: one item per argument,
/// tensor argument or output of the op; one item alone, several as a tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReturnLayout {
    /// What it returns one item for.
    pub each: Each,
    /// How an item is written.
    pub forms: Forms,
    /// What the message about another return type explains after it; empty
    /// for nothing.
    pub help: &'static str,
}

/// The signature of a role's function, as data: the groups of parameters in
/// order and what it returns. The attribute macros fill it in from an op's
/// schema to write the signature the messages show, and the compile-time
/// checks of the runtime read it to count the parameters, find where each
/// comes from and explain a mismatch. [`Role::layout`] gives each role's.
///
/// ```
/// use batchrules_roles::{Each, Role};
///
/// // A vjp takes the op's arguments, its outputs, then their cotangents,
/// let vjp = Role::Vjp.layout();
/// let groups: Vec<Each> = vjp.params.iter().map(|g| g.each).collect();
/// assert_eq!(groups, [Each::Arg, Each::Output, Each::Output]);
/// // and returns one gradient per tensor argument.
/// assert_eq!(vjp.returns.each, Each::TensorArg);
/// // A batching rule's batch dims stand after their tensors.
/// assert!(Role::BatchingRule.layout().params[1].after_its_argument);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureLayout {
    /// The type of the op's tensor arguments: `Tensor`, or `TensorMeta` for
    /// a meta.
    pub tensor: &'static str,
    /// The groups of parameters; the first is the op's arguments
    /// ([`Each::Arg`]).
    pub params: &'static [ParamGroup],
    /// What the function returns.
    pub returns: ReturnLayout,
    /// What a function that takes only the op's arguments is told it lacks,
    /// after "the `#[...]` for `op`"; empty when the layout has nothing else.
    pub missing: &'static str,
}

/// The op's arguments, each of the type the schema gives it.
const ARGS: ParamGroup = ParamGroup {
    each: Each::Arg,
    after_its_argument: false,
    forms: None,
    naming: Naming::Arg,
    is: "schema argument `{arg}` is passed as `{type}`.",
    cut_short: "",
};

/// A derivative rule's parameters after the op's arguments: each output.
const OUTPUTS: ParamGroup = ParamGroup {
    each: Each::Output,
    after_its_argument: false,
    forms: Some(Forms {
        one: "&Tensor",
        list: "&[Tensor]",
    }),
    naming: Naming::Numbered("result"),
    is: "it must be the op's output `{param}`, of type `{type}`.",
    cut_short: "",
};

const KERNEL: SignatureLayout = SignatureLayout {
    tensor: "Tensor",
    params: &[ARGS],
    returns: ReturnLayout {
        each: Each::Output,
        forms: Forms {
            one: "Tensor",
            list: "Vec<Tensor>",
        },
        help: "",
    },
    missing: "",
};

const META: SignatureLayout = SignatureLayout {
    tensor: "TensorMeta",
    params: &[ARGS],
    returns: ReturnLayout {
        each: Each::Output,
        forms: Forms {
            one: "TensorMeta",
            list: "Vec<TensorMeta>",
        },
        help: "",
    },
    missing: "",
};

const BATCHING_RULE: SignatureLayout = SignatureLayout {
    tensor: "Tensor",
    params: &[
        ARGS,
        ParamGroup {
            each: Each::TensorArg,
            after_its_argument: true,
            forms: Some(Forms {
                one: "Option<usize>",
                list: "&[Option<usize>]",
            }),
            naming: Naming::ArgSuffix("_bdim"),
            is: "it must be the batch dim of tensor argument `{arg}`, of type `{type}`.",
            cut_short: "",
        },
    ],
    returns: ReturnLayout {
        each: Each::Output,
        forms: Forms {
            one: "(Tensor, Option<usize>)",
            list: "(Vec<Tensor>, Vec<Option<usize>>)",
        },
        help: "",
    },
    missing: "is missing its batch-dim parameters: a batching rule takes each tensor argument followed by its batch dim (`Option<usize>` after `&Tensor`, `&[Option<usize>]` after `&[Tensor]`).",
};

/// What a derivative rule returns one of: the gradient of a tensor argument
/// (vjp), the tangent of an output (jvp).
const DERIVATIVE: Forms = Forms {
    one: "Option<Tensor>",
    list: "Vec<Option<Tensor>>",
};

const VJP: SignatureLayout = SignatureLayout {
    tensor: "Tensor",
    params: &[
        ARGS,
        OUTPUTS,
        ParamGroup {
            each: Each::Output,
            after_its_argument: false,
            forms: OUTPUTS.forms,
            naming: Naming::Numbered("grad"),
            is: "it must be the cotangent `{param}` of the op's output (the gradient flowing back into it), of type `{type}`.",
            cut_short: "is missing cotangents: it takes {found} parameters, but after the op's arguments and outputs a vjp takes one cotangent per output of the op ({n} here), in output order.",
        },
    ],
    returns: ReturnLayout {
        each: Each::TensorArg,
        forms: DERIVATIVE,
        help: "A vjp returns one gradient per tensor argument of the op, in order: `Option<Tensor>` (`None` when no gradient flows to it), `Vec<Option<Tensor>>` for a `Tensor[]`; a tuple of them when the op has several tensor arguments.",
    },
    missing: "is missing the op's outputs and their cotangents: a vjp takes the op's arguments, then each output (`result`), then one cotangent per output (`grad`), all `&Tensor`.",
};

const JVP: SignatureLayout = SignatureLayout {
    tensor: "Tensor",
    params: &[
        ARGS,
        OUTPUTS,
        ParamGroup {
            each: Each::TensorArg,
            after_its_argument: false,
            forms: Some(Forms {
                one: "Option<&Tensor>",
                list: "&[Option<Tensor>]",
            }),
            naming: Naming::ArgSuffix("_tangent"),
            is: "it must be the tangent `{param}` of a tensor argument (`None` when the tangent is zero), of type `{type}`.",
            cut_short: "is missing tangents: it takes {found} parameters, but after the op's arguments and outputs a jvp takes one tangent per tensor argument of the op ({n} here), in argument order.",
        },
    ],
    returns: ReturnLayout {
        each: Each::Output,
        forms: DERIVATIVE,
        help: "A jvp returns the tangent of each output of the op, in order: `Option<Tensor>` (`None` when it is zero), `Vec<Option<Tensor>>` for a `Tensor[]` output; a tuple of them when the op has several outputs.",
    },
    missing: "is missing the op's outputs and the tangents: a jvp takes the op's arguments, then each output (`result`, a `&Tensor`), then one tangent per tensor argument (`<argument>_tangent`, an `Option<&Tensor>`, `None` when it is zero; a `&[Option<Tensor>]` for a `Tensor[]`).",
};

/// What makes a role's function one that would never run for an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refuse {
    /// The op is a composite (`kind = "composite"`).
    Composite,
    /// The op is a primitive (`kind = "primitive"`).
    Primitive,
    /// The op takes no tensor argument.
    NoTensorArgs,
    /// The op is random (`random = true`).
    Random,
    /// The op is marked `differentiable = false`.
    NotDifferentiable,
    /// The op is marked `linear = true`.
    Linear,
}

/// An op a role's function would never run for, and the message saying so:
/// `{op}` is the op's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Which ops.
    pub when: Refuse,
    /// The message.
    pub why: &'static str,
}

const KERNEL_REFUSALS: &[Refusal] = &[Refusal {
    when: Refuse::Composite,
    why: "`{op}` is a composite op: it has no kernel of its own and always runs its decomposition, so this kernel would never run. Write `#[decompose(op = \"{op}\")]` to implement it in terms of other ops, or declare it `kind = \"primitive\"` in its op table to give it a kernel.",
}];

const BATCHING_RULE_REFUSALS: &[Refusal] = &[
    Refusal {
        when: Refuse::Composite,
        why: "`{op}` is a composite op: it has no kernel and is decomposed into other ops before vmap sees it, so a batching rule registered for it would never run. Write `#[decompose(op = \"{op}\")]` to implement it in terms of other ops (vmap then batches each of them), or declare it `kind = \"primitive\"` in its op table if it needs a kernel and a batching rule of its own.",
    },
    Refusal {
        when: Refuse::NoTensorArgs,
        why: "`{op}` takes no tensor arguments, so no call to it has a batch dim: vmap never batches it (it runs its `#[kernel]`, and the plain tensor it returns broadcasts against batched ones), so a batching rule registered for it would never run. Remove this `#[batching_rule]`, or give `{op}` a `Tensor` argument in its op table if its calls are to be batched.",
    },
    Refusal {
        when: Refuse::Random,
        why: "`{op}` is a random op (`random = true` in its op table): vmap batches it by its randomness policy, running it once per example with the seed that policy gives each example, so a batching rule registered for it would never run. Remove this `#[batching_rule]`; to vectorize `{op}`, declare it `kind = \"composite\"` and decompose it into `random_key` and the keyed draws (`random_uniform`, `random_normal`), which have batching rules.",
    },
];

const DECOMPOSITION_REFUSALS: &[Refusal] = &[Refusal {
    when: Refuse::Primitive,
    why: "`{op}` is a primitive op: it runs its `#[kernel]`, so this decomposition would never run. Write `#[kernel(op = \"{op}\")]` (and a `#[batching_rule]` for vmap) instead, or declare it `kind = \"composite\"` in its op table if it is implemented by other ops.",
}];

const VJP_REFUSALS: &[Refusal] = &[
    Refusal {
        when: Refuse::Composite,
        why: "`{op}` is a composite op: grad differentiates it through its decomposition (each op it calls brings its own vjp), so a vjp registered for it would never run. Remove this `#[vjp]`; if `{op}` really needs a derivative of its own, declare it `kind = \"primitive\"` in its op table and give it a `#[kernel]`, a `#[meta]` and a `#[batching_rule]` as well.",
    },
    Refusal {
        when: Refuse::NotDifferentiable,
        why: "`{op}` is marked `differentiable = false` in its op table: no gradient flows through it, so grad never asks for its vjp and this one would never run. Remove this `#[vjp]`, or remove `differentiable = false` from `{op}`'s table entry if it really has a derivative.",
    },
    Refusal {
        when: Refuse::NoTensorArgs,
        why: "`{op}` takes no tensor arguments, so there is nothing for a gradient to flow back to and this vjp would never run. Remove this `#[vjp]`, and mark `{op}` `differentiable = false` in its op table.",
    },
];

const JVP_REFUSALS: &[Refusal] = &[
    Refusal {
        when: Refuse::Composite,
        why: "`{op}` is a composite op: jvp differentiates it through its decomposition (each op it calls brings its own jvp), so a jvp registered for it would never run. Remove this `#[jvp]`; if `{op}` really needs a derivative of its own, declare it `kind = \"primitive\"` in its op table and give it a `#[kernel]`, a `#[meta]` and a `#[batching_rule]` as well.",
    },
    Refusal {
        when: Refuse::NotDifferentiable,
        why: "`{op}` is marked `differentiable = false` in its op table: no derivative flows through it (its outputs have no tangent), so jvp never asks for its jvp and this one would never run. Remove this `#[jvp]`, or remove `differentiable = false` from `{op}`'s table entry if it really has a derivative.",
    },
    Refusal {
        when: Refuse::NoTensorArgs,
        why: "`{op}` takes no tensor arguments, so there is no tangent to push forward and this jvp would never run. Remove this `#[jvp]`, and mark `{op}` `differentiable = false` in its op table.",
    },
    Refusal {
        when: Refuse::Linear,
        why: "`{op}` is marked `linear = true` in its op table, so its jvp is the op itself applied to the tangents (as JAX's `deflinear`), and this one would never run. Remove this `#[jvp]`, or remove `linear = true` from `{op}`'s table entry if it is not linear in its float tensor arguments.",
    },
];

/// The type of one schema argument, without optionality: what the
/// `op_table!` macro parses a schema's type into, and the runtime's
/// `schema::ArgType` (a re-export). Each [`SchemaType`] names its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgType {
    /// `Tensor`
    Tensor,
    /// `Tensor[]`
    TensorList,
    /// `int` (`i64`)
    Int,
    /// `int[]` (`&[i64]`)
    IntList,
    /// `float` (`f64`)
    Float,
    /// `bool`
    Bool,
    /// `ScalarType` (the runtime's `DType`)
    ScalarType,
    /// `Reduction` (the runtime's `Reduction`): how a loss reduces.
    Reduction,
    /// `str` (`&str`): a word such as conv2d's `padding="same"`, or einsum's
    /// equation.
    Str,
}

impl ArgType {
    /// The variant's name (`"TensorList"`), as generated code spells it.
    pub const fn variant(self) -> &'static str {
        match self {
            ArgType::Tensor => "Tensor",
            ArgType::TensorList => "TensorList",
            ArgType::Int => "Int",
            ArgType::IntList => "IntList",
            ArgType::Float => "Float",
            ArgType::Bool => "Bool",
            ArgType::ScalarType => "ScalarType",
            ArgType::Reduction => "Reduction",
            ArgType::Str => "Str",
        }
    }

    /// Whether an argument of this type holds tensors.
    pub const fn is_tensor(self) -> bool {
        matches!(self, ArgType::Tensor | ArgType::TensorList)
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
    /// What it is.
    pub base: ArgType,
    /// Why `name?` (an optional argument) is refused, if it is; `None` if a
    /// schema may write `name?`.
    pub not_optional: Option<&'static str>,
}

/// Every schema type, in the order messages list them.
pub const SCHEMA_TYPES: [SchemaType; 9] = [
    SchemaType {
        name: "Tensor",
        base: ArgType::Tensor,
        not_optional: None,
    },
    SchemaType {
        name: "Tensor[]",
        base: ArgType::TensorList,
        not_optional: Some("use an empty `Tensor[]`"),
    },
    SchemaType {
        name: "int",
        base: ArgType::Int,
        not_optional: None,
    },
    SchemaType {
        name: "int[]",
        base: ArgType::IntList,
        not_optional: None,
    },
    SchemaType {
        name: "float",
        base: ArgType::Float,
        not_optional: None,
    },
    SchemaType {
        name: "bool",
        base: ArgType::Bool,
        not_optional: None,
    },
    SchemaType {
        name: "ScalarType",
        base: ArgType::ScalarType,
        not_optional: None,
    },
    SchemaType {
        name: "Reduction",
        base: ArgType::Reduction,
        not_optional: Some("`Reduction::None` already means no reduction"),
    },
    SchemaType {
        name: "str",
        base: ArgType::Str,
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
    use super::{Each, Naming, Role, SCHEMA_TYPES};
    use std::vec::Vec;

    /// Each schema type has a base of its own: the enum and the list of
    /// types describe the same nine types.
    #[test]
    fn every_schema_type_has_its_own_base() {
        for (i, t) in SCHEMA_TYPES.iter().enumerate() {
            assert!(
                SCHEMA_TYPES[..i].iter().all(|u| u.base != t.base),
                "`{}` shares its base with an earlier type",
                t.name
            );
            assert_eq!(t.base.is_tensor(), t.name.starts_with("Tensor"));
        }
    }

    /// The placeholders of `template`: the words in braces.
    fn placeholders(template: &str) -> Vec<&str> {
        template
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(key, _)| key))
            .collect()
    }

    #[test]
    fn layouts_are_well_formed() {
        for r in Role::ALL {
            let layout = r.layout();
            let first = layout.params[0];
            assert_eq!(
                (first.each, first.forms, first.naming),
                (Each::Arg, None, Naming::Arg)
            );
            for (i, group) in layout.params.iter().enumerate().skip(1) {
                assert_ne!(group.each, Each::Arg, "{r:?}: one group of arguments");
                assert!(group.forms.is_some(), "{r:?}: group {i} says its types");
                // Stands after its argument: only a tensor argument's, only
                // right after the arguments.
                if group.after_its_argument {
                    assert_eq!(group.each, Each::TensorArg, "{r:?}");
                    assert!(layout.params[..i]
                        .iter()
                        .skip(1)
                        .all(|g| g.after_its_argument));
                }
                let numbered = matches!(group.naming, Naming::Numbered(_));
                assert_eq!(numbered, group.each == Each::Output, "{r:?}: group {i}");
            }
            for group in layout.params {
                for key in placeholders(group.is) {
                    assert!(["arg", "param", "type"].contains(&key), "{r:?}: {key}");
                }
                for key in placeholders(group.cut_short) {
                    assert!(["found", "n"].contains(&key), "{r:?}: {key}");
                }
            }
            assert!(placeholders(layout.missing).is_empty(), "{r:?}");
            for refusal in r.refusals() {
                assert_eq!(placeholders(refusal.why).first(), Some(&"op"), "{r:?}");
                assert!(placeholders(refusal.why).iter().all(|k| *k == "op"));
            }
        }
    }

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
