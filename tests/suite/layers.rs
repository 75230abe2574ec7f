//! The runtime's modules form layers, and imports only point down:
//!
//! ```text
//! core → schema | io → checks → registry → dispatch → macro_support (glue of the
//! generated code) | transform_fn (the functions transforms run) → vmap |
//! batching → grad → forward → jacobian → testing → library → coverage |
//! owned → operators → unit_tests (the unit tests, feature `unit-tests`)
//! ```
//!
//! `core` knows no transform and no op; the registry knows no dispatch; the
//! dispatcher knows no transform; transforms know no op library. This test
//! reads every `crate::` path in `runtime/src` and fails on an import that
//! points up (or sideways into another module of the same layer), so no cycle
//! can come back unnoticed. It also prints the module graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of the runtime and its layer (lower imports nothing above).
const LAYERS: &[(&str, usize)] = &[
    ("core", 0),
    ("schema", 1),
    ("io", 1),
    ("checks", 2),
    ("registry", 3),
    ("dispatch", 4),
    ("macro_support", 5),
    ("transform_fn", 5),
    ("ops", 6),
    ("vmap", 7),
    ("batching", 7),
    ("grad", 8),
    ("forward", 9),
    ("jacobian", 10),
    ("testing", 11),
    ("library", 12),
    ("coverage", 13),
    ("owned", 13),
    ("operators", 14),
    ("unit_tests", 15),
];

/// Items the crate root re-exports, and the module each comes from.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("DType", "core"),
    ("Reduction", "core"),
    ("Error", "core"),
    ("Result", "core"),
    ("Data", "core"),
    ("Element", "core"),
    ("LevelId", "core"),
    ("LevelTensor", "core"),
    ("Tensor", "core"),
    ("TensorTree", "core"),
    ("StructTree", "core"),
    ("Arg", "core"),
    ("BDim", "core"),
    ("Outs", "core"),
    ("TensorMeta", "core"),
    ("each_dtype", "core"),
    ("derive_seed", "core"),
    ("__private", "macro_support"),
    ("vmap", "vmap"),
    ("grad", "grad"),
    ("needs_gradient", "grad"),
    ("vjp", "grad"),
    ("value_and_grad", "grad"),
    ("jacrev", "jacobian"),
    ("hessian", "jacobian"),
    ("hvp", "forward"),
    ("jvp", "forward"),
    ("jacfwd", "jacobian"),
    ("Jacfwd", "jacobian"),
    ("VjpFn", "grad"),
    ("Grad", "grad"),
    ("ValueAndGrad", "grad"),
    ("Jacrev", "jacobian"),
    ("Hessian", "jacobian"),
    ("GradArgs", "grad"),
    ("GradOutput", "grad"),
    ("ArgAt", "grad"),
    ("vmap_depth", "vmap"),
    ("FallbackPolicy", "vmap"),
    ("fallback_policy", "vmap"),
    ("set_fallback_policy", "vmap"),
    ("scoped_fallback_policy", "vmap"),
    ("FallbackPolicyScope", "vmap"),
    ("Randomness", "vmap"),
    ("args", "testing"),
    ("op_samples", "testing"),
    ("sample_set", "testing"),
    // The attribute macros expand to `__private` paths.
    ("kernel", "macro_support"),
    ("meta", "macro_support"),
    ("batching_rule", "macro_support"),
    ("decompose", "macro_support"),
    ("jvp", "macro_support"),
    ("op_table", "macro_support"),
    // A transform's rule table and its rules (`registry/rule_table.rs`).
    ("rule_table", "registry"),
    ("rule", "registry"),
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names imported by each `crate::` path in `source` (first segment only;
/// `crate::{a, b::c}` gives `a` and `b`). Comments are skipped, and so is a
/// file's unit-test module (`#[cfg(feature = "unit-tests")] pub(crate) mod
/// tests`, at the end of the file): tests may reach any layer, as integration
/// tests do.
fn crate_imports(source: &str) -> Vec<String> {
    let source = source
        .find("#[cfg(feature = \"unit-tests\")]\npub(crate) mod tests")
        .map_or(source, |at| &source[..at]);
    let mut names = Vec::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            // `$crate::` inside an exported macro is a path of the code that
            // invokes the macro, not of the module defining it.
            let in_macro = rest[..at].ends_with('$');
            rest = &rest[at + "crate::".len()..];
            if in_macro {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let first = item.trim().split("::").next().unwrap_or("").trim();
                    if !first.is_empty() {
                        names.push(first.to_string());
                    }
                }
            } else {
                let ident: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.push(ident);
            }
        }
    }
    names
}

