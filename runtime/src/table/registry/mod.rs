//! The registry: every op of every linked op table, with the functions the
//! attribute macros registered for it, collected from `inventory` at first use
//! and audited.
//!
//! The audit is the whole-program twin of the compile-time checks. A single
//! attribute can be checked while its crate compiles; only the whole program can
//! see that a primitive has no kernel, or that two crates registered a rule for
//! the same op. Each [`Problem`] names the op and the source location of every
//! registration involved.
//!
//! The registry holds what every transform shares: each op's schema, kernel,
//! meta and decomposition. A transform's per-op rules live in a [`RuleTable`]
//! the transform owns (declared with [`rule_table!`](crate::rule_table),
//! filled with [`rule!`](crate::rule) or a registration attribute), audited
//! against the registry the first time the transform reads it. The built-in
//! vmap, grad and jvp own theirs (`batching_rules`, `vjps`, `jvps`, in
//! [`crate::transform`]) as a third-party transform does; the registry does
//! not know their names.
//!
//! In the `table` layer (`runtime/src/table/`). It may use the `core` layer; in
//! its own layer, `schema` and `checks`. `tests/suite/layers.rs` enforces it.

mod rule_table;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use crate::core::value::{Arg, Outs, TensorMeta};
use crate::schema::{OpKind, OpSchema, OpTable, Role, TableRegistration};
use crate::{Error, Result, Tensor};

pub use rule_table::{AuditedRules, Refusal, RuleRegistration, RuleTable};

/// The erased form of a `#[kernel]` or `#[decompose]` function.
pub type KernelFn = fn(&[Arg<Tensor>]) -> Result<Outs<Tensor>>;
/// The erased form of a `#[meta]` function.
pub type MetaFn = fn(&[Arg<TensorMeta>]) -> Result<Outs<TensorMeta>>;

/// What a composite's decomposition does under vmap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecomposeVmap {
    /// Run the decomposition on the batched tensors (the default).
    Decompose,
    /// Treat the composite as a black box and use the fallback loop
    /// (`#[decompose(op = "...", vmap = "fallback")]`).
    Fallback,
}

/// A registered function the registry holds, with its role. (A transform's
/// per-op rules, such as `#[batching_rule]`, `#[vjp]` and `#[jvp]`, go to the
/// transform's [`RuleTable`] instead.)
#[derive(Clone, Copy, Debug)]
pub enum RegisteredFn {
    /// `#[kernel]`
    Kernel(KernelFn),
    /// `#[meta]`
    Meta(MetaFn),
    /// `#[decompose]`
    Decomposition(KernelFn, DecomposeVmap),
}

impl RegisteredFn {
    /// The role this function plays.
    pub fn role(&self) -> Role {
        match self {
            RegisteredFn::Kernel(_) => Role::Kernel,
            RegisteredFn::Meta(_) => Role::Meta,
            RegisteredFn::Decomposition(..) => Role::Decomposition,
        }
    }
}

/// Where a registration was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Source file.
    pub file: &'static str,
    /// Line of the registered function's name (the `fn` line, just below the attribute).
    pub line: u32,
    /// The registered function's name.
    pub function: &'static str,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` at {}:{}", self.function, self.file, self.line)
    }
}

/// One registration, as the attribute macros submit it.
#[derive(Debug)]
pub struct Registration {
    /// The table the op is declared in.
    pub table: &'static OpTable,
    /// The op name.
    pub op: &'static str,
    /// The function and its role.
    pub func: RegisteredFn,
    /// Where it was written.
    pub location: Location,
}

inventory::collect!(Registration);

