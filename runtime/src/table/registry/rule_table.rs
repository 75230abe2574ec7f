//! A transform's own table of per-op rules.
//!
//! A transform that needs one function per op (a cost model, a shape-only
//! evaluator, a new kind of derivative) declares its table with
//! [`rule_table!`](crate::rule_table) and its rules with
//! [`rule!`](crate::rule), in its own crate. Neither the registry nor the
//! attribute macros learn its name: the table is a `static` the transform
//! owns, its rule type is whatever function type it chooses, and it finds an
//! op's rule by the op's registry id, so looking one up costs an index, never
//! a string hash.
//!
//! `rule!` names its op by the typed path of the op table
//! (`batchrules::ops, add`), so a misspelt op does not compile; and it refuses,
//! at compile time, a rule for a composite op, which the dispatcher decomposes
//! before the transform sees it (the rule would never run). The table audits
//! the rest the first time it is read: two rules for one op, or a rule for an
//! op of a table the program does not link, is an [`Error::Registry`] naming
//! every location involved.
//!
//! `tests/suite/rule_table.rs` adds a FLOP-counting transform this way; the
//! guide's "Adding a transform" section lists the files it takes.

use std::fmt;
use std::sync::OnceLock;

use super::{registry, Location, OpEntry, Problem, ProblemKind};
use crate::schema::{OpKind, OpTable};
use crate::{Error, Result};

/// One rule as [`rule!`](crate::rule) submits it: the op (its table and its
/// index there), the function, and where it was written.
#[derive(Debug)]
pub struct RuleRegistration<F: 'static> {
    /// The op's table.
    pub table: &'static OpTable,
    /// The op's index in its table (`<table module>::__index::<op>`).
    pub index: usize,
    /// The rule.
    pub rule: F,
    /// Where it was written.
    pub location: Location,
}

/// The audited rules of a table, indexed by op id.
type Built<F> = std::result::Result<Vec<Option<(F, Location)>>, Vec<String>>;

/// The rules of a table after its audit, indexed by registry op id: the rule
/// of each op and where it was written.
pub type AuditedRules<F> = Vec<Option<(F, Location)>>;

/// A table's own refusal of a rule for an op (beyond the refusals every table
/// makes: an op the registry does not hold, a composite, a second rule). It
/// gets the op and the rule's location and returns the problem, if any.
/// The built-in grad and jvp tables refuse a derivative for an op the op
/// table marks `differentiable = false` (and jvp one marked `linear = true`).
pub type Refusal = fn(&OpEntry, &Location) -> Option<Problem>;

/// A transform's rules, one per op at most, indexed by registry op id.
///
/// Declare one with [`rule_table!`](crate::rule_table); read it with
/// [`RuleTable::get`].
pub struct RuleTable<F: 'static> {
    transform: &'static str,
    rule: &'static str,
    registrations: fn() -> Vec<&'static RuleRegistration<F>>,
    refusal: Option<Refusal>,
    built: OnceLock<Built<F>>,
}