#[test]
fn imports_only_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue; // the crate root assembles the layers
        }
        let Some(own) = layer(&module) else {
            problems.push(format!(
                "{}: module `{module}` has no layer; add it to LAYERS",
                rel.display()
            ));
            continue;
        };
        let source = std::fs::read_to_string(file).unwrap();
        for name in crate_imports(&source) {
            let target = match layer(&name) {
                Some(_) => name.clone(),
                None => match ROOT_ITEMS.iter().find(|(item, _)| *item == name) {
                    Some((_, m)) => m.to_string(),
                    None => {
                        problems.push(format!(
                            "{}: `crate::{name}` is not a known module or root item; add it to LAYERS or ROOT_ITEMS",
                            rel.display()
                        ));
                        continue;
                    }
                },
            };
            if target == module {
                continue;
            }
            graph
                .entry(module.clone())
                .or_default()
                .insert(target.clone());
            let theirs = layer(&target).unwrap();
            if theirs >= own {
                problems.push(format!(
                    "{}: `{module}` (layer {own}) imports `crate::{name}` from `{target}` (layer {theirs}); imports must point to a lower layer",
                    rel.display()
                ));
            }
        }
    }
    for (module, deps) in &graph {
        println!(
            "{module} -> {}",
            deps.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scanner_sees_grouped_and_plain_imports() {
    let names = crate_imports(
        "use crate::{a, b::c};\nlet x = crate::d::e(); // crate::f\n$crate::g::h!();\n",
    );
    assert_eq!(names, ["a", "b", "d"]);
}

/// The layer order is written down where readers meet it: in the crate
/// root's list of modules (under `// Layer N:` headers) and in each module's own
/// docs (`Layer N of the runtime`). Both must say what `LAYERS` enforces.
#[test]
fn the_comments_state_the_enforced_order() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let root = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    // `// Layer N:` headers, each followed by that layer's `mod` lines (one
    // group per layer, so that rustfmt's module sorting keeps the order).
    let mut listed = Vec::new();
    let mut current = None;
    for line in root.lines() {
        if let Some(n) = line.strip_prefix("// Layer ") {
            current = n.trim_end_matches(':').parse::<usize>().ok();
            continue;
        }
        let line = line.trim_start_matches("pub ");
        let name = line.strip_prefix("mod ").and_then(|r| r.strip_suffix(';'));
        if let (Some(name), Some(_)) = (name, current) {
            listed.push((name.to_string(), current));
        }
    }
    let expected: Vec<(String, Option<usize>)> = LAYERS
        .iter()
        .map(|(m, l)| (m.to_string(), Some(*l)))
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_by_key(|(_, l)| *l);
    assert_eq!(
        listed, sorted,
        "lib.rs lists the modules out of layer order"
    );
    let mut a = listed.clone();
    let mut b = expected;
    a.sort();
    b.sort();
    assert_eq!(a, b, "lib.rs's `// Layer N:` headers disagree with LAYERS");
    for (module, layer) in LAYERS {
        let file = [format!("{module}.rs"), format!("{module}/mod.rs")]
            .into_iter()
            .map(|f| src.join(f))
            .find(|p| p.exists())
            .unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let stated = format!("//! Layer {layer} of the runtime");
        assert!(
            text.contains(&stated),
            "{} does not say `{stated}`",
            file.display()
        );
    }
}
