//! The runtime's modules form layers, and imports only point down. Each layer
//! is a folder of `runtime/src/`, bottom up:
//!
//! ```text
//! core → table (schema → checks → registry) → dispatch (dispatch →
//! macro_support, the glue of the generated code → ops) → transforms
//! (transform_fn → vmap | batching → grad → forward → jacobian) → library →
//! api (io | testing → coverage | owned → operators)
//! ```
//!
//! `core` knows no transform and no op; the registry knows no dispatch; the
//! dispatcher knows no transform; transforms know no op library. This test
//! reads every `crate::` path in `runtime/src` and fails on an import that
//! points up (or sideways into another module of the same rank), so no cycle
//! can come back unnoticed. It also checks that each module's files sit in its
//! layer's folder, that the crate root lists the modules in this order, and
//! that each module's docs say what it may use; and it prints the module graph.
//! `unit_tests` (the unit tests, feature `unit-tests`) stands outside the
//! layers and may reach any module, as integration tests do.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom up: each a folder of `runtime/src/` and its modules in
/// order, as ranks (a module imports from the layers below and from the lower
/// ranks of its own; two modules of one rank import neither from the other).
const LAYERS: &[(&str, &[&[&str]])] = &[
    ("core", &[&["core"]]),
    ("table", &[&["schema"], &["checks"], &["registry"]]),
    ("dispatch", &[&["dispatch"], &["macro_support"], &["ops"]]),
    (
        "transforms",
        &[
            &["transform_fn"],
            &["batching", "vmap"],
            &["grad"],
            &["forward"],
            &["jacobian", "jit"],
        ],
    ),
    ("library", &[&["library"]]),
    (
        "api",
        &[&["io", "testing"], &["coverage", "owned"], &["operators"]],
    ),
];

/// The module outside the layers: it may import any module.
const OUTSIDE: &str = "unit_tests";

/// Where `module` stands: its layer's index and name, and its rank there.
fn place(module: &str) -> Option<(usize, &'static str, usize)> {
    LAYERS.iter().enumerate().find_map(|(i, (layer, ranks))| {
        ranks
            .iter()
            .position(|rank| rank.contains(&module))
            .map(|r| (i, *layer, r))
    })
}

/// The order of a module: layer, then rank.
fn layer(module: &str) -> Option<(usize, usize)> {
    place(module).map(|(i, _, r)| (i, r))
}

fn code_list(names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What a module's docs say about its layer and what it may use.
fn stated_place(module: &str) -> String {
    let (i, layer, r) = place(module).unwrap();
    let below: Vec<&str> = LAYERS[..i].iter().map(|(l, _)| *l).collect();
    let own: Vec<&str> = LAYERS[i].1[..r]
        .iter()
        .flat_map(|m| m.iter().copied())
        .collect();
    let mut s = format!("In the `{layer}` layer (`runtime/src/{layer}/`). It may use ");
    match below.len() {
        0 => s.push_str("nothing below it"),
        1 => s.push_str(&format!("the {} layer", code_list(&below))),
        _ => s.push_str(&format!("the {} layers", code_list(&below))),
    }
    if !own.is_empty() {
        s.push_str(&format!("; in its own layer, {}", code_list(&own)));
    }
    s.push_str(". `tests/suite/layers.rs` enforces it.");
    s
}

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
    ("jit", "jit"),
    ("Jit", "jit"),
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
    // A transform's rule table and its rules (`table/registry/rule_table.rs`).
    ("rule_table", "registry"),
    ("rule", "registry"),
];

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

/// The modules the crate root declares, in order, each with its root file
/// (relative to `runtime/src`: a `#[path]`'s, or the default) and the
/// `// Layer <name>:` header it stands under.
fn declared_modules(root: &str) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    let (mut layer, mut path) = (None, None);
    for line in root.lines() {
        if let Some(rest) = line.strip_prefix("// Layer ") {
            layer = rest.split(':').next().map(str::to_string);
        } else if line.starts_with("// Outside the layers") {
            layer = None;
        } else if let Some(p) = line.strip_prefix("#[path = \"") {
            path = p.strip_suffix("\"]").map(str::to_string);
        } else if let Some(name) = line
            .trim_start_matches("pub ")
            .strip_prefix("mod ")
            .and_then(|r| r.strip_suffix(';'))
        {
            let file = path.take().unwrap_or_else(|| {
                if Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("runtime/src")
                    .join(name)
                    .is_dir()
                {
                    format!("{name}/mod.rs")
                } else {
                    format!("{name}.rs")
                }
            });
            out.push((name.to_string(), file, layer.clone()));
        }
    }
    out
}

