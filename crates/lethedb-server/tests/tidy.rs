//! House-style checks over the whole source tree, run by `cargo test` (as rust-analyzer's
//! `tidy.rs` does): every Rust module opens with a `//!` paragraph; no placeholder or skipped
//! test is committed; no source file outgrows its room; the modules of each crate import each
//! other without a cycle; only the clock module reads the system clock; only the key-layout
//! module knows the offsets inside a key. In `tidy/`: each crate keeps the floors
//! `ARCHITECTURE.md` states (`floors.rs`), every `lib.rs` is only a front door
//! (`front_door.rs`), and library functions stay short and switch no clippy lint off
//! (`functions.rs`), read through a scanner that blanks comments and literals (`source.rs`).
//!
//! The crates checked are the workspace's members, read from the root `Cargo.toml`.
//! `unwrap`/`expect` in library code are refused by clippy (`[workspace.lints]`), not here.

// Tests assert by panicking, helpers included (clippy allows it only inside #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used)]

// A test crate's root resolves modules beside it, so the rules' own folder is named.
#[path = "tidy/doors.rs"]
mod doors;
#[path = "tidy/floors.rs"]
mod floors;
#[path = "tidy/front_door.rs"]
mod front_door;
#[path = "tidy/functions.rs"]
mod functions;
#[path = "tidy/graph.rs"]
mod graph;
#[path = "tidy/source.rs"]
mod source;

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

/// A path as the rules report it: from the workspace root.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The workspace's crates, from the `members` list of the root `Cargo.toml`: each one's source
/// folder and root file (`lib`, or `main` for a crate that is only a binary).
fn workspace_crates() -> Vec<(PathBuf, &'static str)> {
    let manifest = read(&root().join("Cargo.toml"));
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .unwrap_or_default();
    let crates: Vec<(PathBuf, &'static str)> = members
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|member| {
            let source = root().join(member).join("src");
            let root_file = if source.join("lib.rs").exists() {
                "lib"
            } else {
                "main"
            };
            (source, root_file)
        })
        .collect();
    assert!(
        crates.len() > 5,
        "too few workspace members in Cargo.toml: {crates:?}"
    );
    crates
}

/// Whether a module file is declared by its parent only for tests (`#[cfg(test)] mod name;`).
fn declared_for_tests_only(path: &Path) -> bool {
    let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        return false;
    };
    let (name, folder) = if stem == "mod" {
        let folder = path.parent().unwrap_or(path);
        let name = folder.file_name().map(|n| n.to_string_lossy().into_owned());
        (name.unwrap_or_default(), folder.parent().unwrap_or(folder))
    } else {
        (stem, path.parent().unwrap_or(path))
    };
    let parents = [
        folder.join("mod.rs"),
        folder.join("lib.rs"),
        folder.join("main.rs"),
        folder.with_extension("rs"),
    ];
    parents
        .iter()
        .filter(|parent| parent.as_path() != path)
        .any(|parent| {
            let text = read(parent);
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            lines.windows(2).any(|pair| {
                pair[0] == "#[cfg(test)]"
                    && ["mod", "pub mod", "pub(crate) mod"]
                        .iter()
                        .any(|keyword| pair[1] == format!("{keyword} {name};"))
            })
        })
}

/// The library files of the workspace: every `.rs` in a member's `src/` (binaries included)
/// that is not test code.
fn library_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for (source, _) in workspace_crates() {
        let mut found = Vec::new();
        rust_files(&source, &mut found);
        files.extend(found.into_iter().filter(|path| {
            let relative = path.strip_prefix(&source).unwrap_or(path);
            !is_test_file(relative) && !declared_for_tests_only(path)
        }));
    }
    files
}

/// Whether a file is test code: an integration test, or a unit-test module of its own.
fn is_test_file(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "tests")
        || path.file_name().is_some_and(|name| {
            let name = name.to_string_lossy();
            name == "tests.rs" || name.ends_with("_tests.rs") || name.ends_with("_test.rs")
        })
        || path.components().any(|c| c.as_os_str() == "fuzz")
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

/// The one way a test may be skipped: a PostgreSQL test in a run that names no database. The
/// storage and engine build scripts set the cfg when `LETHEDB_TEST_POSTGRES` (or
/// `LETHEDB_TEST_POSTGRES_REQUIRED`) is set, so such a run reports these tests as ignored, with
/// the reason, instead of as passed.
const POSTGRES_GUARD: &str = concat!(
    "#[cfg_attr(not(lethedb_test_postgres), ",
    "ignore = \"needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it\")]"
);

/// The placeholders and skipped tests in a file's text, each as the pattern found.
fn placeholders_and_skips(text: &str) -> Vec<String> {
    // Spelled in pieces so that this list is not itself a match for tools that grep the tree.
    let banned = [
        concat!("#[", "ignore"),
        concat!("#[", "should_panic"),
        concat!("todo", "!("),
        concat!("unimplemented", "!("),
        concat!("dbg", "!("),
    ];
    let mut found: Vec<String> = banned
        .iter()
        .filter(|pattern| text.contains(**pattern))
        .map(|pattern| (*pattern).to_string())
        .collect();
    // A skip behind a condition is a skip too, unless it is the PostgreSQL guard.
    let chars: Vec<char> = text.chars().collect();
    let blanked: Vec<char> = source::blank_literals(text).chars().collect();
    let guard = source::squeeze(
        POSTGRES_GUARD
            .trim_start_matches("#[")
            .trim_end_matches(']'),
    );
    let mut at = 0;
    while let Some(offset) = text[byte_at(&chars, at)..].find("cfg_attr(") {
        let start = at + text[byte_at(&chars, at)..][..offset].chars().count();
        let open = start + "cfg_attr".len();
        let attribute: String = chars[start..=source::closing(&blanked, open)]
            .iter()
            .collect();
        let attribute = source::squeeze(&attribute);
        let skips = ["ignore", "should_panic"]
            .iter()
            .any(|word| attribute.contains(word));
        if skips && attribute != guard {
            found.push(attribute);
        }
        at = open;
    }
    found
}

fn byte_at(chars: &[char], char_at: usize) -> usize {
    chars[..char_at].iter().map(|c| c.len_utf8()).sum()
}

#[test]
fn no_placeholders_or_skipped_tests() {
    let mut found = Vec::new();
    for path in workspace_files() {
        if path.ends_with("tidy.rs") {
            continue;
        }
        for pattern in placeholders_and_skips(&read(&path)) {
            found.push(format!("{}: {pattern}", path.display()));
        }
    }
    assert!(
        found.is_empty(),
        "placeholders or skipped tests: {found:#?}"
    );
}

#[test]
fn the_skip_check_allows_only_the_postgres_guard() {
    let guarded = format!("//! t\n{POSTGRES_GUARD}\n#[test]\nfn needs_a_database() {{}}\n");
    assert!(placeholders_and_skips(&guarded).is_empty());
    let reworded = guarded.replace("runs it", "may run it");
    assert_eq!(placeholders_and_skips(&reworded).len(), 1);
    let other_cfg = guarded.replace("not(lethedb_test_postgres)", "not(feature = \"slow\")");
    assert_eq!(placeholders_and_skips(&other_cfg).len(), 1);
    let plain = concat!("#[", "ignore", "]\nfn skipped() {}\n");
    assert_eq!(placeholders_and_skips(plain), [concat!("#[", "ignore")]);
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
        let code = source::library_text(&read(&path));
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
        let code = source::library_text(&read(&path));
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
