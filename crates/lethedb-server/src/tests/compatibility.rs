//! Keeps `docs/compatibility.md` true: every operation the server classifies has a row, every
//! row that names an operation names a real one, and every protocol header the server's code
//! reads or writes is listed.

use crate::operation::Operation;
use std::collections::BTreeSet;
use std::path::Path;

const LEDGER: &str = include_str!("../../../../docs/compatibility.md");

/// The backquoted names in the first column of the ledger's table rows.
fn first_column_names() -> BTreeSet<String> {
    LEDGER
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_operation_has_a_row_and_every_row_a_real_operation() {
    let names = first_column_names();
    let operations: BTreeSet<String> = Operation::all()
        .iter()
        .map(|operation| operation.name().to_string())
        .collect();
    for operation in &operations {
        assert!(
            names.contains(operation),
            "docs/compatibility.md has no row for `{operation}`"
        );
    }
    // Rows of the operations table name operations; header rows name headers.
    for name in &names {
        let is_header = name.contains('-') || name.chars().all(|c| c.is_ascii_lowercase());
        assert!(
            is_header || operations.contains(name),
            "docs/compatibility.md names `{name}`, which is not an operation"
        );
    }
}

/// Every `"x-ms-..."` string literal in the server's non-test sources.
fn headers_in_sources(directory: &Path, found: &mut BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "tests") {
                headers_in_sources(&path, found);
            }
            continue;
        }
        if path.extension().is_none_or(|extension| extension != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for piece in text.split('"').skip(1).step_by(2) {
            let is_header = piece.starts_with("x-ms-")
                && piece
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if is_header {
                found.insert(piece.to_string());
            }
        }
    }
}

#[test]
fn every_header_the_server_handles_is_listed() {
    let mut headers = BTreeSet::new();
    headers_in_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut headers,
    );
    assert!(
        headers.contains("x-ms-session-token"),
        "the scan found nothing"
    );
    for header in headers {
        assert!(
            LEDGER.contains(&format!("`{header}`")),
            "docs/compatibility.md does not list the header `{header}`"
        );
    }
}
