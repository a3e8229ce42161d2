//! House-style checks over the whole source tree, run by `cargo test` (as rust-analyzer's
//! `tidy.rs` does): every Rust module opens with a `//!` paragraph; no placeholder or skipped
//! test is committed; no source file outgrows its room; the modules of each crate import each
//! other without a cycle; only the clock module reads the system clock; only the key-layout
//! module knows the offsets inside a key.
//!
//! `unwrap`/`expect` in library code are refused by clippy (`[workspace.lints]`), not here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !["target", "node_modules", ".venv", "peer", "results"].contains(&name.as_ref())
                && !name.starts_with('.')
            {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn workspace_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["crates", "bench", "fuzz"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(
        files.len() > 10,
        "the tidy check found too few files: {files:?}"
    );
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Whether a file is test code: an integration test, or a unit-test module of its own.
fn is_test_file(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "tests")
        || path.file_name().is_some_and(|name| name == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "fuzz")
}

/// The library part of a file: what comes before its unit tests, without comments.
fn library_code(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]").next().unwrap_or_default();
    before_tests
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_module_opens_with_a_doc_paragraph() {
    let missing: Vec<String> = workspace_files()
        .into_iter()
        .filter(|path| !read(path).trim_start().starts_with("//!"))
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a `//!` header: {missing:#?}"
    );
}

#[test]
fn no_placeholders_or_skipped_tests() {
    // Spelled in pieces so that this list is not itself a match for tools that grep the tree.
    let banned = [
        concat!("#[", "ignore"),
        concat!("#[", "should_panic"),
        concat!("todo", "!("),
        concat!("unimplemented", "!("),
        concat!("dbg", "!("),
    ];
    let mut found = Vec::new();
    for path in workspace_files() {
        if path.ends_with("tidy.rs") {
            continue;
        }
        let text = read(&path);
        for pattern in banned {
            if text.contains(pattern) {
                found.push(format!("{}: {pattern}", path.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "placeholders or skipped tests: {found:#?}"
    );
}

/// The most lines a source file may have before it should be split by concept. The query
/// parser is exempt: a hand-written recursive-descent parser reads best in one file.
const SOURCE_FILE_LINES_MAX: usize = 600;

#[test]
fn no_source_file_outgrows_its_room() {
    let mut oversized = Vec::new();
    for path in workspace_files() {
        if path.ends_with("parser.rs") {
            continue;
        }
        let lines = read(&path).lines().count();
        if lines > SOURCE_FILE_LINES_MAX {
            oversized.push(format!("{} ({lines} lines)", path.display()));
        }
    }
    assert!(
        oversized.is_empty(),
        "files over {SOURCE_FILE_LINES_MAX} lines; split them by concept: {oversized:#?}"
    );
}

#[test]
fn only_the_clock_module_reads_the_system_clock() {
    let mut found = Vec::new();
    for path in workspace_files() {
        let shown = path.display().to_string();
        let in_core = ["lethedb-engine", "lethedb-storage", "lethedb-query"]
            .iter()
            .any(|name| shown.contains(&format!("crates/{name}/src")));
        if !in_core || is_test_file(&path) || path.ends_with("clock.rs") {
            continue;
        }
        let code = library_code(&read(&path));
        for pattern in ["SystemTime::now", "Instant::now"] {
            if code.contains(pattern) {
                found.push(format!("{shown}: {pattern}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "time must come from the engine's clock module: {found:#?}"
    );
}

#[test]
fn only_the_key_layout_module_knows_offsets_inside_keys() {
    let source = root().join("crates/lethedb-engine/src");
    let mut files = Vec::new();
    rust_files(&source, &mut files);
    let mut found = Vec::new();
    for path in files {
        // keys.rs lays out keys; records.rs lays out stored values, which have offsets too.
        if path.ends_with("keys.rs") || path.ends_with("records.rs") || is_test_file(&path) {
            continue;
        }
        let code = library_code(&read(&path));
        for pattern in ["[8..]", "[..8]", ".get(8)", ".get(8..)", ".get(..8)"] {
            if code.contains(pattern) {
                found.push(format!("{}: {pattern}", path.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "key offsets belong in keys.rs: {found:#?}"
    );
}

// ----- the module graph -----

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
        if is_test_file(relative) {
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
        if parts.iter().any(|p| p.starts_with("bin")) {
            continue;
        }
        modules.insert(parts.join("::"), library_code(&read(&path)));
    }
    modules
}

/// Removes white space except a single space between two words (as in `Name as Other`).
fn squeeze(text: &str) -> String {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        if pending_space && word(c) && out.chars().last().is_some_and(word) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
    }
    out
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

/// Every path a module names: the expanded `use` statements and every inline `crate::…` or
/// `super::…` path.
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
    for anchor in ["crate::", "super::"] {
        let mut rest = code;
        while let Some(at) = rest.find(anchor) {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            paths.push(tail[..end].trim_end_matches(':').to_string());
            rest = &rest[at + anchor.len()..];
        }
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
        // A relative path from the crate root names a child module directly.
        Some(first) if module.is_empty() && modules.contains_key(*first) => {}
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

fn module_graph(source: &Path, root_file: &str) -> BTreeMap<String, BTreeSet<String>> {
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
    let crates = [
        ("crates/lethedb-query/src", "lib"),
        ("crates/lethedb-storage/src", "lib"),
        ("crates/lethedb-engine/src", "lib"),
        ("crates/lethedb-server/src", "lib"),
        ("bench/src", "main"),
    ];
    let mut cycles = Vec::new();
    for (source, root_file) in crates {
        let graph = module_graph(&root().join(source), root_file);
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
}
