//! The registry audit: the project's own registrations are valid, and every kind
//! of problem is reported, naming the op and every source location involved.

use batchrules::registry::{
    DecomposeVmap, JvpStatus, Location, ProblemKind, RegisteredFn, Registration, Registry,
    VjpStatus, VmapStrategy,
};
use batchrules::rules::{Arg, BDim, Outs, TensorMeta};
use batchrules::schema::{OpKind, OpTable};
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
    assert!(triu.kernel.is_some() && triu.meta.is_some() && triu.rule.is_some());
    let softmax = reg
        .find("batchrules::ops", "softmax")
        .expect("softmax is declared");
    assert_eq!(softmax.vmap_strategy(), VmapStrategy::Decomposition);
    assert_eq!(softmax.vjp_status(), VjpStatus::ThroughDecomposition);
    let argmax = reg.find("batchrules::ops", "argmax").unwrap();
    assert!(!argmax.schema.differentiable);
    assert_eq!(argmax.vjp_status(), VjpStatus::NotDifferentiable);
    // Missing vjps are a report, not an audit failure: only differentiable
    // primitives that take tensors are listed.
    for entry in reg.missing_vjps() {
        assert_eq!(entry.schema.kind, OpKind::Primitive, "{}", entry.name());
        assert!(entry.schema.differentiable, "{}", entry.name());
        assert!(entry.vjp.is_none(), "{}", entry.name());
    }
    let cumsum = reg
        .find("downstream_ops::ops", "cumsum")
        .expect("the downstream table is registered");
    assert_eq!(cumsum.vmap_strategy(), VmapStrategy::Fallback);
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
            OpKind::Primitive => {
                regs.push(reg(
                    op.name,
                    RegisteredFn::Kernel(kernel),
                    at("k", line + 1),
                ));
                regs.push(reg(
                    op.name,
                    RegisteredFn::BatchingRule(rule),
                    at("r", line + 2),
                ));
            }
            OpKind::Composite => regs.push(reg(
                op.name,
                RegisteredFn::Decomposition(kernel, DecomposeVmap::Decompose),
                at("d", line + 1),
            )),
        }
    }
    regs
}

fn audit(regs: &[Registration]) -> Vec<batchrules::registry::Problem> {
    let refs: Vec<&Registration> = regs.iter().collect();
    match Registry::build(&[&TABLE], &refs) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    }
}

#[test]
fn complete_set_is_valid() {
    assert!(audit(&complete()).is_empty());
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
    let mut regs = complete();
    regs.push(reg(
        "triu",
        RegisteredFn::BatchingRule(rule),
        at("second_rule", 999),
    ));
    let problems = audit(&regs);
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert_eq!(p.kind, ProblemKind::Duplicate);
    assert_eq!(p.op, "triu");
    assert_eq!(p.locations.len(), 2);
    assert!(p.message.contains("`r` at src/audit.rs:"), "{}", p.message);
    assert!(
        p.message.contains("`second_rule` at src/audit.rs:999"),
        "{}",
        p.message
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
        "softmax",
        RegisteredFn::BatchingRule(rule),
        at("trap", 3),
    ));
    regs.push(reg(
        "triu",
        RegisteredFn::Decomposition(kernel, DecomposeVmap::Decompose),
        at("decomp", 4),
    ));
    let problems = audit(&regs);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|p| p.kind == ProblemKind::WrongKind));
    let softmax = problems.iter().find(|p| p.op == "softmax").unwrap();
    assert!(softmax.message.contains("composite"), "{}", softmax.message);
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
    regs.push(reg("add", RegisteredFn::BatchingRule(rule), at("y", 2)));
    let kinds: Vec<ProblemKind> = audit(&regs).iter().map(|p| p.kind).collect();
    assert!(kinds.contains(&ProblemKind::MissingKernel));
    assert!(kinds.contains(&ProblemKind::UnknownOp));
    assert!(kinds.contains(&ProblemKind::Duplicate));
}