impl<F: Copy + 'static> RuleTable<F> {
    /// A table of `transform`'s rules, whose registrations `registrations`
    /// lists. `rule` names one rule in messages (`"#[vjp]"`, `"flops rule"`).
    /// [`rule_table!`](crate::rule_table) writes this call.
    pub const fn new(
        transform: &'static str,
        rule: &'static str,
        registrations: fn() -> Vec<&'static RuleRegistration<F>>,
    ) -> Self {
        RuleTable {
            transform,
            rule,
            registrations,
            refusal: None,
            built: OnceLock::new(),
        }
    }

    /// This table, also refusing what `refusal` reports (see [`Refusal`]).
    pub const fn refusing(mut self, refusal: Refusal) -> Self {
        self.refusal = Some(refusal);
        self
    }

    /// The transform's name.
    pub fn transform(&self) -> &'static str {
        self.transform
    }

    /// What one rule of this table is called in messages.
    pub fn rule_name(&self) -> &'static str {
        self.rule
    }

    /// Audits the table once: `Ok` if its registrations are consistent with
    /// the program's registry, else [`Error::Registry`] listing every problem
    /// (as the first [`get`](Self::get) would).
    pub fn check(&self) -> Result<()> {
        self.rules().map(|_| ())
    }

    /// The rule registered for op `entry`, if any.
    ///
    /// Errors with [`Error::Registry`] if the table's registrations are
    /// inconsistent (two rules for one op, an op of a table the program does
    /// not link), or if the program's registry is.
    pub fn get(&self, entry: &OpEntry) -> Result<Option<F>> {
        Ok(self
            .rules()?
            .get(entry.id)
            .copied()
            .flatten()
            .map(|(f, _)| f))
    }

    /// Where the rule for op `entry` was written, if one is registered.
    pub fn location(&self, entry: &OpEntry) -> Result<Option<Location>> {
        Ok(self
            .rules()?
            .get(entry.id)
            .copied()
            .flatten()
            .map(|(_, l)| l))
    }

    /// `what` followed by where op `entry`'s rule was written
    /// (``"vjp `exp_vjp` at src/lib.rs:12"``), or `what` alone when that is
    /// not known: how a rule's self-check names the rule it caught.
    pub fn describe(&self, entry: &OpEntry, what: &str) -> String {
        match self.location(entry) {
            Ok(Some(l)) => format!("{what} {l}"),
            _ => what.to_string(),
        }
    }

    fn rules(&self) -> Result<&[Option<(F, Location)>]> {
        self.built
            .get_or_init(|| self.build())
            .as_deref()
            .map_err(|problems| Error::Registry {
                problems: problems.clone(),
            })
    }

    fn build(&self) -> Built<F> {
        let reg = registry().map_err(|e| vec![e.to_string()])?;
        self.audit(reg, &(self.registrations)())
            .map_err(|problems| problems.iter().map(ToString::to_string).collect())
    }

    /// Audits `registrations` against `registry` as this table audits its own
    /// against the program's: the rules by op id, or every problem found. This
    /// is what the first [`get`](Self::get) does; tests call it with
    /// hand-made sets, as [`Registry::build`](super::Registry::build).
    pub fn audit(
        &self,
        reg: &super::Registry,
        registrations: &[&RuleRegistration<F>],
    ) -> std::result::Result<AuditedRules<F>, Vec<Problem>> {
        let mut rules: Vec<Option<(F, Location)>> = vec![None; reg.ops().len()];
        let mut dups: Vec<Vec<Location>> = vec![Vec::new(); reg.ops().len()];
        let mut problems = Vec::new();
        for r in registrations {
            let entry = reg
                .base_of(r.table)
                .and_then(|base| reg.op(base.checked_add(r.index)?))
                .filter(|e| std::ptr::eq(e.table, r.table) && r.index < r.table.ops.len());
            let Some(entry) = entry else {
                problems.push(self.problem(
                    ProblemKind::UnknownOp,
                    r,
                    format!(
                        "{} registers a {} for op {} of table `{}`, which the registry does not hold; link the crate that declares the table",
                        r.location, self.rule, r.index, r.table.path
                    ),
                ));
                continue;
            };
            if entry.schema.kind == OpKind::Composite {
                // `rule!` refuses this at compile time; a registration
                // written by hand reaches it here.
                problems.push(self.problem(
                    ProblemKind::WrongKind,
                    r,
                    format!(
                        "{} registers a {} for `{}`, a composite op: the dispatcher runs its decomposition, so the rule would never run (it is batched and differentiated through its decomposition); register rules for the primitives it decomposes into instead",
                        r.location,
                        self.rule,
                        entry.name()
                    ),
                ));
                continue;
            }
            if let Some(problem) = self.refusal.and_then(|refuse| refuse(entry, &r.location)) {
                problems.push(problem);
                continue;
            }
            dups[entry.id].push(r.location);
            rules[entry.id].get_or_insert((r.rule, r.location));
        }
        for (id, locations) in dups.iter().enumerate() {
            if locations.len() > 1 {
                let name = reg.ops()[id].name();
                let mut locations = locations.clone();
                locations.sort_by_key(|l| (l.file, l.line));
                problems.push(Problem {
                    kind: ProblemKind::Duplicate,
                    op: name.to_string(),
                    message: format!(
                        "op `{name}` has {} {} registrations, at most one is allowed: {}; delete all but one",
                        locations.len(),
                        self.rule,
                        super::join(&locations)
                    ),
                    locations,
                });
            }
        }
        if problems.is_empty() {
            Ok(rules)
        } else {
            Err(problems)
        }
    }

    fn problem(&self, kind: ProblemKind, r: &RuleRegistration<F>, message: String) -> Problem {
        Problem {
            kind,
            op: r
                .table
                .ops
                .get(r.index)
                .map_or_else(|| r.index.to_string(), |o| o.name.to_string()),
            locations: vec![r.location],
            message,
        }
    }
}

impl<F: 'static> fmt::Debug for RuleTable<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleTable")
            .field("transform", &self.transform)
            .field("rule", &self.rule)
            .field("built", &self.built.get().is_some())
            .finish()
    }
}

