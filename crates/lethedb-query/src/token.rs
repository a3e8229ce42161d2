//! Continuation tokens: where a page ended, as opaque text the client sends back.
//!
//! A token is the text of a small JSON object, non-ASCII escaped so that it fits an HTTP header,
//! as the service's cross-partition tokens are JSON text (a client may parse one); tokens written
//! before, base64url (no padding) of the same object, are still read. It carries a fingerprint of
//! the query and its parameters (what it covers is `prepared.rs`'s `fingerprints`), so a token
//! from another query is refused instead of silently resuming at a wrong place. Decoding never panics: damaged text is `InvalidContinuation`.
//! This module knows nothing of how positions are used; `paging.rs` does.

use serde_json::{json, Value};

use crate::error::QueryError;

/// The longest token accepted. Tokens hold sort values of one row, which stay small for any
/// sensible ORDER BY; anything longer is damaged or hostile.
pub const CONTINUATION_CHARS_MAX: usize = 64 * 1024;

const TOKEN_VERSION: u64 = 1;

/// The key the version is written under. Not `v`: the Python SDK (4.17) takes any
/// continuation that is standard base64 of a JSON object with a `v` as its own feed-range
/// token and refuses it ("'cr' is required"), and a base64url token without `-`, `_` or a short
/// tail is standard base64 too. Tokens written before, under `v`, are still read.
const VERSION_KEY: &str = "lv";

/// The position of one row in the ORDER BY stream: its sort values, then its document's
/// tie-breaker (the document number the engine pushed it with, else its storage key) and its
/// row index within the document (JOIN fan-out).
#[derive(Debug, Clone, PartialEq)]
pub struct OrderedPosition {
    pub sort: Vec<Option<Value>>,
    pub tie: Vec<u8>,
    pub row: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Position {
    /// Resume the scan after `after`; in the document whose key is `at`, skip rows with a
    /// fan-out index below `skip`. `produced` results came before (for OFFSET/LIMIT/TOP).
    /// `space` names which of the engine's orders the keys are in (0: its default).
    Stream {
        after: Option<Vec<u8>>,
        at: Option<Vec<u8>>,
        skip: u64,
        produced: u64,
        space: u64,
    },
    /// Re-scan everything, keeping only rows ordered after `last`.
    Ordered {
        last: Option<OrderedPosition>,
        produced: u64,
    },
    /// Re-compute the whole result and continue at `index`.
    Materialized { index: u64 },
}

/// FNV-1a: a stable 64-bit fingerprint of the query text and parameters. It needs no
/// cryptographic strength: it only catches tokens used with the wrong query by mistake.
pub fn fingerprint(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.iter().chain(&[0xff]) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(text.get(index..index + 2)?, 16).ok())
        .collect()
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Tokens are no longer written in base64; the tests still write old ones.
#[cfg(test)]
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let buffer = chunk.iter().enumerate().fold(0u32, |total, (index, byte)| {
            total | u32::from(*byte) << (16 - 8 * index)
        });
        for index in 0..=chunk.len() {
            out.push(char::from(
                BASE64_ALPHABET[(buffer >> (18 - 6 * index) & 63) as usize],
            ));
        }
    }
    out
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for character in text.bytes() {
        let digit = BASE64_ALPHABET
            .iter()
            .position(|candidate| *candidate == character)? as u32;
        buffer = buffer << 6 | digit;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits & 0xff) as u8);
        }
    }
    // Leftover bits must be padding zeros of a canonical encoding.
    (bits < 6 && buffer & ((1 << bits) - 1) == 0).then_some(out)
}

fn sort_to_json(sort: &[Option<Value>]) -> Value {
    // Undefined is `[]`, a value `v` is `[v]`: JSON has no undefined of its own.
    Value::Array(
        sort.iter()
            .map(|value| Value::Array(value.iter().cloned().collect()))
            .collect(),
    )
}

