//! The coverage report: per op, what is registered, what vmap will use, and
//! how grad differentiates it.
//!
//! In the `api` layer (`runtime/src/api/`). It may use the `core`, `table`,
//! `dispatch`, `transforms` and `library` layers; in its own layer, `io` and
//! `testing`. `tests/suite/layers.rs` enforces it.

use std::fmt::Write;

use crate::registry::{registry, OpEntry};
use crate::schema::OpKind;
use crate::Result;

pub use crate::forward::rules::{jvp_status, JvpStatus};
pub use crate::grad::rules::{vjp_status, VjpStatus};
pub use crate::vmap::rules::{vmap_strategy, VmapStrategy};

/// Audits everything the program registered: the registry (kernels, metas,
/// decompositions) and the rule tables of the built-in transforms (vmap's
/// batching rules, grad's vjps, jvp's jvps), each of which is otherwise
/// audited the first time its transform reads it. `Err` lists every problem
/// of the first one that fails.
///
/// ```
/// batchrules::coverage::audit()?;
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn audit() -> Result<()> {
    registry()?;
    crate::vmap::rules::batching_rules::TABLE.check()?;
    crate::grad::rules::vjps::TABLE.check()?;
    crate::forward::rules::jvps::TABLE.check()
}

/// The differentiable primitives that have no `#[vjp]`: grad fails on a
/// call to one of them. A report, not an audit failure (a program that
/// never differentiates through an op does not need its vjp).
///
/// Ops without tensor arguments are left out: nothing flows back to them.
///
/// ```
/// for op in batchrules::coverage::missing_vjps()? {
///     println!("{} has no #[vjp]", op.name());
/// }
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn missing_vjps() -> Result<Vec<&'static OpEntry>> {
    ops_where(|e| Ok(vjp_status(e)? == VjpStatus::Missing))
}

/// The differentiable primitives that are neither marked `linear` nor have a
/// `#[jvp]`: jvp (forward mode) fails on a call to one of them. A report, not
/// an audit failure, as [`missing_vjps`].
///
/// ```
/// for op in batchrules::coverage::missing_jvps()? {
///     println!("{} has no #[jvp]", op.name());
/// }
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn missing_jvps() -> Result<Vec<&'static OpEntry>> {
    ops_where(|e| Ok(jvp_status(e)? == JvpStatus::Missing))
}

/// One op and what vmap, grad and jvp do with it.
type Statuses<'a> = (&'a OpEntry, VmapStrategy, VjpStatus, JvpStatus);

/// The ops of the program's registry for which `pick` holds.
fn ops_where(pick: impl Fn(&OpEntry) -> Result<bool>) -> Result<Vec<&'static OpEntry>> {
    let mut picked = Vec::new();
    for e in registry()?.ops() {
        if pick(e)? {
            picked.push(e);
        }
    }
    Ok(picked)
}

