//! The registry audit and the rule tables' audits: the project's own
//! registrations are valid, and every kind of problem is reported, naming the
//! op and every source location involved.

use batchrules::coverage::{
    jvp_status, missing_jvps, missing_vjps, vjp_status, vmap_strategy, JvpStatus, VjpStatus,
    VmapStrategy,
};
use batchrules::registry::{
    DecomposeVmap, Location, Problem, ProblemKind, RegisteredFn, Registration, Registry,
    RuleRegistration, RuleTable,
};
use batchrules::rules::{Arg, BDim, Outs, TensorMeta};
use batchrules::schema::{OpKind, OpTable};
use batchrules::transform::{batching_rules, jvps, vjps};
use batchrules::{Result, Tensor};

// Link the downstream crate so its table and registrations are part of this program.
use downstream_ops as _;

#[test]
fn project_registry_is_valid() {
    let reg = batchrules::registry::registry().expect("the project's registry must be valid");
    let triu = reg
        .find("batchrules::ops", "triu")
        .expect("triu is declared");
    assert_eq!(triu.schema.kind, OpKind::Primitive);
    assert!(triu.kernel.is_some() && triu.meta.is_some());
    batchrules::coverage::audit().expect("the project's rule tables must be valid");
    assert!(batching_rules::TABLE.get(triu).unwrap().is_some());
    let softmax = reg
        .find("batchrules::ops", "softmax")
        .expect("softmax is declared");
    assert_eq!(vmap_strategy(softmax).unwrap(), VmapStrategy::Decomposition);
    assert_eq!(
        vjp_status(softmax).unwrap(),
        VjpStatus::ThroughDecomposition
    );
    let argmax = reg.find("batchrules::ops", "argmax").unwrap();
    assert!(!argmax.schema.differentiable);
    assert_eq!(vjp_status(argmax).unwrap(), VjpStatus::NotDifferentiable);
    // Missing vjps are a report, not an audit failure: only differentiable
    // primitives that take tensors are listed.
    for entry in missing_vjps().unwrap() {
        assert_eq!(entry.schema.kind, OpKind::Primitive, "{}", entry.name());
        assert!(entry.schema.differentiable, "{}", entry.name());
        assert!(
            vjps::TABLE.get(entry).unwrap().is_none(),
            "{}",
            entry.name()
        );
    }
    let cumsum = reg
        .find("downstream_ops::ops", "cumsum")
        .expect("the downstream table is registered");
    assert_eq!(vmap_strategy(cumsum).unwrap(), VmapStrategy::Fallback);
    // Op ids index the registry.
    for (id, entry) in reg.ops().iter().enumerate() {
        assert!(std::ptr::eq(reg.op(id).unwrap(), entry));
    }
}

// A private copy of the built-in schemas that is not submitted to `inventory`,
// so hand-made registration sets can be audited in isolation.
static TABLE: OpTable = OpTable::new("audit::ops", batchrules::ops::__SCHEMA);
static SAME_PATH: OpTable = OpTable::new("audit::ops", batchrules::ops::__SCHEMA);

fn kernel(_: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    Ok(Outs::new())
}
fn meta(_: &[Arg<TensorMeta>]) -> Result<Outs<TensorMeta>> {
    Ok(Outs::new())
}
fn rule(_: &[Arg<Tensor>], _: &[BDim]) -> Result<Outs<(Tensor, Option<usize>)>> {
    Ok(Outs::new())
}
fn vjp(_: &[Arg<Tensor>], _: &[Tensor], _: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    Ok(Vec::new())
}

fn jvp(_: &[Arg<Tensor>], _: &[Tensor], _: &[Vec<Option<Tensor>>]) -> Result<Vec<Option<Tensor>>> {
    Ok(Vec::new())
}

fn at(function: &'static str, line: u32) -> Location {
    Location {
        file: "src/audit.rs",
        line,
        function,
    }
}

fn reg(op: &'static str, func: RegisteredFn, location: Location) -> Registration {
    Registration {
        table: &TABLE,
        op,
        func,
        location,
    }
}