/// The module a file of `runtime/src` belongs to: the one whose root file it
/// is, or whose folder (a `mod.rs` root's) holds it.
fn module_of(rel: &str, modules: &[(String, String, Option<String>)]) -> Option<String> {
    modules
        .iter()
        .filter_map(|(name, file, _)| {
            let folder = file.strip_suffix("mod.rs");
            let hit = rel == file || folder.is_some_and(|f| rel.starts_with(f));
            hit.then(|| (file.len(), name.clone()))
        })
        .max()
        .map(|(_, name)| name)
}

fn root_source() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src/lib.rs"))
        .unwrap()
}

#[test]
fn imports_only_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let modules = declared_modules(&root_source());
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "lib.rs" {
            continue; // the crate root assembles the layers
        }
        let Some(module) = module_of(&rel, &modules) else {
            problems.push(format!(
                "{rel}: no module of the crate root holds this file"
            ));
            continue;
        };
        if module == OUTSIDE {
            continue;
        }
        let Some(own) = layer(&module) else {
            problems.push(format!(
                "{rel}: module `{module}` has no layer; add it to LAYERS"
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
                            "{rel}: `crate::{name}` is not a known module or root item; add it to LAYERS or ROOT_ITEMS"
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
                    "{rel}: `{module}` ({}) imports `crate::{name}` from `{target}` ({}); imports must point to a lower layer, or to a module listed before it in its own layer",
                    describe(&module),
                    describe(&target),
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

/// `layer `name`, rank r`, for the messages.
fn describe(module: &str) -> String {
    let (_, layer, rank) = place(module).unwrap();
    format!("layer `{layer}`, rank {rank}")
}

#[test]
fn the_scanner_sees_grouped_and_plain_imports() {
    let names = crate_imports(
        "use crate::{a, b::c};\nlet x = crate::d::e(); // crate::f\n$crate::g::h!();\n",
    );
    assert_eq!(names, ["a", "b", "d"]);
}

#[test]
fn a_file_belongs_to_the_innermost_module_that_holds_it() {
    let modules = declared_modules(
        "// Layer a:\n#[path = \"a/x/mod.rs\"]\nmod x;\n#[path = \"a/y.rs\"]\nmod y;\n",
    );
    assert_eq!(
        modules[0],
        ("x".into(), "a/x/mod.rs".into(), Some("a".into()))
    );
    assert_eq!(module_of("a/x/deep/z.rs", &modules).as_deref(), Some("x"));
    assert_eq!(module_of("a/y.rs", &modules).as_deref(), Some("y"));
    assert_eq!(module_of("a/w.rs", &modules), None);
}

/// The layers are written down where readers meet them: the crate root lists
/// the modules under `// Layer <name>:` headers, in order, each in its
/// layer's folder; and each module's own docs say its layer and what it may
/// use. All must say what `LAYERS` enforces.
#[test]
fn the_folders_and_comments_state_the_enforced_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let modules = declared_modules(&root_source());
    let mut problems = Vec::new();
    let mut last = (0, 0);
    let mut seen = BTreeSet::new();
    for (module, file, header) in &modules {
        if module == OUTSIDE {
            continue;
        }
        seen.insert(module.as_str());
        let Some((i, layer, rank)) = place(module) else {
            problems.push(format!(
                "lib.rs declares `{module}`, which LAYERS does not list"
            ));
            continue;
        };
        if header.as_deref() != Some(layer) {
            problems.push(format!(
                "lib.rs lists `{module}` under `// Layer {}`, LAYERS puts it in `{layer}`",
                header.as_deref().unwrap_or("(none)")
            ));
        }
        if !file.starts_with(&format!("{layer}/")) {
            problems.push(format!(
                "`{module}` lives in {file}, outside its layer's folder `{layer}/`"
            ));
        }
        if (i, rank) < last {
            problems.push(format!(
                "lib.rs lists `{module}` after a module of a higher rank"
            ));
        }
        last = (i, rank);
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        let docs: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .map(str::trim)
            .collect();
        let stated = stated_place(module);
        if !docs.join(" ").contains(&stated) {
            problems.push(format!("{file}: the module docs do not say `{stated}`"));
        }
    }
    for (_, ranks) in LAYERS {
        for module in ranks.iter().flat_map(|r| r.iter()) {
            if !seen.contains(module) {
                problems.push(format!(
                    "LAYERS lists `{module}`, which lib.rs does not declare"
                ));
            }
        }
    }
    // Every file of runtime/src sits in a layer's folder (or is the root, or
    // the unit tests' module).
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let top = rel.split('/').next().unwrap_or("");
        if rel.contains('/') && !LAYERS.iter().any(|(l, _)| *l == top) {
            problems.push(format!("{rel} is in no layer's folder"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
