//! Rust source as the tidy rules read it: comments, strings and character literals blanked
//! out (so a brace or a keyword inside them is not code), items under `#[cfg(test)]` blanked
//! too, and line breaks kept, so a position still names its line.
//!
//! This is a scanner, not a parser: it knows literals, comments and balanced brackets, which is
//! all the rules need. It does not expand macros or resolve names.

/// Whether a character can be part of an identifier.
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` with every comment and every string, byte-string and character literal replaced by
/// spaces (line breaks kept). A literal keeps its quotes, so `""` still reads as an expression.
pub fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = chars.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in out.iter_mut().take(to).skip(from) {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let previous_is_word = i > 0 && is_word(chars[i - 1]);
        let end = match chars[i] {
            '/' if chars.get(i + 1) == Some(&'/') => line_end(&chars, i),
            '/' if chars.get(i + 1) == Some(&'*') => block_comment_end(&chars, i),
            '"' => quoted_end(&chars, i + 1, '"'),
            'r' | 'b' if !previous_is_word => match raw_string_start(&chars, i) {
                Some((body, hashes)) => raw_string_end(&chars, body, hashes),
                None => i + 1,
            },
            '\'' => char_literal_end(&chars, i).unwrap_or(i + 1),
            _ => i + 1,
        };
        if end > i + 1 {
            blank(&mut out, i, end);
            if chars[i] == '"' || chars[i] == '\'' {
                out[i] = chars[i];
                out[end - 1] = chars[end - 1];
            }
        }
        i = end;
    }
    out.into_iter().collect()
}

fn line_end(chars: &[char], from: usize) -> usize {
    chars[from..]
        .iter()
        .position(|&c| c == '\n')
        .map_or(chars.len(), |at| from + at)
}

fn block_comment_end(chars: &[char], from: usize) -> usize {
    let (mut depth, mut i) = (0usize, from);
    while i + 1 < chars.len() {
        match (chars[i], chars[i + 1]) {
            ('/', '*') => {
                depth += 1;
                i += 2;
            }
            ('*', '/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// The index just past the closing `quote` of a literal whose body starts at `from`.
fn quoted_end(chars: &[char], from: usize, quote: char) -> usize {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// For `r"`, `r#"`, `br"` or `b"` at `at`: where the body starts and how many `#` close it.
fn raw_string_start(chars: &[char], at: usize) -> Option<(usize, usize)> {
    let mut i = at;
    if chars[i] == 'b' {
        i += 1;
        if chars.get(i) == Some(&'"') {
            // A byte string escapes like a string: its end is found as for `"`.
            return Some((i + 1, usize::MAX));
        }
        if chars.get(i) == Some(&'\'') {
            return None;
        }
    }
    if chars.get(i) != Some(&'r') {
        return None;
    }
    i += 1;
    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
    (chars.get(i + hashes) == Some(&'"')).then_some((i + hashes + 1, hashes))
}

fn raw_string_end(chars: &[char], body: usize, hashes: usize) -> usize {
    if hashes == usize::MAX {
        return quoted_end(chars, body, '"');
    }
    let mut i = body;
    while i < chars.len() {
        if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&c| c == '#') {
            return (i + 1 + hashes).min(chars.len());
        }
        i += 1;
    }
    chars.len()
}

/// The end of a character literal at `at`, or `None` for a lifetime (`'a`) or a label.
fn char_literal_end(chars: &[char], at: usize) -> Option<usize> {
    match chars.get(at + 1)? {
        '\\' => Some(quoted_end(chars, at + 1, '\'')),
        _ if chars.get(at + 2) == Some(&'\'') => Some(at + 3),
        _ => None,
    }
}

/// The index of the bracket that closes the one at `open` (`{`, `(` or `[`), in blanked text.
pub fn closing(chars: &[char], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    chars.len().saturating_sub(1)
}

/// Where the item starting at `from` ends (inclusive): its first `;` (or, for a field, `,`)
/// outside brackets, the brace that closes its body, or the end of the block it is in.
pub fn item_end(chars: &[char], from: usize) -> usize {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            ';' | ',' => return i,
            '}' => return i.saturating_sub(1),
            '(' | '[' => i = closing(chars, i) + 1,
            '{' => return closing(chars, i),
            _ => i += 1,
        }
    }
    chars.len().saturating_sub(1)
}

/// Blanked text (see [`blank_literals`]) with every item under `#[cfg(test)]` blanked too: the
/// library part of a file.
pub fn library_text(text: &str) -> String {
    let mark: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut chars: Vec<char> = blank_literals(text).chars().collect();
    let mut at = 0;
    while at + mark.len() <= chars.len() {
        if chars[at..at + mark.len()] != mark[..] {
            at += 1;
            continue;
        }
        let end = item_end(&chars, at + mark.len());
        for c in &mut chars[at..=end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        at = end + 1;
    }
    chars.into_iter().collect()
}

/// The 1-based line of the character at `at`.
pub fn line_of(chars: &[char], at: usize) -> usize {
    chars[..at].iter().filter(|&&c| c == '\n').count() + 1
}

/// Removes white space except a single space between two words (as in `Name as Other`).
pub fn squeeze(text: &str) -> String {
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