/// A complete, valid registration set for `TABLE`.
fn complete() -> Vec<Registration> {
    let mut regs = Vec::new();
    for (i, op) in TABLE.ops.iter().enumerate() {
        let line = 10 * i as u32;
        regs.push(reg(op.name, RegisteredFn::Meta(meta), at("m", line)));
        match op.kind {
            OpKind::Primitive => regs.push(reg(
                op.name,
                RegisteredFn::Kernel(kernel),
                at("k", line + 1),
            )),
            OpKind::Composite => regs.push(reg(
                op.name,
                RegisteredFn::Decomposition(kernel, DecomposeVmap::Decompose),
                at("d", line + 1),
            )),
        }
    }
    regs
}

fn audit(regs: &[Registration]) -> Vec<Problem> {
    let refs: Vec<&Registration> = regs.iter().collect();
    match Registry::build(&[&TABLE], &refs) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    }
}

/// The registry of the complete set.
fn complete_registry() -> Registry {
    let regs = complete();
    let refs: Vec<&Registration> = regs.iter().collect();
    Registry::build(&[&TABLE], &refs).expect("the complete set is valid")
}

/// A rule for op `op` of `TABLE` (an unknown name gets an index past the
/// table's end, as a hand-written registration could).
fn rule_reg<F>(op: &str, rule: F, location: Location) -> RuleRegistration<F> {
    RuleRegistration {
        table: &TABLE,
        index: TABLE.find(op).map_or(usize::MAX, |(i, _)| i),
        rule,
        location,
    }
}

/// A batching rule for every primitive of `TABLE`.
fn complete_rules() -> Vec<RuleRegistration<batchrules::transform::BatchingRuleFn>> {
    TABLE
        .ops
        .iter()
        .enumerate()
        .filter(|(_, op)| op.kind == OpKind::Primitive)
        .map(|(i, op)| rule_reg(op.name, rule as _, at("r", 10 * i as u32 + 2)))
        .collect()
}

/// The problems `table`'s audit finds in `regs`, against the complete set's
/// registry.
fn audit_rules<F: Copy>(table: &RuleTable<F>, regs: &[RuleRegistration<F>]) -> Vec<Problem> {
    let refs: Vec<&RuleRegistration<F>> = regs.iter().collect();
    match table.audit(&complete_registry(), &refs) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    }
}

#[test]
fn complete_set_is_valid() {
    assert!(audit(&complete()).is_empty());
    assert!(audit_rules(&batching_rules::TABLE, &complete_rules()).is_empty());
}

#[test]
fn missing_kernel_is_reported() {
    let regs: Vec<_> = complete()
        .into_iter()
        .filter(|r| !(r.op == "triu" && matches!(r.func, RegisteredFn::Kernel(_))))
        .collect();
    let problems = audit(&regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::MissingKernel);
    assert_eq!(problems[0].op, "triu");
    assert!(problems[0].message.contains("#[kernel(op = \"triu\")]"));
}

#[test]
fn missing_meta_is_reported() {
    let regs: Vec<_> = complete()
        .into_iter()
        .filter(|r| !(r.op == "add" && matches!(r.func, RegisteredFn::Meta(_))))
        .collect();
    let problems = audit(&regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::MissingMeta);
    assert_eq!(problems[0].op, "add");
}

#[test]
fn missing_decomposition_is_reported() {
    let regs: Vec<_> = complete()
        .into_iter()
        .filter(|r| !(r.op == "softmax" && matches!(r.func, RegisteredFn::Decomposition(..))))
        .collect();
    let problems = audit(&regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::MissingDecomposition);
    assert_eq!(problems[0].op, "softmax");
}