pub fn encode(query_fingerprint: u64, position: &Position) -> String {
    let mut object = json!({VERSION_KEY: TOKEN_VERSION, "f": format!("{query_fingerprint:016x}")});
    let fields = match position {
        Position::Stream {
            after,
            at,
            skip,
            produced,
            space,
        } => {
            let mut fields = json!({
                "m": "s",
                "a": after.as_deref().map(hex),
                "t": at.as_deref().map(hex),
                "k": skip,
                "p": produced,
            });
            // The default space is left out, so its tokens read as they always did.
            if *space != 0 {
                fields["x"] = json!(space);
            }
            fields
        }
        Position::Ordered { last, produced } => json!({
            "m": "o",
            "l": last.as_ref().map(|last| json!({"s": sort_to_json(&last.sort), "k": hex(&last.tie), "r": last.row})),
            "p": produced,
        }),
        Position::Materialized { index } => json!({"m": "a", "i": index}),
    };
    if let (Value::Object(target), Value::Object(source)) = (&mut object, fields) {
        target.extend(source);
    }
    ascii_json(&object.to_string())
}

/// JSON text with every non-ASCII character written as `\uXXXX` (UTF-16 units): outside strings
/// JSON text is ASCII already, so the result means the same and is a valid header value.
fn ascii_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut units = [0u16; 2];
    for character in text.chars() {
        if character.is_ascii() {
            out.push(character);
        } else {
            for unit in character.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The JSON object a token's text holds: the text itself, or (a token written before tokens
/// were JSON text) base64url of it.
fn token_object(text: &str) -> Result<Value, QueryError> {
    let text = text.trim();
    let parsed = if text.starts_with('{') {
        serde_json::from_str(text).ok()
    } else {
        base64_decode(text).and_then(|bytes| serde_json::from_slice(&bytes).ok())
    };
    match parsed {
        Some(object @ Value::Object(_)) => Ok(object),
        _ => Err(invalid("not a token of this server")),
    }
}

fn invalid(reason: &str) -> QueryError {
    QueryError::InvalidContinuation(reason.to_string())
}

fn optional_key(value: &Value) -> Result<Option<Vec<u8>>, QueryError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => unhex(text)
            .map(Some)
            .ok_or_else(|| invalid("malformed key")),
        _ => Err(invalid("malformed key")),
    }
}

fn count(value: &Value) -> Result<u64, QueryError> {
    value.as_u64().ok_or_else(|| invalid("malformed count"))
}

