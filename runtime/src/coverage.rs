//! The coverage report: per op, what is registered, what vmap will use, and
//! how grad differentiates it.
//!
//! Layer 13 of the runtime, of 0 to 14 bottom up: it imports only from lower
//! layers (the crate root lists the order; `tests/suite/layers.rs` enforces it).

use std::fmt::Write;

use crate::registry::{registry, JvpStatus, OpEntry, VjpStatus, VmapStrategy};
use crate::schema::OpKind;
use crate::Result;

/// A table with one row per op of every linked op table: kind, kernel, meta,
/// batching rule or decomposition, what vmap will use, the vjp (`vjp`, `-`
/// for a differentiable primitive without one, `not differentiable`, or
/// `through decomposition` for a composite) and the jvp (the same, and
/// `linear` for an op whose jvp is the op applied to the tangents). Below
/// it, the differentiable primitives that lack a vjp (see
/// [`Registry::missing_vjps`](crate::registry::Registry::missing_vjps)), and
/// those that lack a jvp (see
/// [`Registry::missing_jvps`](crate::registry::Registry::missing_jvps)).
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
    let rows: Vec<[String; 8]> = reg
        .ops()
        .iter()
        .map(|e| {
            let yes = |b: bool| if b { "yes" } else { "-" }.to_string();
            let impl_col = match e.schema.kind {
                OpKind::Primitive => format!("rule: {}", yes(e.rule.is_some())),
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
                (false, _) => e.vmap_strategy().to_string(),
                (true, Some((_, crate::registry::DecomposeVmap::Decompose))) => {
                    "randomness policy, then decomposition".to_string()
                }
                (true, _) => "randomness policy, per-example seeds".to_string(),
            };
            [
                format!("{}::{}", e.table.path, e.name()),
                e.schema.kind.as_str().to_string(),
                yes(e.kernel.is_some()),
                yes(e.meta.is_some()),
                impl_col,
                vmap_col,
                e.vjp_status().to_string(),
                e.jvp_status().to_string(),
            ]
        })
        .collect();
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
    let fallback = reg
        .ops()
        .iter()
        .filter(|e| e.vmap_strategy() == VmapStrategy::Fallback)
        .count();
    let _ = writeln!(
        out,
        "\n{} ops; {} use the fallback loop under vmap",
        rows.len(),
        fallback
    );
    let count = |pick: &dyn Fn(&OpEntry) -> bool| reg.ops().iter().filter(|e| pick(e)).count();
    let with_vjp = count(&|e| e.vjp_status() == VjpStatus::Vjp);
    derivative_summary(
        &mut out,
        "vjp",
        "grad",
        &[(with_vjp, "with a vjp")],
        &reg.missing_vjps(),
    );
    let with_jvp = count(&|e| e.jvp_status() == JvpStatus::Jvp);
    let linear = count(&|e| e.jvp_status() == JvpStatus::Linear);
    derivative_summary(
        &mut out,
        "jvp",
        "jvp",
        &[(with_jvp, "with a jvp"), (linear, "linear")],
        &reg.missing_jvps(),
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
