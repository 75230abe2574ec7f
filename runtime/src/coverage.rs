//! The coverage report: per op, what is registered and what vmap will use.

use std::fmt::Write;

use crate::registry::{registry, VmapStrategy};
use crate::schema::OpKind;
use crate::Result;

/// A table with one row per op of every linked op table: kind, kernel, meta,
/// batching rule or decomposition, and what vmap will use.
///
/// ```
/// let report = batchrules::coverage::report()?;
/// assert!(report.lines().any(|l| l.starts_with("batchrules::ops::triu ")));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn report() -> Result<String> {
    let reg = registry()?;
    let rows: Vec<[String; 6]> = reg
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
            [
                format!("{}::{}", e.table.path, e.name()),
                e.schema.kind.as_str().to_string(),
                yes(e.kernel.is_some()),
                yes(e.meta.is_some()),
                impl_col,
                e.vmap_strategy().to_string(),
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
    ];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: [&str; 6]| {
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
    Ok(out)
}