/// What is wrong with a set of registrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// A primitive op has no `#[kernel]`.
    MissingKernel,
    /// A primitive op has no `#[meta]`.
    MissingMeta,
    /// A composite op has no `#[decompose]`.
    MissingDecomposition,
    /// Two or more registrations of the same role for one op.
    Duplicate,
    /// A registration names an op its table does not declare.
    UnknownOp,
    /// A registration's role does not fit the op's kind.
    WrongKind,
    /// A derivative rule (`#[vjp]`, `#[jvp]`) for an op its table marks
    /// `differentiable = false`.
    NotDifferentiable,
    /// A `#[jvp]` for an op its table marks `linear = true` (its jvp is the
    /// op applied to the tangents).
    Linear,
    /// Two op tables have the same module path.
    DuplicateTable,
}

/// One problem the audit found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// The op involved (or the table path, for [`ProblemKind::DuplicateTable`]).
    pub op: String,
    /// The locations of every registration involved.
    pub locations: Vec<Location>,
    /// The full message.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What every transform shares about one op: its schema, kernel, meta and
/// decomposition. (Per-transform rules are in the transforms' rule tables,
/// looked up by [`id`](Self::id).)
#[derive(Debug)]
pub struct OpEntry {
    /// The op id: its index in [`Registry::ops`].
    pub id: usize,
    /// The op's table.
    pub table: &'static OpTable,
    /// The op's schema.
    pub schema: &'static OpSchema,
    /// Its kernel (primitives).
    pub kernel: Option<KernelFn>,
    /// Its meta.
    pub meta: Option<MetaFn>,
    /// Its decomposition (composites).
    pub decomposition: Option<(KernelFn, DecomposeVmap)>,
}

impl OpEntry {
    /// The op name.
    pub fn name(&self) -> &'static str {
        self.schema.name
    }
}

