//! The engine's front door, as rules over the source: its public methods live in
//! `crates/lethedb-engine/src/api/` only; a plain (non-`async`) door there never scans, so it
//! may run on a request worker; and blocking work leaves the async workers in one place only,
//! `api/mod.rs` (`run_scan`, `run_blocking`), so that every scan is under the one bound.
//!
//! Read through the scanner of `source.rs` (comments, literals and test items blanked).

use crate::source::{closing, is_word, library_text, line_of};
use crate::{library_files, read, shown};

/// The only library file that may hand work to tokio's blocking pool.
pub const BLOCKING_DOOR: &str = "crates/lethedb-engine/src/api/mod.rs";

/// What a plain door must not call: a scan's blocking body, a catalog listing, a storage scan.
const SCANS: [&str; 3] = ["_blocking(", "list_records(", ".scan("];

/// The lines of `text` that call `spawn_blocking`.
pub fn blocking_calls(text: &str) -> Vec<usize> {
    let code: Vec<char> = library_text(text).chars().collect();
    let needle: Vec<char> = "spawn_blocking".chars().collect();
    (0..code.len().saturating_sub(needle.len()))
        .filter(|&at| code[at..at + needle.len()] == needle[..])
        .filter(|&at| at == 0 || !is_word(code[at - 1]))
        .map(|at| line_of(&code, at))
        .collect()
}

/// Each `impl Engine { ... }` block of `code` (blanked text), as the range of its body.
fn engine_impls(code: &[char]) -> Vec<(usize, usize)> {
    let head: Vec<char> = "impl Engine {".chars().collect();
    let mut blocks = Vec::new();
    let mut at = 0;
    while at + head.len() <= code.len() {
        if code[at..at + head.len()] == head[..] && (at == 0 || !is_word(code[at - 1])) {
            let open = at + head.len() - 1;
            let close = closing(code, open);
            blocks.push((open, close));
            at = close;
        }
        at += 1;
    }
    blocks
}

/// The public methods (`pub fn`, `pub async fn`, not `pub(crate)`) of the `impl Engine` blocks
/// of `text`: name, line, whether async, and the body's text.
pub fn public_methods(text: &str) -> Vec<(String, usize, bool, String)> {
    let code: Vec<char> = library_text(text).chars().collect();
    let mut found = Vec::new();
    for (open, close) in engine_impls(&code) {
        let body: String = code[open..close].iter().collect();
        let mut rest = 0;
        while let Some(offset) = body[rest..].find("pub ") {
            let at = rest + offset;
            rest = at + 4;
            let after = body[rest..].trim_start();
            let (is_async, after) = match after.strip_prefix("async ") {
                Some(tail) => (true, tail.trim_start()),
                None => (false, after),
            };
            let Some(signature) = after.strip_prefix("fn ") else {
                continue;
            };
            let name: String = signature.chars().take_while(|&c| is_word(c)).collect();
            let start = open + body[..at].chars().count();
            let method_open = code[start..close].iter().position(|&c| c == '{');
            let text_of_body = match method_open {
                Some(offset) => {
                    let brace = start + offset;
                    code[brace..=closing(&code, brace)].iter().collect()
                }
                None => String::new(),
            };
            found.push((name, line_of(&code, start), is_async, text_of_body));
        }
    }
    found
}

/// The scans a plain door's body calls, if any.
pub fn scans_in(body: &str) -> Vec<&'static str> {
    SCANS
        .into_iter()
        .filter(|scan| body.contains(scan))
        .collect()
}

#[test]
fn blocking_work_leaves_the_request_workers_only_through_the_engines_door() {
    let mut found = Vec::new();
    for path in library_files() {
        let shown = shown(&path);
        if shown == BLOCKING_DOOR {
            continue;
        }
        for line in blocking_calls(&read(&path)) {
            found.push(format!("{shown}:{line}"));
        }
    }
    assert!(
        found.is_empty(),
        "spawn_blocking outside {BLOCKING_DOOR}: run the work through an engine door \
         (run_scan or run_blocking), under its bound: {found:#?}"
    );
}

#[test]
fn the_engines_public_methods_are_its_doors_and_plain_doors_never_scan() {
    let mut outside = Vec::new();
    let mut scanning = Vec::new();
    for path in library_files() {
        let shown = shown(&path);
        if !shown.starts_with("crates/lethedb-engine/src/") {
            continue;
        }
        let in_door = shown.starts_with("crates/lethedb-engine/src/api/");
        for (name, line, is_async, body) in public_methods(&read(&path)) {
            if !in_door {
                outside.push(format!("{shown}:{line} `{name}`"));
            } else if !is_async && !scans_in(&body).is_empty() {
                scanning.push(format!(
                    "{shown}:{line} `{name}` calls {:?}",
                    scans_in(&body)
                ));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "public methods of Engine outside its front door (api/): move them there, or make \
         them pub(crate): {outside:#?}"
    );
    assert!(
        scanning.is_empty(),
        "plain (non-async) doors that scan: make them async through run_scan: {scanning:#?}"
    );
}

#[test]
fn the_door_rules_see_planted_violations() {
    let planted = "//! planted\nimpl Engine {\n    pub fn listed(&self) -> u8 {\n        \
                   self.list_blocking()\n    }\n    pub async fn awaited(&self) {}\n    \
                   pub(crate) fn inner(&self) {}\n}\nfn f() { tokio::task::spawn_blocking(g); }\n";
    let methods = public_methods(planted);
    let names: Vec<(&str, usize, bool)> = methods
        .iter()
        .map(|(name, line, is_async, _)| (name.as_str(), *line, *is_async))
        .collect();
    assert_eq!(names, vec![("listed", 3, false), ("awaited", 6, true)]);
    assert_eq!(scans_in(&methods[0].3), vec!["_blocking("]);
    assert_eq!(blocking_calls(planted), vec![9]);
    // In a comment or a string it is not a call.
    assert!(blocking_calls("// spawn_blocking\nlet s = \"spawn_blocking\";\n").is_empty());
}