/// A table with one row per op of every linked op table: kind, kernel, meta,
/// batching rule or decomposition, what vmap will use, the vjp (`vjp`, `-`
/// for a differentiable primitive without one, `not differentiable`, or
/// `through decomposition` for a composite) and the jvp (the same, and
/// `linear` for an op whose jvp is the op applied to the tangents). Below
/// it, the differentiable primitives that lack a vjp (see [`missing_vjps`]),
/// and those that lack a jvp (see [`missing_jvps`]).
///
/// ```
/// let report = batchrules::coverage::report()?;
/// assert!(report.lines().any(|l| l.starts_with("batchrules::ops::triu ")));
/// let argmax = report.lines().find(|l| l.starts_with("batchrules::ops::argmax ")).unwrap();
/// let cells: Vec<&str> = argmax.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
/// assert_eq!(cells[6..], ["not differentiable", "not differentiable"]); // vjp, jvp
/// let sum = report.lines().find(|l| l.starts_with("batchrules::ops::sum ")).unwrap();
/// assert!(sum.ends_with("  linear"));
/// let rand = report.lines().find(|l| l.starts_with("batchrules::ops::rand ")).unwrap();
/// assert!(rand.contains("randomness policy, then decomposition"));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn report() -> Result<String> {
    let reg = registry()?;
    // Each op's statuses, read once: the rows show them, the summaries count them.
    let mut statuses: Vec<Statuses> = Vec::new();
    let rows: Vec<[String; 8]> = reg
        .ops()
        .iter()
        .map(|e| {
            let has_rule = crate::vmap::rules::batching_rules::TABLE.get(e)?.is_some();
            let (strategy, vjp, jvp) = (
                VmapStrategy::of(e, has_rule),
                vjp_status(e)?,
                jvp_status(e)?,
            );
            statuses.push((e, strategy, vjp, jvp));
            let yes = |b: bool| if b { "yes" } else { "-" }.to_string();
            let impl_col = match e.schema.kind {
                OpKind::Primitive => format!("rule: {}", yes(has_rule)),
                OpKind::Composite => match e.decomposition {
                    Some((_, crate::registry::DecomposeVmap::Fallback)) => {
                        "decomposition (vmap opts out)".to_string()
                    }
                    Some(_) => "decomposition".to_string(),
                    None => "decomposition: -".to_string(),
                },
            };
            // A random op reaches every vmap level, whose randomness policy
            // applies before the op is batched.
            let vmap_col = match (e.schema.random, e.decomposition) {
                (false, _) => strategy.to_string(),
                (true, Some((_, crate::registry::DecomposeVmap::Decompose))) => {
                    "randomness policy, then decomposition".to_string()
                }
                (true, _) => "randomness policy, per-example seeds".to_string(),
            };
            Ok([
                format!("{}::{}", e.table.path, e.name()),
                e.schema.kind.as_str().to_string(),
                yes(e.kernel.is_some()),
                yes(e.meta.is_some()),
                impl_col,
                vmap_col,
                vjp.to_string(),
                jvp.to_string(),
            ])
        })
        .collect::<Result<_>>()?;
    let header = [
        "op",
        "kind",
        "kernel",
        "meta",
        "rule / decomposition",
        "vmap uses",
        "vjp",
        "jvp",
    ];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: [&str; 8]| {
        let mut s = String::new();
        for (cell, w) in cells.iter().zip(widths) {
            let _ = write!(s, "{cell:<w$}  ");
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&mut out, header);
    line(
        &mut out,
        widths.map(|w| "-".repeat(w)).each_ref().map(String::as_str),
    );
    for row in &rows {
        line(&mut out, row.each_ref().map(String::as_str));
    }
    let count = |pick: &dyn Fn(&Statuses) -> bool| statuses.iter().filter(|s| pick(s)).count();
    let missing = |pick: &dyn Fn(&Statuses) -> bool| {
        statuses
            .iter()
            .filter(|s| pick(s))
            .map(|s| s.0)
            .collect::<Vec<_>>()
    };
    let fallback = count(&|s| s.1 == VmapStrategy::Fallback);
    let _ = writeln!(
        out,
        "\n{} ops; {} use the fallback loop under vmap",
        rows.len(),
        fallback
    );
    let with_vjp = count(&|s| s.2 == VjpStatus::Vjp);
    derivative_summary(
        &mut out,
        "vjp",
        "grad",
        &[(with_vjp, "with a vjp")],
        &missing(&|s| s.2 == VjpStatus::Missing),
    );
    let with_jvp = count(&|s| s.3 == JvpStatus::Jvp);
    let linear = count(&|s| s.3 == JvpStatus::Linear);
    derivative_summary(
        &mut out,
        "jvp",
        "jvp",
        &[(with_jvp, "with a jvp"), (linear, "linear")],
        &missing(&|s| s.3 == JvpStatus::Missing),
    );
    Ok(out)
}

/// The summary of one kind of derivative rule: the differentiable primitives,
/// counted by how they are covered (`covered`) and without one (`missing`),
/// then the list of those without one, which `transform` fails on.
fn derivative_summary(
    out: &mut String,
    rule: &str,
    transform: &str,
    covered: &[(usize, &str)],
    missing: &[&OpEntry],
) {
    let total: usize = covered.iter().map(|(n, _)| n).sum::<usize>() + missing.len();
    let parts: Vec<String> = covered
        .iter()
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    let _ = writeln!(
        out,
        "{total} differentiable primitives: {}, {} without",
        parts.join(", "),
        missing.len()
    );
    if !missing.is_empty() {
        let names: Vec<String> = missing
            .iter()
            .map(|e| format!("{}::{}", e.table.path, e.name()))
            .collect();
        let _ = writeln!(
            out,
            "no {rule} ({transform} fails on these): {}",
            names.join(", ")
        );
    }
}
