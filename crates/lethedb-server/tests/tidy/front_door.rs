//! Every crate's `lib.rs` is only its front door: module declarations, `pub use` re-exports,
//! docs and attributes, and test modules under `#[cfg(test)]`. Types, functions and constants
//! live in a module of their own, so the root never becomes a floor that others import from.
//!
//! A binary's `main.rs` is a composition root, not a front door, and is not checked here.

use super::source::{blank_literals, closing, line_of, squeeze};
use super::{read, shown, workspace_crates};

/// The items of a crate root that are not front-door items, each with its line.
pub fn front_door_problems(text: &str) -> Vec<String> {
    let chars: Vec<char> = blank_literals(text).chars().collect();
    let mut problems = Vec::new();
    let mut under_cfg_test = false;
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        if chars[i] == '#' {
            let open = chars[i..]
                .iter()
                .position(|&c| c == '[')
                .map_or(i, |at| i + at);
            let close = closing(&chars, open);
            let attribute: String = chars[i..=close].iter().collect();
            under_cfg_test |= squeeze(&attribute) == "#[cfg(test)]";
            i = close + 1;
            continue;
        }
        let end = root_item_end(&chars, i);
        let item = squeeze(&chars[i..=end].iter().collect::<String>());
        if !is_front_door_item(&item, under_cfg_test) {
            let shown: String = item.chars().take(60).collect();
            problems.push(format!("line {}: `{shown}`", line_of(&chars, i)));
        }
        under_cfg_test = false;
        i = end + 1;
    }
    problems
}

/// Where an item of the crate root ends: its `;` (a `use` tree's braces included), or the
/// brace that closes its body.
fn root_item_end(chars: &[char], from: usize) -> usize {
    let is_use = {
        let start: String = chars[from..].iter().take(20).collect();
        let start = squeeze(&start);
        start.starts_with("use ")
            || start.starts_with("pub use ")
            || start.starts_with("pub(crate) use ")
    };
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            ';' => return i,
            '(' | '[' => i = closing(chars, i) + 1,
            '{' if is_use => i = closing(chars, i) + 1,
            '{' => return closing(chars, i),
            _ => i += 1,
        }
    }
    chars.len().saturating_sub(1)
}

fn is_front_door_item(item: &str, under_cfg_test: bool) -> bool {
    let declaration = item
        .strip_prefix("pub ")
        .or_else(|| item.strip_prefix("pub(crate) "))
        .unwrap_or(item);
    let module_name = |rest: &str| rest.chars().all(|c| c.is_alphanumeric() || c == '_');
    if let Some(rest) = declaration.strip_prefix("mod ") {
        if let Some(name) = rest.strip_suffix(';') {
            return module_name(name);
        }
        // An inline module is code, unless it holds only tests.
        return under_cfg_test;
    }
    item.starts_with("pub use ") && item.ends_with(';')
}

#[test]
fn every_lib_rs_is_only_a_front_door() {
    let mut problems = Vec::new();
    for (source, root_file) in workspace_crates() {
        if root_file != "lib" {
            continue;
        }
        let path = source.join("lib.rs");
        for problem in front_door_problems(&read(&path)) {
            problems.push(format!("{}: {problem}", shown(&path)));
        }
    }
    assert!(
        problems.is_empty(),
        "a lib.rs holds only `mod`, `pub use`, docs and attributes; move these items into a \
         module of their own: {problems:#?}"
    );
}

#[test]
fn the_front_door_check_sees_code_in_a_crate_root() {
    let text = "//! Docs with a `fn inside()` and a { brace.\n#![forbid(unsafe_code)]\n\n\
                mod a;\npub mod b;\n#[doc(hidden)]\npub use a::{Alpha, b::{Beta, Gamma}};\n\
                use std::fmt;\nconst LIMIT: usize = 3;\npub fn helper() -> &'static str {\n    \
                \"}\"\n}\nmod inline {}\n\n#[cfg(test)]\nmod tests {\n    fn check() {}\n}\n\
                #[cfg(test)]\nmod model_test;\n";
    assert_eq!(
        front_door_problems(text),
        [
            "line 8: `use std::fmt;`",
            "line 9: `const LIMIT:usize=3;`",
            "line 10: `pub fn helper()->&'static str{\"\"}`",
            "line 13: `mod inline{}`",
        ]
    );
}
