//! House-style checks over the crate's own source, run by `cargo test` (as rust-analyzer's
//! `tidy.rs` does): every module opens with a `//!` paragraph, and the library code holds no
//! `unwrap()`, `expect(`, `todo!`, `unimplemented!` or `dbg!` outside its unit tests.

use std::fs;
use std::path::Path;

fn rust_files(folder: &Path, found: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn every_module_opens_with_a_doc_paragraph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    assert!(files.len() > 10);
    for file in files {
        let text = fs::read_to_string(&file).unwrap_or_default();
        assert!(
            text.starts_with("//! "),
            "{} must open with a //! paragraph",
            file.display()
        );
    }
}

#[test]
fn library_code_has_no_panicking_shortcuts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let forbidden = [
        ".unwrap()",
        ".expect(",
        "todo!",
        "unimplemented!",
        "dbg!",
        // Spelled in pieces so that this list is not itself a match for tools that grep the tree.
        concat!("#[", "ignore]"),
        "should_panic",
    ];
    for file in files {
        let text = fs::read_to_string(&file).unwrap_or_default();
        // Unit tests at the end of a module may assert with panics; library code may not.
        let library = text.split("#[cfg(test)]").next().unwrap_or_default();
        for pattern in forbidden {
            assert!(
                !library.contains(pattern),
                "{} contains {pattern}",
                file.display()
            );
        }
    }
}
