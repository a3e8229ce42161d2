//! House-style checks over the whole source tree, run by `cargo test`: every Rust module opens
//! with a `//!` paragraph, and no placeholder or skipped test is committed.

use std::path::{Path, PathBuf};

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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["crates", "bench", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 10,
        "the tidy check found too few files: {files:?}"
    );
    files
}

#[test]
fn every_module_opens_with_a_doc_paragraph() {
    let missing: Vec<String> = workspace_files()
        .into_iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
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
        let text = std::fs::read_to_string(&path).unwrap_or_default();
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
