//! The byte image of the language's sort order: a value encoded so that comparing two encodings
//! bytewise (`memcmp`) gives what `value::total_order` gives for the values, which lets an
//! ordered key-value store keep index entries in the order queries ask for.
//!
//! Each encoding starts with a type tag in the service's cross-type order (undefined < null <
//! false < true < numbers < strings < arrays < objects) and is prefix-free, so encodings can be
//! concatenated (composite indexes) and complemented byte by byte (descending components) without
//! changing the order of what follows. Numbers are the double the language compares, with the
//! sign bit flipped (all bits for negatives) so the bytes sort as the numbers do. Strings, and
//! arrays and objects by their canonical text (the order `total_order` uses for them), are
//! escaped (`0x00` becomes `0x00 0xFF`) and end with `0x00 0x01`; one longer than
//! `SORT_KEY_TEXT_BYTES_MAX` is cut after that many bytes and ends with `0x00 0x02`, so it sorts
//! after every shorter text it starts with and equal to every other text that shares the kept
//! prefix: such an encoding only narrows a search, and the caller re-checks the value itself.
//! Nothing here knows storage or indexing policies.

use serde_json::Value;

use crate::value::{as_number, canonical_key};

/// The most bytes of a string's (or a container's canonical) text an encoding keeps.
pub const SORT_KEY_TEXT_BYTES_MAX: usize = 128;

const TAG_UNDEFINED: u8 = 0x01;
const TAG_NULL: u8 = 0x02;
const TAG_FALSE: u8 = 0x03;
const TAG_TRUE: u8 = 0x04;
const TAG_NUMBER: u8 = 0x05;
const TAG_STRING: u8 = 0x06;
const TAG_ARRAY: u8 = 0x07;
const TAG_OBJECT: u8 = 0x08;
/// The tag after the last: every encoding is below `[TAG_END]`.
const TAG_END: u8 = 0x09;

const TEXT_COMPLETE: [u8; 2] = [0x00, 0x01];
const TEXT_CUT: [u8; 2] = [0x00, 0x02];

/// Appends the sort key of `value` (`None` is undefined) to `out`; returns whether the encoding
/// is exact (`false` when a text was cut, so equal encodings may be different values).
pub fn encode_sort_key(value: Option<&Value>, out: &mut Vec<u8>) -> bool {
    match value {
        None => out.push(TAG_UNDEFINED),
        Some(Value::Null) => out.push(TAG_NULL),
        Some(Value::Bool(false)) => out.push(TAG_FALSE),
        Some(Value::Bool(true)) => out.push(TAG_TRUE),
        Some(Value::Number(_)) => {
            out.push(TAG_NUMBER);
            out.extend_from_slice(&number_bytes(as_number(value.unwrap_or(&Value::Null))));
        }
        Some(Value::String(text)) => {
            out.push(TAG_STRING);
            return push_text(text, out);
        }
        Some(Value::Array(_)) => {
            out.push(TAG_ARRAY);
            return push_text(&canonical_key(value), out);
        }
        Some(Value::Object(_)) => {
            out.push(TAG_OBJECT);
            return push_text(&canonical_key(value), out);
        }
    }
    true
}

/// Whether one sort key (as `encode_sort_key` wrote it) encodes its value exactly: not a text,
/// array or object cut at `SORT_KEY_TEXT_BYTES_MAX` bytes.
pub fn sort_key_is_exact(key: &[u8]) -> bool {
    let texts = [TAG_STRING, TAG_ARRAY, TAG_OBJECT];
    !(key.first().is_some_and(|tag| texts.contains(tag)) && key.ends_with(&TEXT_CUT))
}

/// The length of the sort key that starts `bytes` (stored complemented when `complemented`, as
/// a descending composite component is) and whether it is exact; `None` when malformed. What
/// lets a reader of a composite entry find where each component's key ends.
pub fn sort_key_extent(bytes: &[u8], complemented: bool) -> Option<(usize, bool)> {
    let at = |index: usize| {
        bytes
            .get(index)
            .map(|byte| if complemented { !byte } else { *byte })
    };
    match at(0)? {
        TAG_UNDEFINED..=TAG_TRUE => Some((1, true)),
        TAG_NUMBER => (bytes.len() >= 9).then_some((9, true)),
        TAG_STRING | TAG_ARRAY | TAG_OBJECT => {
            let mut index = 1;
            loop {
                if at(index)? != 0x00 {
                    index += 1;
                    continue;
                }
                match at(index + 1)? {
                    0xFF => index += 2,
                    0x01 => return Some((index + 2, true)),
                    0x02 => return Some((index + 2, false)),
                    _ => return None,
                }
            }
        }
        _ => None,
    }
}