/// Declares a transform's rule table: a module holding the table (`TABLE`)
/// and the type its rules are registered as.
///
/// The long form also names one rule for messages and adds the table's own
/// refusals (a [`Refusal`](crate::registry::Refusal), or `None`):
/// `pub mod vjps: VjpRuleFn = "grad", rule = "#[vjp]", refusing = Some(f);`.
/// The built-in vmap, grad and jvp transforms declare their tables this way,
/// and their attributes (`#[batching_rule]`, `#[vjp]`, `#[jvp]`) register into
/// them as [`rule!`](crate::rule) does.
///
/// ```
/// # mod demo {
/// use batchrules::rules::Arg;
/// use batchrules::Tensor;
///
/// /// How many elements an op call writes.
/// pub type WritesRule = fn(&[Arg<Tensor>], &[Tensor]) -> usize;
///
/// batchrules::rule_table! {
///     /// The writes-counting transform's rules.
///     pub mod writes: WritesRule = "writes";
/// }
///
/// fn neg_writes(_: &[Arg<Tensor>], outs: &[Tensor]) -> usize {
///     outs[0].shape().iter().product()
/// }
/// batchrules::rule!(writes, batchrules::ops, neg => neg_writes);
/// # }
/// # fn main() -> batchrules::Result<()> {
/// let neg = batchrules::registry::registry()?.find("batchrules::ops", "neg").unwrap();
/// let add = batchrules::registry::registry()?.find("batchrules::ops", "add").unwrap();
/// assert!(demo::writes::TABLE.get(neg)?.is_some());
/// assert!(demo::writes::TABLE.get(add)?.is_none());
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! rule_table {
    ($(#[$attr:meta])* $vis:vis mod $module:ident : $rule:ty = $transform:literal;) => {
        $crate::rule_table! {
            $(#[$attr])* $vis mod $module: $rule = $transform,
            rule = ::core::concat!($transform, " rule"), refusing = None;
        }
    };
    ($(#[$attr:meta])* $vis:vis mod $module:ident : $rule:ty = $transform:literal,
        rule = $name:expr, refusing = $refusal:expr;) => {
        $(#[$attr])*
        $vis mod $module {
            #[allow(unused_imports)]
            use super::*;

            /// One rule of this table, as `batchrules::rule!` submits it.
            #[doc(hidden)]
            pub struct Registration(pub $crate::registry::RuleRegistration<$rule>);

            $crate::__private::inventory::collect!(Registration);

            /// The table: the rule registered for each op.
            pub static TABLE: $crate::registry::RuleTable<$rule> =
                {
                    let table = $crate::registry::RuleTable::new($transform, $name, || {
                        $crate::__private::inventory::iter::<Registration>
                            .into_iter()
                            .map(|r| &r.0)
                            .collect()
                    });
                    match $refusal {
                        ::core::option::Option::Some(refusal) => table.refusing(refusal),
                        ::core::option::Option::None => table,
                    }
                };
        }
    };
}

/// Registers `function` as the rule of op `op` of the op table at module
/// `table` in the rule table at module `rules` (declared with
/// [`rule_table!`](crate::rule_table)).
///
/// The op is named through the table's generated index, so a misspelt op
/// does not compile, and a rule for a composite op is a compile error: the
/// dispatcher decomposes a composite before a transform's interpreter sees
/// it, so the rule would never run. See [`rule_table!`](crate::rule_table)
/// for an example.
#[macro_export]
macro_rules! rule {
    ($($rules:ident)::+, $($table:ident)::+, $op:ident => $function:path) => {
        const _: () = if $crate::__private::is_composite(
            &$($table)::+::__SCHEMA[$($table)::+::__index::$op],
        ) {
            ::core::panic!(::core::concat!(
                "`", ::core::stringify!($op), "` is a composite op: the dispatcher runs its ",
                "decomposition before a transform sees the call, so a rule for it would never ",
                "run; register `", ::core::stringify!($function), "` for the primitives `",
                ::core::stringify!($op), "` decomposes into instead"
            ));
        };
        $crate::__private::inventory::submit! {
            $($rules)::+::Registration($crate::registry::RuleRegistration {
                table: &$($table)::+::__TABLE,
                index: $($table)::+::__index::$op,
                rule: $function,
                location: $crate::registry::Location {
                    file: ::core::file!(),
                    line: ::core::line!(),
                    function: ::core::stringify!($function),
                },
            })
        }
    };
}