#[test]
fn duplicate_rule_names_both_locations() {
    let mut regs = complete_rules();
    regs.push(rule_reg("triu", rule as _, at("second_rule", 999)));
    let problems = audit_rules(&batching_rules::TABLE, &regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert_eq!(p.kind, ProblemKind::Duplicate);
    assert_eq!(p.op, "triu");
    assert_eq!(p.locations.len(), 2);
    assert!(p.message.contains("`r` at src/audit.rs:"), "{}", p.message);
    assert!(
        p.message.contains("`second_rule` at src/audit.rs:999")
            && p.message.contains("2 #[batching_rule] registrations")
            && p.message.contains("delete all but one"),
        "{}",
        p.message
    );
}

#[test]
fn rule_for_an_op_the_registry_does_not_hold_is_reported() {
    static OTHER: OpTable = OpTable::new("audit::other", batchrules::ops::__SCHEMA);
    let mut regs = complete_rules();
    regs.push(RuleRegistration {
        table: &OTHER,
        index: 0,
        rule: rule as _,
        location: at("elsewhere", 7),
    });
    regs.push(rule_reg("not_an_op", rule as _, at("stray", 42)));
    let problems = audit_rules(&batching_rules::TABLE, &regs);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|p| p.kind == ProblemKind::UnknownOp));
    assert!(
        problems[1].message.contains("`stray` at src/audit.rs:42"),
        "{}",
        problems[1].message
    );
}

#[test]
fn duplicate_meta_and_kernel_are_each_reported() {
    let mut regs = complete();
    regs.push(reg("exp", RegisteredFn::Meta(meta), at("meta2", 500)));
    regs.push(reg("exp", RegisteredFn::Kernel(kernel), at("kernel2", 501)));
    let problems = audit(&regs);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems
        .iter()
        .all(|p| p.kind == ProblemKind::Duplicate && p.op == "exp"));
}

#[test]
fn unknown_op_is_reported_with_location() {
    let mut regs = complete();
    regs.push(reg(
        "not_an_op",
        RegisteredFn::Kernel(kernel),
        at("stray", 42),
    ));
    let problems = audit(&regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::UnknownOp);
    assert_eq!(problems[0].locations, vec![at("stray", 42)]);
    assert!(problems[0].message.contains("`stray` at src/audit.rs:42"));
}

#[test]
fn registration_in_an_unlisted_table_is_unknown() {
    static OTHER: OpTable = OpTable::new("audit::other", batchrules::ops::__SCHEMA);
    let mut regs = complete();
    regs.push(Registration {
        table: &OTHER,
        op: "triu",
        func: RegisteredFn::Kernel(kernel),
        location: at("elsewhere", 7),
    });
    let problems = audit(&regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::UnknownOp);
}

#[test]
fn wrong_kind_is_reported() {
    let mut regs = complete();
    regs.push(reg(
        "triu",
        RegisteredFn::Decomposition(kernel, DecomposeVmap::Decompose),
        at("decomp", 4),
    ));
    let problems = audit(&regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::WrongKind);
    assert_eq!(problems[0].op, "triu");

    let mut rules = complete_rules();
    rules.push(rule_reg("softmax", rule as _, at("trap", 3)));
    let problems = audit_rules(&batching_rules::TABLE, &rules);
    assert_eq!(problems.len(), 1, "{problems:?}");
    let softmax = &problems[0];
    assert_eq!(softmax.kind, ProblemKind::WrongKind);
    assert!(
        softmax
            .message
            .contains("registers a #[batching_rule] for `softmax`, a composite op"),
        "{}",
        softmax.message
    );
}

#[test]
fn two_tables_at_one_path_are_reported() {
    let regs: Vec<&Registration> = Vec::new();
    let problems = Registry::build(&[&TABLE, &SAME_PATH], &regs).unwrap_err();
    assert!(problems
        .iter()
        .any(|p| p.kind == ProblemKind::DuplicateTable && p.op == "audit::ops"));
}

#[test]
fn every_problem_is_collected() {
    let mut regs: Vec<_> = complete()
        .into_iter()
        .filter(|r| !(r.op == "neg" && matches!(r.func, RegisteredFn::Kernel(_))))
        .collect();
    regs.push(reg("nope", RegisteredFn::Meta(meta), at("x", 1)));
    regs.push(reg("add", RegisteredFn::Meta(meta), at("y", 2)));
    let kinds: Vec<ProblemKind> = audit(&regs).iter().map(|p| p.kind).collect();
    assert!(kinds.contains(&ProblemKind::MissingKernel));
    assert!(kinds.contains(&ProblemKind::UnknownOp));
    assert!(kinds.contains(&ProblemKind::Duplicate));
}