/// Both derivative rules, each with its attribute's name.
fn derivative_rules() -> [(RegisteredFn, &'static str); 2] {
    [
        (RegisteredFn::Vjp(vjp), "vjp"),
        (RegisteredFn::Jvp(jvp), "jvp"),
    ]
}

#[test]
fn derivative_rule_on_a_composite_is_wrong_kind() {
    for (rule, name) in derivative_rules() {
        let mut regs = complete();
        regs.push(reg("softmax", rule, at("softmax_rule", 7)));
        let problems = audit(&regs);
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
    }
}

#[test]
fn derivative_rule_on_a_non_differentiable_op_is_reported() {
    for (rule, name) in derivative_rules() {
        let mut regs = complete();
        regs.push(reg("argmax", rule, at("argmax_rule", 8)));
        regs.push(reg("exp", rule, at("exp_rule", 9)));
        let problems = audit(&regs);
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
    }
}

#[test]
fn duplicate_derivative_rule_names_both_locations() {
    for (rule, name) in derivative_rules() {
        let mut regs = complete();
        regs.push(reg("exp", rule, at("exp_rule", 20)));
        regs.push(reg("exp", rule, at("exp_rule_again", 21)));
        let problems = audit(&regs);
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
    }
    // A vjp and a jvp of one op are two roles, not a duplicate.
    let mut regs = complete();
    regs.extend(derivative_rules().map(|(rule, _)| reg("exp", rule, at("exp_rule", 22))));
    assert!(audit(&regs).is_empty());
}

#[test]
fn missing_vjps_lists_differentiable_primitives_without_one() {
    let mut regs = complete();
    regs.push(reg("exp", RegisteredFn::Vjp(vjp), at("exp_vjp", 30)));
    let refs: Vec<&Registration> = regs.iter().collect();
    let registry = Registry::build(&[&TABLE], &refs).expect("vjps are optional");
    let missing: Vec<&str> = registry.missing_vjps().iter().map(|e| e.name()).collect();
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
    assert_eq!(exp.vjp_status(), VjpStatus::Vjp);
    assert_eq!(exp.vjp_location, Some(at("exp_vjp", 30)));
    let sin = registry.find("audit::ops", "sin").unwrap();
    assert_eq!(sin.vjp_status(), VjpStatus::Missing);
    assert_eq!(sin.vjp_status().to_string(), "-");
    let zeros = registry.find("audit::ops", "zeros").unwrap();
    assert_eq!(zeros.vjp_status(), VjpStatus::NotDifferentiable);
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
        assert_eq!(cells[6], entry.vjp_status().to_string(), "{line}");
        assert_eq!(cells[7], entry.jvp_status().to_string(), "{line}");
    }
    let downstream = report
        .lines()
        .find(|l| l.starts_with("downstream_ops::ops::cumsum "))
        .unwrap();
    assert_eq!(cells(downstream)[7], "linear");

    // The summaries, and the lists of what is missing.
    for (missing, what, fails) in [
        (registry.missing_vjps(), "vjp", "grad"),
        (registry.missing_jvps(), "jvp", "jvp"),
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
            .filter(|e| e.jvp_status() == status)
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
    let mut regs = complete();
    regs.push(reg("sum", RegisteredFn::Jvp(jvp), at("sum_jvp", 11)));
    let problems = audit(&regs);
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
    let mut regs = complete();
    regs.push(reg("sum", RegisteredFn::Vjp(vjp), at("sum_vjp", 12)));
    assert!(audit(&regs).is_empty());
}

#[test]
fn missing_jvps_leave_out_linear_and_non_differentiable_ops() {
    let mut regs = complete();
    regs.push(reg("exp", RegisteredFn::Jvp(jvp), at("exp_jvp", 30)));
    let refs: Vec<&Registration> = regs.iter().collect();
    let registry = Registry::build(&[&TABLE], &refs).expect("jvps are optional");
    let missing: Vec<&str> = registry.missing_jvps().iter().map(|e| e.name()).collect();
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
    let status = |op: &str| registry.find("audit::ops", op).unwrap().jvp_status();
    assert_eq!(status("exp"), JvpStatus::Jvp);
    assert_eq!(
        registry.find("audit::ops", "exp").unwrap().jvp_location,
        Some(at("exp_jvp", 30))
    );
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
