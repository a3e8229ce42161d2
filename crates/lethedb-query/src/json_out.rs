//! Compact JSON text of a value, byte for byte what `serde_json::to_vec` writes (members in
//! their order, numbers as serde_json spells them, the same escapes), faster for long strings:
//! serde_json looks each byte of a string up in a table, one at a time, while this checks
//! sixteen bytes at once and copies runs that need no escape whole. A stored item's body is
//! written here on every create and replace, and query rows on every page.

use serde_json::Value;
use std::io::Write;

/// How many bytes of a string one check covers; a whole chunk without an escape is copied as
/// one run. Sixteen lets the compiler check a chunk with vector compares.
const CHUNK_BYTES: usize = 16;

/// The compact JSON text of `value`, in a buffer sized once from a walk of the value (a walk
/// costs far less than the text's copies as a growing buffer doubles).
pub fn to_json_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(text_bytes_estimate(value));
    write_json(&mut out, value);
    out
}

/// About how long `value`'s text is: exact but for escapes and numbers (counted as 24 bytes,
/// room for any of them).
fn text_bytes_estimate(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(text) => text.len() + 2,
        Value::Array(items) => {
            1 + items
                .iter()
                .map(|item| text_bytes_estimate(item) + 1)
                .sum::<usize>()
        }
        Value::Object(members) => {
            1 + members
                .iter()
                .map(|(name, member)| name.len() + 4 + text_bytes_estimate(member))
                .sum::<usize>()
        }
    }
}

/// Appends the compact JSON text of `value` to `out`.
pub fn write_json(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // `Number`'s Display is serde_json's own spelling (the serializer's integer and float
        // writers); writing into a vector cannot fail.
        Value::Number(number) => {
            let _ = write!(out, "{number}");
        }
        Value::String(text) => write_json_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                write_json(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (at, (name, member)) in members.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                write_json_str(out, name);
                out.push(b':');
                write_json(out, member);
            }
            out.push(b'}');
        }
    }
}

/// Appends `text` as a JSON string, quotes included.
pub fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut run_start = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(chunk) = bytes
            .get(at..at + CHUNK_BYTES)
            .and_then(|chunk| <&[u8; CHUNK_BYTES]>::try_from(chunk).ok())
        {
            // A fixed-size chunk with no early exit: the compiler checks it with vector compares.
            if !chunk
                .iter()
                .fold(false, |seen, &byte| seen | needs_escape(byte))
            {
                at += CHUNK_BYTES;
                continue;
            }
        }
        let byte = bytes[at];
        if needs_escape(byte) {
            out.extend_from_slice(&bytes[run_start..at]);
            write_escape(out, byte);
            run_start = at + 1;
        }
        at += 1;
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The escape serde_json writes for `byte` (one that `needs_escape`).
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0C => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX_DIGITS[usize::from(byte >> 4)],
                HEX_DIGITS[usize::from(byte & 0xF)],
            ]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_serde_json(value: &Value) {
        let ours = to_json_vec(value);
        let theirs = serde_json::to_vec(value).expect("a value serializes");
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        );
    }

    #[test]
    fn every_character_that_needs_an_escape_is_escaped_as_serde_json_does() {
        for byte in 0u8..0x80 {
            let one = char::from(byte).to_string();
            same_as_serde_json(&Value::String(one.clone()));
            // The same character at every offset of a string longer than two chunks, so both
            // the chunked check and the byte-at-a-time tail meet it.
            for offset in 0..40 {
                let mut text = "é".repeat(3) + &"x".repeat(offset);
                text.push_str(&one);
                text.push_str(&"y".repeat(40 - offset));
                same_as_serde_json(&Value::String(text.clone()));
                same_as_serde_json(&json!({ text.clone(): 1 }));
            }
        }
    }

    #[test]
    fn long_strings_with_many_escapes_and_non_ascii_text() {
        let text: String = (0..2000)
            .map(|at| match at % 7 {
                0 => '"',
                1 => '\\',
                2 => '\u{1}',
                3 => '€',
                4 => '😀',
                5 => '\n',
                _ => 'a',
            })
            .collect();
        same_as_serde_json(&Value::String(text));
        same_as_serde_json(&Value::String("\u{7f}\u{2028}\u{2029}/".into()));
    }

    /// A deterministic stream of random values (splitmix64), nested a few levels, with strings
    /// drawn from characters that need escapes, ASCII, and multi-byte ones.
    struct Values(u64);

    impl Values {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn text(&mut self) -> String {
            const PARTS: [&str; 12] = [
                "a", "Z", " ", "\"", "\\", "\n", "\u{0}", "\u{1f}", "\u{7f}", "é", "€", "😀",
            ];
            let length = self.next() % 70;
            (0..length)
                .map(|_| PARTS[(self.next() % PARTS.len() as u64) as usize])
                .collect()
        }

        fn value(&mut self, depth: u32) -> Value {
            match self.next() % if depth > 3 { 5 } else { 7 } {
                0 => Value::Null,
                1 => Value::Bool(self.next().is_multiple_of(2)),
                2 => Value::from(self.next() as i64),
                3 => Value::from(f64::from_bits(self.next() % 0x7FE0_0000_0000_0000)),
                4 => Value::String(self.text()),
                5 => Value::Array(
                    (0..self.next() % 5)
                        .map(|_| self.value(depth + 1))
                        .collect(),
                ),
                _ => Value::Object(
                    (0..self.next() % 5)
                        .map(|_| (self.text(), self.value(depth + 1)))
                        .collect(),
                ),
            }
        }
    }

    #[test]
    fn random_values_are_written_as_serde_json_writes_them() {
        let mut values = Values(42);
        for _ in 0..3000 {
            same_as_serde_json(&values.value(0));
        }
    }

    #[test]
    fn numbers_structures_and_member_order_are_serde_jsons() {
        same_as_serde_json(&json!({
            "z": 1, "a": -7, "m": 1.5, "big": u64::MAX, "small": i64::MIN,
            "tiny": 1e-300, "huge": 1.7976931348623157e308, "whole": 3.0, "neg_zero": -0.0,
            "nested": [[], {}, [null, true, false, {"k": [1, "two", 3.25]}]],
            "": "", "empty": {}
        }));
        same_as_serde_json(&json!([]));
        same_as_serde_json(&json!(null));
        same_as_serde_json(&json!("plain"));
    }
}