/// All ops of the program, indexed by integer op id.
#[derive(Debug)]
pub struct Registry {
    entries: Vec<OpEntry>,
    /// (table path, op id of its first op)
    bases: Vec<(&'static str, usize)>,
}

impl Registry {
    /// Builds a registry from explicit tables and registrations and audits it.
    ///
    /// This is what [`registry`] does with everything `inventory` collected; tests
    /// call it with hand-made sets. Op ids are not published to the tables
    /// (only the global registry does that).
    pub fn build(
        tables: &[&'static OpTable],
        registrations: &[&Registration],
    ) -> std::result::Result<Registry, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut tables: Vec<&'static OpTable> = tables.to_vec();
        tables.sort_by_key(|t| t.path);
        tables.dedup_by(|a, b| std::ptr::eq(*a, *b));
        for pair in tables.windows(2) {
            if pair[0].path == pair[1].path {
                problems.push(Problem {
                    kind: ProblemKind::DuplicateTable,
                    op: pair[0].path.to_string(),
                    locations: Vec::new(),
                    message: format!(
                        "two op tables are declared at module path `{}`; give each `op_table!` its own module",
                        pair[0].path
                    ),
                });
            }
        }

        let mut entries = Vec::new();
        let mut bases = Vec::new();
        for table in &tables {
            bases.push((table.path, entries.len()));
            let base = entries.len();
            entries.extend(table.ops.iter().enumerate().map(|(i, schema)| OpEntry {
                id: base + i,
                table,
                schema,
                kernel: None,
                meta: None,
                decomposition: None,
            }));
        }

        // Group registrations by (op id, role), keeping source order stable.
        let mut by_slot: BTreeMap<(usize, u8), Vec<&Registration>> = BTreeMap::new();
        for reg in registrations {
            let base = tables
                .iter()
                .position(|t| std::ptr::eq(*t, reg.table))
                .map(|i| bases[i].1);
            let local = reg.table.find(reg.op).map(|(i, _)| i);
            let (Some(base), Some(local)) = (base, local) else {
                problems.push(Problem {
                    kind: ProblemKind::UnknownOp,
                    op: reg.op.to_string(),
                    locations: vec![reg.location],
                    message: format!(
                        "{} registers a {} for op `{}`, which op table `{}` does not declare; declare the op in that table or fix the name",
                        reg.location,
                        reg.func.role().attribute(),
                        reg.op,
                        reg.table.path
                    ),
                });
                continue;
            };
            by_slot
                .entry((base + local, role_index(reg.func.role())))
                .or_default()
                .push(reg);
        }

        for ((id, _), regs) in by_slot {
            let entry = &mut entries[id];
            let role = regs[0].func.role();
            if regs.len() > 1 {
                let mut locations: Vec<Location> = regs.iter().map(|r| r.location).collect();
                locations.sort_by_key(|l| (l.file, l.line));
                problems.push(Problem {
                    kind: ProblemKind::Duplicate,
                    op: entry.name().to_string(),
                    message: format!(
                        "op `{}` has {} {} registrations, at most one is allowed: {}; delete all but one",
                        entry.name(),
                        regs.len(),
                        role.attribute(),
                        join(&locations)
                    ),
                    locations,
                });
                // Fall through with the first one, so the op is not also
                // reported as missing that role.
            }
            let reg = regs[0];
            let fits = matches!(
                (entry.schema.kind, role),
                (OpKind::Primitive, Role::Kernel | Role::Meta)
                    | (OpKind::Composite, Role::Decomposition | Role::Meta)
            );
            if !fits {
                problems.push(Problem {
                    kind: ProblemKind::WrongKind,
                    op: entry.name().to_string(),
                    locations: vec![reg.location],
                    message: format!(
                        "{} registers a {} for `{}`, which is a {} op; a {} op takes {}",
                        reg.location,
                        role.attribute(),
                        entry.name(),
                        entry.schema.kind.as_str(),
                        entry.schema.kind.as_str(),
                        match entry.schema.kind {
                            OpKind::Primitive => "#[kernel], #[meta], #[batching_rule], #[vjp] and #[jvp]",
                            OpKind::Composite => "#[decompose] and #[meta] (it is differentiated and batched through its decomposition)",
                        }
                    ),
                });
                continue;
            }
            match reg.func {
                RegisteredFn::Kernel(f) => entry.kernel = Some(f),
                RegisteredFn::Meta(f) => entry.meta = Some(f),
                RegisteredFn::Decomposition(f, v) => entry.decomposition = Some((f, v)),
            }
        }

        for entry in &entries {
            let missing = match entry.schema.kind {
                OpKind::Primitive if entry.kernel.is_none() => {
                    Some((ProblemKind::MissingKernel, "#[kernel]"))
                }
                OpKind::Primitive if entry.meta.is_none() => {
                    Some((ProblemKind::MissingMeta, "#[meta]"))
                }
                OpKind::Composite if entry.decomposition.is_none() => {
                    Some((ProblemKind::MissingDecomposition, "#[decompose]"))
                }
                _ => None,
            };
            if let Some((kind, attr)) = missing {
                problems.push(Problem {
                    kind,
                    op: entry.name().to_string(),
                    locations: Vec::new(),
                    message: format!(
                        "{} op `{}` (table `{}`) has no {attr} function; write one with `{}(op = \"{}\")]`",
                        entry.schema.kind.as_str(),
                        entry.name(),
                        entry.table.path,
                        attr.trim_end_matches(']'),
                        entry.name()
                    ),
                });
            }
        }

        if problems.is_empty() {
            Ok(Registry { entries, bases })
        } else {
            Err(problems)
        }
    }

    /// Every op, by op id.
    pub fn ops(&self) -> &[OpEntry] {
        &self.entries
    }

    /// The op with this id.
    pub fn op(&self, id: usize) -> Option<&OpEntry> {
        self.entries.get(id)
    }

    /// The op id of the first op of `table`, if the registry holds the table.
    pub fn base_of(&self, table: &OpTable) -> Option<usize> {
        let (_, base) = self.bases.iter().find(|(p, _)| *p == table.path)?;
        self.entries
            .get(*base)
            .filter(|e| std::ptr::eq(e.table, table))
            .map(|_| *base)
    }

