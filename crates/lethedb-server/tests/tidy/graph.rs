//! The import graph of a crate's modules, drawn from their `use` lines and inline
//! `crate::`/`super::` paths, and the check that it has no cycle. The floor check
//! (`floors.rs`) reads the same graph.
//!
//! A path through the crate root's re-exports counts as an import of the module that defines
//! the item; the root's own `pub use` lines are its front door, not imports.

use super::source::{library_text, squeeze};
use super::{declared_for_tests_only, is_test_file, read, rust_files, workspace_crates};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A crate's modules by path (`""` is the crate root, `"catalog::resource"` a nested module),
/// each with its library code.
fn crate_modules(source: &Path, root_file: &str) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    rust_files(source, &mut files);
    let mut modules = BTreeMap::new();
    for path in files {
        let Ok(relative) = path.strip_prefix(source) else {
            continue;
        };
        if is_test_file(relative) || declared_for_tests_only(&path) {
            continue;
        }
        let relative = relative.with_extension("");
        let mut parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
            if parts[0] != root_file {
                continue;
            }
            parts.clear();
        }
        if parts.last().is_some_and(|last| last == "mod") {
            parts.pop();
        }
        // Binaries under `src/bin/` are crates of their own (`binary_json/` is not one).
        if parts.first().is_some_and(|first| first == "bin") {
            continue;
        }
        modules.insert(parts.join("::"), library_text(&read(&path)));
    }
    modules
}

/// Expands a `use` tree such as `a::{b, c::{d, e}}` into its paths.
fn expand_use_tree(tree: &str) -> Vec<String> {
    let tree = squeeze(tree);
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let inner = tree[open + 1..]
        .strip_suffix('}')
        .unwrap_or(&tree[open + 1..]);
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| expand_use_tree(&format!("{prefix}{part}")))
        .collect()
}

/// Every path a module names: the expanded `use` statements and every inline path from its
/// first segment (`crate::…`, `super::…`, or a relative `child::…`, which `target_module` keeps
/// only when it names a child module).
fn named_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let boundary_ok = at == 0
            || !rest[..at]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let after = &rest[at + 4..];
        let Some(end) = after.find(';') else { break };
        if boundary_ok {
            paths.extend(expand_use_tree(&after[..end]));
        }
        rest = &after[end..];
    }
    for (at, _) in code.match_indices("::") {
        let start = code[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
            .last()
            .map_or(at, |(i, _)| i);
        // Only a path's first segment starts a path (`a` in `a::b::c`, not `b`).
        if start == at || code[..start].ends_with(':') {
            continue;
        }
        let tail = &code[start..];
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        // `a::{b, c}` is a use tree, which the `use` pass above has expanded.
        if tail[end..].starts_with('{') {
            continue;
        }
        paths.push(tail[..end].trim_end_matches(':').to_string());
    }
    paths
}

/// The module a path names from inside `module`, if it is one of the crate's own.
fn target_module(
    module: &str,
    path: &str,
    modules: &BTreeMap<String, String>,
    reexports: &BTreeMap<String, String>,
) -> Option<String> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<&str> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").collect()
    };
    match segments.first() {
        Some(&"crate") => {
            base.clear();
            segments.remove(0);
        }
        Some(&"super") => {
            while segments.first() == Some(&"super") {
                segments.remove(0);
                base.pop();
            }
        }
        Some(&"self") => {
            segments.remove(0);
        }
        // A relative path names a child module directly (`use execute::X` in `scripts/mod.rs`).
        Some(first) if modules.contains_key(&child_module(module, first)) => {}
        _ => return None,
    }
    let mut best = base.join("::");
    let mut current = base.clone();
    for segment in &segments {
        current.push(segment);
        let candidate = current.join("::");
        if modules.contains_key(&candidate) {
            best = candidate;
        } else {
            break;
        }
    }
    if best.is_empty() {
        // An item of the crate root: follow its re-export to the module that defines it.
        if let Some(name) = segments.first() {
            if let Some(owner) = reexports.get(*name) {
                return Some(owner.clone());
            }
        }
    }
    Some(best)
}

/// The path of `module`'s child named `name`.
fn child_module(module: &str, name: &str) -> String {
    if module.is_empty() {
        name.to_string()
    } else {
        format!("{module}::{name}")
    }
}

pub fn module_graph(source: &Path, root_file: &str) -> BTreeMap<String, BTreeSet<String>> {
    let modules = crate_modules(source, root_file);
    // The crate root's `pub use` lines: which module each re-exported name comes from.
    let mut reexports = BTreeMap::new();
    let root_code = modules.get("").cloned().unwrap_or_default();
    for line in root_code.split(';') {
        let line = line.trim();
        let Some(tree) = line
            .strip_prefix("pub use ")
            .or_else(|| line.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        for path in expand_use_tree(tree) {
            let path = path.trim_start_matches("crate::");
            let name = path.rsplit("::").next().unwrap_or_default();
            let name = name.rsplit(" as ").next().unwrap_or(name).to_string();
            let owner = target_module("", path, &modules, &BTreeMap::new());
            if let Some(owner) = owner.filter(|o| !o.is_empty()) {
                reexports.insert(name, owner);
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (module, code) in &modules {
        let mut edges = BTreeSet::new();
        // The root's re-exports are its front door, not a dependency.
        let code = if module.is_empty() {
            code.split(';')
                .filter(|s| {
                    let s = s.trim();
                    !s.starts_with("pub use") && !s.starts_with("pub(crate) use")
                })
                .collect::<Vec<_>>()
                .join(";")
        } else {
            code.clone()
        };
        for path in named_paths(&code) {
            if let Some(target) = target_module(module, &path, &modules, &reexports) {
                if &target != module {
                    edges.insert(target);
                }
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// A cycle in the graph, as the modules along it, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, state, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str()) {
            if let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn the_modules_of_each_crate_import_each_other_without_a_cycle() {
    let crates = workspace_crates();
    let mut cycles = Vec::new();
    for (source, root_file) in crates {
        let graph = module_graph(&source, root_file);
        let source = source.display();
        assert!(graph.len() > 2, "{source}: too few modules found");
        if let Some(cycle) = find_cycle(&graph) {
            let shown: Vec<String> = cycle
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "(root)".into()
                    } else {
                        m.clone()
                    }
                })
                .collect();
            cycles.push(format!("{source}: {}", shown.join(" → ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

#[test]
fn the_cycle_finder_sees_a_cycle_through_a_reexport() {
    let dir = std::env::temp_dir().join(format!("lethedb-tidy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("c")).expect("temp dir");
    let files = [
        ("lib.rs", "//! r\nmod a;\nmod c;\npub use a::Alpha;\n"),
        (
            "a.rs",
            "//! a\nuse crate::c::d::Delta;\npub struct Alpha;\n",
        ),
        ("c/mod.rs", "//! c\npub mod d;\n"),
        (
            "c/d.rs",
            "//! d\nuse crate::{Alpha, c};\npub struct Delta;\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let graph = module_graph(&dir, "lib");
    let cycle = find_cycle(&graph);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        cycle,
        Some(vec!["a".to_string(), "c::d".to_string(), "a".to_string()])
    );
    assert_eq!(
        expand_use_tree("a::{b, c::{d, e as f}}"),
        vec!["a::b", "a::c::d", "a::c::e as f"]
    );
    // A grouped import names its leaves, not the crate root it starts from.
    assert_eq!(
        named_paths("use crate::{keys, rids};\nfn f() { crate::clock::now(); }"),
        vec!["crate::keys", "crate::rids", "crate::clock::now"]
    );
}