/// The value a sort key stands for, when the key alone says it exactly: null, a boolean, or a
/// text that was not cut. `None` for undefined, numbers (a key keeps a number's value, not its
/// spelling: `1` and `1.0` share it), arrays, objects, cut texts and anything malformed.
pub fn decode_scalar_key(key: &[u8]) -> Option<Value> {
    let (tag, rest) = key.split_first()?;
    match *tag {
        TAG_NULL if rest.is_empty() => Some(Value::Null),
        TAG_FALSE if rest.is_empty() => Some(Value::Bool(false)),
        TAG_TRUE if rest.is_empty() => Some(Value::Bool(true)),
        TAG_STRING => {
            let text = rest.strip_suffix(&TEXT_COMPLETE)?;
            let mut bytes = Vec::with_capacity(text.len());
            let mut at = 0;
            while let Some(&byte) = text.get(at) {
                bytes.push(byte);
                // An escaped zero is followed by 0xFF; a lone zero would have ended the text.
                at += if byte == 0x00 {
                    (text.get(at + 1) == Some(&0xFF)).then_some(2)?
                } else {
                    1
                };
            }
            String::from_utf8(bytes).ok().map(Value::String)
        }
        _ => None,
    }
}

/// The eight bytes of a number's sort key (its tag aside). `-0.0` sorts as `0.0`, as the
/// language compares them equal.
pub fn number_bytes(number: Option<f64>) -> [u8; 8] {
    let number = number.unwrap_or(0.0);
    let number = if number == 0.0 { 0.0 } else { number };
    let bits = number.to_bits();
    let ordered = if bits >> 63 == 0 {
        bits | (1 << 63)
    } else {
        !bits
    };
    ordered.to_be_bytes()
}

fn push_text(text: &str, out: &mut Vec<u8>) -> bool {
    // Cut at a byte count, not a character boundary: a cut at a boundary would keep fewer
    // bytes of some texts than of others, and a shorter cut could then sort before a longer one
    // that the whole texts sort after.
    let end = text.len().min(SORT_KEY_TEXT_BYTES_MAX);
    for &byte in &text.as_bytes()[..end] {
        out.push(byte);
        if byte == 0x00 {
            out.push(0xFF);
        }
    }
    let complete = end == text.len();
    out.extend_from_slice(if complete { &TEXT_COMPLETE } else { &TEXT_CUT });
    complete
}

/// The bounds of every sort key of one type, by the type's rank in `value::type_rank`
/// (0 undefined … 6 object): `[start, end)` in bytes.
pub fn type_bounds(rank: u8) -> (Vec<u8>, Vec<u8>) {
    let first = match rank {
        0 => TAG_UNDEFINED,
        1 => TAG_NULL,
        2 => TAG_FALSE,
        3 => TAG_NUMBER,
        4 => TAG_STRING,
        5 => TAG_ARRAY,
        6 => TAG_OBJECT,
        _ => TAG_END,
    };
    // Booleans span two tags.
    let end = if rank == 2 { TAG_NUMBER } else { first + 1 };
    (vec![first], vec![end])
}

/// The prefix every string sort key starting with `prefix` begins with (for STARTSWITH): the
/// string tag and the escaped text, without a terminator (cut to the kept length).
pub fn string_prefix_key(prefix: &str) -> Vec<u8> {
    let mut out = vec![TAG_STRING];
    push_text(prefix, &mut out);
    // Drop the terminator: the keys of longer strings continue where it was.
    out.truncate(out.len() - 2);
    out
}

/// The complement of a sort key, for a descending component: the order of complemented keys is
/// the reverse of the order of the keys, and stays prefix-free.
pub fn complement(key: &mut [u8]) {
    for byte in key {
        *byte = !*byte;
    }
}

#[cfg(test)]
mod tests;