    /// The op called `name` in the table at module path `table`.
    pub fn find(&self, table: &str, name: &str) -> Option<&OpEntry> {
        let (_, base) = self.bases.iter().find(|(p, _)| *p == table)?;
        self.entries[*base..]
            .iter()
            .take_while(|e| e.table.path == table)
            .find(|e| e.name() == name)
    }
}

fn role_index(role: Role) -> u8 {
    match role {
        Role::Kernel => 0,
        Role::Meta => 1,
        Role::BatchingRule => 2,
        Role::Decomposition => 3,
        Role::Vjp => 4,
        Role::Jvp => 5,
    }
}

/// The problem with a derivative rule (`role` is [`Role::Vjp`] or
/// [`Role::Jvp`]) written at `location` for a primitive its table says takes
/// none: one through which no derivative flows, or (for a jvp) a linear one,
/// whose jvp is derived from the op. The grad and jvp rule tables refuse
/// these (see [`Refusal`]).
pub fn derivative_refusal(role: Role, entry: &OpEntry, location: &Location) -> Option<Problem> {
    if !matches!(role, Role::Vjp | Role::Jvp) {
        return None;
    }
    let (attr, transform) = match role {
        Role::Vjp => ("#[vjp]", "grad never asks for its vjp"),
        _ => ("#[jvp]", "jvp never asks for its tangents"),
    };
    let (kind, message) = if !entry.schema.differentiable {
        (
            ProblemKind::NotDifferentiable,
            format!(
                "{} registers a {attr} for `{}`, which its op table `{}` marks `differentiable = false`, so {transform}; remove the {attr}, or remove `differentiable = false` from the table if the op really has a derivative",
                location,
                entry.name(),
                entry.table.path
            ),
        )
    } else if role == Role::Jvp && entry.schema.linear {
        (
            ProblemKind::Linear,
            format!(
                "{} registers a #[jvp] for `{}`, which its op table `{}` marks `linear = true`, so its jvp is the op itself applied to the tangents and this one would never run; remove the #[jvp], or remove `linear = true` from the table if the op is not linear in its float tensor arguments",
                location,
                entry.name(),
                entry.table.path
            ),
        )
    } else {
        return None;
    };
    Some(Problem {
        kind,
        op: entry.name().to_string(),
        locations: vec![*location],
        message,
    })
}

fn join(locations: &[Location]) -> String {
    locations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

static GLOBAL: OnceLock<std::result::Result<Registry, Vec<Problem>>> = OnceLock::new();

/// The program's registry, built and audited at first use.
///
/// Errors with [`Error::Registry`] listing every problem if the registrations
/// linked into the program are inconsistent.
pub fn registry() -> Result<&'static Registry> {
    GLOBAL
        .get_or_init(|| {
            let tables: Vec<&'static OpTable> = inventory::iter::<TableRegistration>
                .into_iter()
                .map(|t| t.0)
                .collect();
            let regs: Vec<&Registration> = inventory::iter::<Registration>.into_iter().collect();
            let built = Registry::build(&tables, &regs);
            if let Ok(reg) = &built {
                for (path, base) in &reg.bases {
                    for t in &tables {
                        if t.path == *path {
                            t.set_base(*base);
                        }
                    }
                }
            }
            built
        })
        .as_ref()
        .map_err(|problems| Error::Registry {
            problems: problems.iter().map(ToString::to_string).collect(),
        })
}

/// The registry entry of op `local` of `table`, by integer id.
pub(crate) fn entry(table: &'static OpTable, local: usize) -> Result<&'static OpEntry> {
    let reg = registry()?;
    reg.op(table.base().wrapping_add(local))
        .filter(|e| std::ptr::eq(e.table, table))
        .ok_or_else(|| Error::NotImplemented {
            op: table.ops.get(local).map_or("?", |o| o.name).to_string(),
            message: format!("op table `{}` is not registered", table.path),
        })
}