/// Runs `$check` once for each derivative table (grad's vjps, jvp's jvps),
/// with `$table` the table, `$rule` a rule of its type and `$name` its
/// attribute's name.
macro_rules! for_each_derivative_table {
    (|$table:ident, $rule:ident, $name:ident| $check:block) => {{
        {
            let ($table, $rule, $name) =
                (&vjps::TABLE, vjp as batchrules::transform::VjpRuleFn, "vjp");
            $check
        }
        {
            let ($table, $rule, $name) =
                (&jvps::TABLE, jvp as batchrules::transform::JvpRuleFn, "jvp");
            $check
        }
    }};
}

#[test]
fn derivative_rule_on_a_composite_is_wrong_kind() {
    for_each_derivative_table!(|table, rule, name| {
        let problems = audit_rules(table, &[rule_reg("softmax", rule, at("softmax_rule", 7))]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        assert_eq!(p.kind, ProblemKind::WrongKind);
        assert_eq!(p.op, "softmax");
        assert_eq!(p.locations, vec![at("softmax_rule", 7)]);
        assert!(
            p.message
                .contains(&format!("registers a #[{name}] for `softmax`"))
                && p.message.contains("through its decomposition"),
            "{}",
            p.message
        );
    });
}

#[test]
fn derivative_rule_on_a_non_differentiable_op_is_reported() {
    for_each_derivative_table!(|table, rule, name| {
        let regs = [
            rule_reg("argmax", rule, at("argmax_rule", 8)),
            rule_reg("exp", rule, at("exp_rule", 9)),
        ];
        let problems = audit_rules(table, &regs);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        assert_eq!(p.kind, ProblemKind::NotDifferentiable);
        assert_eq!(p.op, "argmax");
        assert_eq!(p.locations, vec![at("argmax_rule", 8)]);
        assert!(
            p.message.contains(&format!(
                "`argmax_rule` at src/audit.rs:8 registers a #[{name}] for `argmax`"
            )) && p.message.contains("differentiable = false")
                && p.message.contains(&format!("remove the #[{name}]")),
            "{}",
            p.message
        );
    });
}

#[test]
fn duplicate_derivative_rule_names_both_locations() {
    for_each_derivative_table!(|table, rule, name| {
        let regs = [
            rule_reg("exp", rule, at("exp_rule", 20)),
            rule_reg("exp", rule, at("exp_rule_again", 21)),
        ];
        let problems = audit_rules(table, &regs);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        assert_eq!(p.kind, ProblemKind::Duplicate);
        assert_eq!(p.op, "exp");
        assert_eq!(
            p.locations,
            vec![at("exp_rule", 20), at("exp_rule_again", 21)]
        );
        assert!(
            p.message.contains(&format!("2 #[{name}] registrations"))
                && p.message.contains("delete all but one"),
            "{}",
            p.message
        );
    });
}

#[test]
fn missing_vjps_lists_differentiable_primitives_without_one() {
    let registry = complete_registry();
    let regs = [rule_reg("exp", vjp as _, at("exp_vjp", 30))];
    let refs: Vec<_> = regs.iter().collect();
    let rules = vjps::TABLE
        .audit(&registry, &refs)
        .expect("vjps are optional");
    let status = |op: &str| {
        let e = registry.find("audit::ops", op).unwrap();
        VjpStatus::of(e, rules[e.id].is_some())
    };
    let missing: Vec<&str> = registry
        .ops()
        .iter()
        .filter(|e| VjpStatus::of(e, rules[e.id].is_some()) == VjpStatus::Missing)
        .map(|e| e.name())
        .collect();
    assert!(
        missing.contains(&"sin") && missing.contains(&"matmul"),
        "{missing:?}"
    );
    for not_listed in [
        "exp", "argmax", "eq", "zeros", "arange", "softmax", "flatten",
    ] {
        assert!(
            !missing.contains(&not_listed),
            "{not_listed} in {missing:?}"
        );
    }
    let exp = registry.find("audit::ops", "exp").unwrap();
    assert_eq!(status("exp"), VjpStatus::Vjp);
    assert_eq!(rules[exp.id].map(|(_, l)| l), Some(at("exp_vjp", 30)));
    assert_eq!(status("sin"), VjpStatus::Missing);
    assert_eq!(status("sin").to_string(), "-");
    assert_eq!(status("zeros"), VjpStatus::NotDifferentiable);
}

/// The cells of a row of the coverage report: columns are separated by two
/// or more spaces, and no cell holds two spaces in a row.
fn cells(line: &str) -> Vec<&str> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn coverage_report_has_vjp_and_jvp_columns_and_lists_what_is_missing() {
    let report = batchrules::coverage::report().unwrap();
    let header = cells(report.lines().next().unwrap());
    assert_eq!(header[6..], ["vjp", "jvp"], "{header:?}");
    let row = |op: &str| {
        let line = report
            .lines()
            .find(|l| l.starts_with(&format!("batchrules::ops::{op} ")))
            .unwrap_or_else(|| panic!("no row for {op}"));
        let cells = cells(line);
        assert_eq!(cells.len(), 8, "{line}");
        (cells[6].to_string(), cells[7].to_string())
    };
    let not_diff = "not differentiable".to_string();
    let through = "through decomposition".to_string();
    assert_eq!(row("argmax"), (not_diff.clone(), not_diff.clone()));
    assert_eq!(row("zeros"), (not_diff.clone(), not_diff));
    assert_eq!(row("softmax"), (through.clone(), through));
    assert_eq!(row("sum").1, "linear");
    assert_eq!(row("cat").1, "linear");

    let registry = batchrules::registry::registry().unwrap();
    for entry in registry.ops() {
        let name = format!("{}::{} ", entry.table.path, entry.name());
        let line = report.lines().find(|l| l.starts_with(&name)).unwrap();
        let cells = cells(line);
        assert_eq!(cells[6], vjp_status(entry).unwrap().to_string(), "{line}");
        assert_eq!(cells[7], jvp_status(entry).unwrap().to_string(), "{line}");
    }
    // The fallback count counts what vmap runs, random ops included (their
    // row shows the randomness policy instead of "fallback").
    let fallback = registry
        .ops()
        .iter()
        .filter(|e| vmap_strategy(e).unwrap() == VmapStrategy::Fallback)
        .count();
    let summary = format!(
        "{} ops; {fallback} use the fallback loop under vmap",
        registry.ops().len()
    );
    assert!(report.lines().any(|l| l == summary), "{summary}\n{report}");
    let downstream = report
        .lines()
        .find(|l| l.starts_with("downstream_ops::ops::cumsum "))
        .unwrap();
    assert_eq!(cells(downstream)[7], "linear");

    // The summaries, and the lists of what is missing.
    for (missing, what, fails) in [
        (missing_vjps().unwrap(), "vjp", "grad"),
        (missing_jvps().unwrap(), "jvp", "jvp"),
    ] {
        let prefix = format!("no {what} ({fails} fails on these): ");
        if missing.is_empty() {
            assert!(!report.lines().any(|l| l.starts_with(&prefix)), "{report}");
            continue;
        }
        let listed = report
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .expect("the report lists the ops without one");
        let listed: Vec<&str> = listed.split(", ").collect();
        assert_eq!(listed.len(), missing.len());
        for entry in &missing {
            let name = format!("{}::{}", entry.table.path, entry.name());
            assert!(listed.contains(&name.as_str()), "{name} not in {listed:?}");
        }
    }
    let count = |status: JvpStatus| {
        registry
            .ops()
            .iter()
            .filter(|e| jvp_status(e).unwrap() == status)
            .count()
    };
    let (jvps, linear, missing) = (
        count(JvpStatus::Jvp),
        count(JvpStatus::Linear),
        count(JvpStatus::Missing),
    );
    assert!(
        linear >= 25,
        "the 24 built-in linear ops and cumsum: {linear}"
    );
    assert!(jvps >= 1, "downstream scale has a jvp");
    let summary = format!(
        "{} differentiable primitives: {jvps} with a jvp, {linear} linear, {missing} without",
        jvps + linear + missing
    );
    assert!(report.lines().any(|l| l == summary), "{summary}\n{report}");
}

#[test]
fn jvp_on_a_linear_op_is_reported() {
    let problems = audit_rules(
        &jvps::TABLE,
        &[rule_reg("sum", jvp as _, at("sum_jvp", 11))],
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert_eq!(p.kind, ProblemKind::Linear);
    assert_eq!(p.op, "sum");
    assert_eq!(p.locations, vec![at("sum_jvp", 11)]);
    assert!(
        p.message.contains("`sum_jvp` at src/audit.rs:11")
            && p.message.contains("linear = true")
            && p.message.contains("the op itself applied to the tangents")
            && p.message.contains("remove the #[jvp]"),
        "{}",
        p.message
    );
    // A vjp on a linear op is fine: the linear flag derives only the jvp.
    let regs = [rule_reg("sum", vjp as _, at("sum_vjp", 12))];
    assert!(audit_rules(&vjps::TABLE, &regs).is_empty());
}

#[test]
fn missing_jvps_leave_out_linear_and_non_differentiable_ops() {
    let registry = complete_registry();
    let regs = [rule_reg("exp", jvp as _, at("exp_jvp", 30))];
    let refs: Vec<_> = regs.iter().collect();
    let rules = jvps::TABLE
        .audit(&registry, &refs)
        .expect("jvps are optional");
    let status = |op: &str| {
        let e = registry.find("audit::ops", op).unwrap();
        JvpStatus::of(e, rules[e.id].is_some())
    };
    let missing: Vec<&str> = registry
        .ops()
        .iter()
        .filter(|e| JvpStatus::of(e, rules[e.id].is_some()) == JvpStatus::Missing)
        .map(|e| e.name())
        .collect();
    assert!(
        missing.contains(&"sin") && missing.contains(&"mul"),
        "{missing:?}"
    );
    for not_listed in [
        "exp", "add", "sum", "cat", "argmax", "zeros", "softmax", "flatten",
    ] {
        assert!(
            !missing.contains(&not_listed),
            "{not_listed} in {missing:?}"
        );
    }
    assert_eq!(status("exp"), JvpStatus::Jvp);
    let exp = registry.find("audit::ops", "exp").unwrap();
    assert_eq!(rules[exp.id].map(|(_, l)| l), Some(at("exp_jvp", 30)));
    assert_eq!(status("sum"), JvpStatus::Linear);
    assert_eq!(status("sin"), JvpStatus::Missing);
    assert_eq!(status("argmax"), JvpStatus::NotDifferentiable);
    assert_eq!(status("zeros"), JvpStatus::NotDifferentiable);
    assert_eq!(status("softmax"), JvpStatus::ThroughDecomposition);
    let shown: Vec<String> = [
        JvpStatus::Jvp,
        JvpStatus::Linear,
        JvpStatus::Missing,
        JvpStatus::NotDifferentiable,
        JvpStatus::ThroughDecomposition,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        shown,
        [
            "jvp",
            "linear",
            "-",
            "not differentiable",
            "through decomposition"
        ]
    );
}

#[test]
fn the_table_marks_linear_ops() {
    let ops = batchrules::ops::__SCHEMA;
    let linear = |name: &str| ops.iter().find(|o| o.name == name).unwrap().linear;
    for op in [
        "neg",
        "add",
        "sub",
        "to_dtype",
        "where",
        "sum",
        "mean",
        "sum_to_size",
        "reshape",
        "expand",
        "permute",
        "transpose",
        "unsqueeze",
        "squeeze",
        "narrow",
        "pad_dim",
        "cat",
        "stack",
        "index_select",
        "gather",
        "index_add",
        "scatter_add",
        "triu",
        "tril",
    ] {
        assert!(linear(op), "{op} is linear");
    }
    for op in ["mul", "exp", "matmul", "argmax", "softmax"] {
        assert!(!linear(op), "{op} is not linear");
    }
}
