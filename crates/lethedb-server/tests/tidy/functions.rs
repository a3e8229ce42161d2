//! Rules over the library functions of the workspace: none is longer than
//! [`FUNCTION_LINES_MAX`] lines unless the short allow-list names it with its reason, and no
//! library code switches a clippy lint off with `allow` (`expect`, with a reason, says why and
//! fails once the lint no longer fires).
//!
//! Tests are aside: test files, and in a library file the items under `#[cfg(test)]`.

use super::source::{closing, is_word, library_text, line_of};
use super::{library_files, read, shown};

/// The most lines a library function may have, from its `fn` line to its closing brace (its
/// doc comment and attributes are not counted). A longer one is split by phase, with names.
const FUNCTION_LINES_MAX: usize = 80;

/// Functions allowed to be longer: only exhaustive dispatch, where one `match` arm per case is
/// the clearest shape and splitting it would only scatter the table. As (file, function, why).
const LONG_FUNCTIONS_ALLOWED: &[(&str, &str, &str)] = &[
    (
        "crates/lethedb-query/src/eval.rs",
        "eval",
        "one arm per expression kind: how each treats undefined and null, side by side",
    ),
    (
        "crates/lethedb-query/src/functions/arrays.rs",
        "call",
        "one arm per built-in array function",
    ),
    (
        "crates/lethedb-query/src/functions/strings.rs",
        "call",
        "one arm per built-in string function",
    ),
    (
        "crates/lethedb-query/src/functions/math.rs",
        "call",
        "one arm per built-in math function",
    ),
    (
        "crates/lethedb-query/src/functions/dates.rs",
        "call",
        "one arm per built-in date and time function",
    ),
    (
        "crates/lethedb-query/src/functions/types.rs",
        "call",
        "one arm per built-in type-checking function",
    ),
    (
        "crates/lethedb-query/src/ast.rs",
        "fmt",
        "the syntax tree printed back as query text: one arm per node kind",
    ),
    (
        "crates/lethedb-query/src/parser.rs",
        "*",
        "the hand-written grammar reads best whole (it is also exempt from the file cap)",
    ),
    (
        "crates/lethedb-engine/src/error.rs",
        "default_message",
        "one arm per error code: each code's message as the service words it, side by side",
    ),
];

/// A function's name, its first line and its length in lines.
pub fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let chars: Vec<char> = library_text(text).chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + 3 < chars.len() {
        let keyword = chars[i..i + 2] == ['f', 'n']
            && chars[i + 2].is_whitespace()
            && (i == 0 || !is_word(chars[i - 1]));
        if !keyword {
            i += 1;
            continue;
        }
        let name: String = chars[i + 2..]
            .iter()
            .skip_while(|c| c.is_whitespace())
            .take_while(|&&c| is_word(c))
            .collect();
        if let Some(open) = body_start(&chars, i + 2) {
            let first = line_of(&chars, i);
            let last = line_of(&chars, closing(&chars, open));
            found.push((name, first, last - first + 1));
        }
        i += 2;
    }
    found
}

/// Where a function's body opens, or `None` for a declaration without one (`fn f();`).
fn body_start(chars: &[char], from: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            ';' => return None,
            '{' => return Some(i),
            '(' | '[' => i = closing(chars, i) + 1,
            _ => i += 1,
        }
    }
    None
}

/// Whether the allow-list entry `(file, function, _)` names this function.
fn allows(entry: &(&str, &str, &str), shown: &str, name: &str) -> bool {
    let (file, function, _) = entry;
    shown.ends_with(file) && (*function == "*" || *function == name)
}

/// The functions of one file over the limit: those the allow-list does not name, and the
/// allow-list entries that named one.
fn too_long(shown: &str, text: &str) -> (Vec<String>, Vec<usize>) {
    let mut long = Vec::new();
    let mut used = Vec::new();
    for (name, line, lines) in functions(text) {
        if lines <= FUNCTION_LINES_MAX {
            continue;
        }
        match LONG_FUNCTIONS_ALLOWED
            .iter()
            .position(|entry| allows(entry, shown, &name))
        {
            Some(entry) => used.push(entry),
            None => long.push(format!("{shown}:{line} `{name}` ({lines} lines)")),
        }
    }
    (long, used)
}

#[test]
fn no_library_function_is_longer_than_the_limit() {
    let mut long = Vec::new();
    let mut used = Vec::new();
    for path in library_files() {
        let (found, allowed) = too_long(&shown(&path), &read(&path));
        long.extend(found);
        used.extend(allowed);
    }
    assert!(
        long.is_empty(),
        "library functions over {FUNCTION_LINES_MAX} lines; split each by phase into named \
         helpers (the allow-list in tidy/functions.rs is for exhaustive dispatch only): {long:#?}"
    );
    let stale: Vec<_> = LONG_FUNCTIONS_ALLOWED
        .iter()
        .enumerate()
        .filter(|(at, _)| !used.contains(at))
        .map(|(_, (file, function, _))| format!("{file} `{function}`"))
        .collect();
    assert!(
        stale.is_empty(),
        "the allow-list names functions that are no longer long; remove them: {stale:#?}"
    );
}

/// Where a file's library code switches a clippy lint off with `allow`.
fn clippy_allows(shown: &str, text: &str) -> Vec<String> {
    let chars: Vec<char> = library_text(text).chars().collect();
    let code: String = chars.iter().collect();
    code.match_indices("allow(clippy::")
        .map(|(at, _)| {
            let line = line_of(&chars, code[..at].chars().count());
            format!("{shown}:{line}")
        })
        .collect()
}

#[test]
fn no_library_code_allows_a_clippy_lint() {
    let mut found = Vec::new();
    for path in library_files() {
        found.extend(clippy_allows(&shown(&path), &read(&path)));
    }
    assert!(
        found.is_empty(),
        "library code switches clippy lints off; give the code a better shape, or where that \
         is impossible write `#[expect(clippy::…, reason = \"…\")]`: {found:#?}"
    );
}

#[test]
fn the_function_rules_see_a_long_function_and_an_allowed_lint() {
    let body = "    let x = 1;\n".repeat(FUNCTION_LINES_MAX);
    let text = format!(
        "//! planted\n/// A doc line.\n#[inline]\npub fn long(a: [u8; 2]) -> u8 {{\n{body}    \
         a[0]\n}}\n\nfn short() -> char {{\n    '{{'\n}}\n\ntrait T {{\n    fn declared(&self);\n}}\n\
         #[{}(clippy::unwrap_used)]\nfn lint() {{}}\n\n#[cfg(test)]\nmod tests {{\n    \
         #[{}(clippy::unwrap_used)]\n    fn long_test() {{\n{body}    }}\n}}\n",
        "allow", "allow"
    );
    let shown = "planted.rs";
    assert_eq!(
        too_long(shown, &text).0,
        [format!(
            "planted.rs:4 `long` ({} lines)",
            FUNCTION_LINES_MAX + 3
        )]
    );
    assert_eq!(
        functions(&text)
            .iter()
            .map(|(name, _, _)| name.as_str())
            .collect::<Vec<_>>(),
        ["long", "short", "lint"],
        "a declaration has no body and test code is not library code"
    );
    assert_eq!(
        clippy_allows(shown, &text),
        vec!["planted.rs:95".to_string()]
    );
    // The allow-list names a file and a function: the same function elsewhere is not exempt.
    let eval = text.replace("fn long", "fn eval");
    assert_eq!(
        too_long("crates/lethedb-query/src/eval.rs", &eval),
        (vec![], vec![0])
    );
    assert_eq!(too_long("crates/other/src/eval.rs", &eval).0.len(), 1);
}