pub fn decode(text: &str, query_fingerprint: u64) -> Result<Position, QueryError> {
    if text.len() > CONTINUATION_CHARS_MAX {
        return Err(invalid("the token is too long"));
    }
    let object = token_object(text)?;
    let version = object.get(VERSION_KEY).or_else(|| object.get("v"));
    if version.and_then(Value::as_u64) != Some(TOKEN_VERSION) {
        return Err(invalid("unknown token version"));
    }
    if object.get("f").and_then(Value::as_str) != Some(format!("{query_fingerprint:016x}").as_str())
    {
        return Err(invalid(
            "the token belongs to a different query or parameters",
        ));
    }
    let field = |name: &str| object.get(name).unwrap_or(&Value::Null);
    match field("m").as_str() {
        Some("s") => Ok(Position::Stream {
            after: optional_key(field("a"))?,
            at: optional_key(field("t"))?,
            skip: count(field("k"))?,
            produced: count(field("p"))?,
            space: match field("x") {
                Value::Null => 0,
                space => count(space)?,
            },
        }),
        Some("o") => {
            let last = match field("l") {
                Value::Null => None,
                last => {
                    let sort = match last.get("s") {
                        Some(Value::Array(items)) => items
                            .iter()
                            .map(|item| match item.as_array().map(Vec::as_slice) {
                                Some([]) => Ok(None),
                                Some([value]) => Ok(Some(value.clone())),
                                _ => Err(invalid("malformed sort value")),
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                        _ => return Err(invalid("malformed sort values")),
                    };
                    let tie = optional_key(last.get("k").unwrap_or(&Value::Null))?
                        .ok_or_else(|| invalid("missing key"))?;
                    let row = count(last.get("r").unwrap_or(&Value::Null))?;
                    Some(OrderedPosition { sort, tie, row })
                }
            };
            Ok(Position::Ordered {
                last,
                produced: count(field("p"))?,
            })
        }
        Some("a") => Ok(Position::Materialized {
            index: count(field("i"))?,
        }),
        _ => Err(invalid("unknown token kind")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_never_the_python_sdks_feed_range_token_and_old_ones_still_read() {
        let position = Position::Materialized { index: 7 };
        let text = encode(3, &position);
        let object: Value = serde_json::from_str(&text).expect("JSON");
        assert!(object.get("v").is_none(), "{object}");
        let old_base64 = base64_encode(object.to_string().as_bytes());
        assert!(matches!(
            decode(&old_base64, 3),
            Ok(Position::Materialized { index: 7 })
        ));
        let old = base64_encode(
            json!({"v": 1, "f": format!("{:016x}", 3), "m": "a", "i": 7})
                .to_string()
                .as_bytes(),
        );
        assert!(matches!(
            decode(&old, 3),
            Ok(Position::Materialized { index: 7 })
        ));
    }

    #[test]
    fn a_token_is_json_text_in_ascii_that_a_client_can_parse() {
        let position = Position::Ordered {
            last: Some(OrderedPosition {
                sort: vec![Some(json!("zoë 𝄞 \"quoted\""))],
                tie: vec![1, 2],
                row: 0,
            }),
            produced: 2,
        };
        let text = encode(5, &position);
        assert!(text.starts_with('{'), "{text}");
        assert!(
            text.bytes().all(|byte| (0x20..0x7f).contains(&byte)),
            "{text}"
        );
        let object: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(object["l"]["s"], json!([["zoë 𝄞 \"quoted\""]]));
        assert_eq!(decode(&text, 5), Ok(position));
        for garbage in ["{", "{}", "[1]", "{\"lv\": 1}"] {
            assert!(
                matches!(decode(garbage, 5), Err(QueryError::InvalidContinuation(_))),
                "{garbage}"
            );
        }
    }

    #[test]
    fn base64_round_trips_every_length() {
        for length in 0..20 {
            let bytes: Vec<u8> = (0..length).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(base64_decode(&base64_encode(&bytes)), Some(bytes));
        }
        assert_eq!(base64_decode("A"), None);
        assert_eq!(base64_decode("a+b"), None);
    }

    #[test]
    fn tokens_round_trip_and_refuse_other_queries() {
        let positions = [
            Position::Stream {
                after: Some(vec![0, 255]),
                at: None,
                skip: 3,
                produced: 9,
                space: 0,
            },
            Position::Stream {
                after: Some(vec![1]),
                at: Some(vec![2]),
                skip: 0,
                produced: 1,
                space: 1,
            },
            Position::Ordered {
                last: Some(OrderedPosition {
                    sort: vec![None, Some(json!({"a": [1]}))],
                    tie: vec![7],
                    row: 2,
                }),
                produced: 4,
            },
            Position::Materialized { index: 12 },
        ];
        for position in positions {
            let token = encode(42, &position);
            assert_eq!(decode(&token, 42), Ok(position));
            assert!(matches!(
                decode(&token, 43),
                Err(QueryError::InvalidContinuation(_))
            ));
        }
        for garbage in [
            "",
            "!!!",
            "eyJ2IjoxfQ",
            "bm90IGpzb24",
            &"A".repeat(CONTINUATION_CHARS_MAX + 1),
        ] {
            assert!(
                matches!(decode(garbage, 42), Err(QueryError::InvalidContinuation(_))),
                "{garbage}"
            );
        }
    }
}
