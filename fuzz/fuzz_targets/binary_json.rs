//! Fuzzes the Cosmos binary JSON decoder (request bodies the Rust SDK sends): any bytes, with
//! the preamble `0x80` put in front when they lack it, decode to text or to an error at an
//! offset inside the buffer, never a panic; and:
//! - decoded text is JSON that `serde_json` parses (nesting within its limit), no longer than
//!   the decoder's text limit;
//! - the parsed value, encoded again in the verbose forms and decoded, gives the same value.

#![no_main]

use lethedb_server::binary_json::{to_json_text, Problem, PREAMBLE, TEXT_BYTES_MAX};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The verbose forms: 64-bit integers, doubles, 4-byte-length strings and containers.
fn encode(value: &Value, out: &mut Vec<u8>) {
    let string = |text: &str, out: &mut Vec<u8>| {
        out.push(0xC2);
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    };
    match value {
        Value::Null => out.push(0xD0),
        Value::Bool(flag) => out.push(if *flag { 0xD2 } else { 0xD1 }),
        Value::Number(number) => {
            if let Some(integer) = number.as_i64() {
                out.push(0xCB);
                out.extend_from_slice(&integer.to_le_bytes());
            } else if let Some(unsigned) = number.as_u64() {
                out.push(0xC7);
                out.extend_from_slice(&unsigned.to_le_bytes());
            } else {
                out.push(0xCC);
                out.extend_from_slice(&number.as_f64().unwrap_or(0.0).to_le_bytes());
            }
        }
        Value::String(text) => string(text, out),
        Value::Array(items) => {
            let mut payload = Vec::new();
            items.iter().for_each(|item| encode(item, &mut payload));
            out.push(0xE4);
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&payload);
        }
        Value::Object(members) => {
            let mut payload = Vec::new();
            for (name, member) in members {
                string(name, &mut payload);
                encode(member, &mut payload);
            }
            out.push(0xEC);
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&payload);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut buffer = Vec::with_capacity(data.len() + 1);
    if data.first() != Some(&PREAMBLE) {
        buffer.push(PREAMBLE);
    }
    buffer.extend_from_slice(data);
    let text = match to_json_text(&buffer) {
        Ok(text) => text,
        Err(error) => {
            assert!(
                error.offset <= buffer.len() || error.problem == Problem::TooLarge,
                "{error} in a buffer of {}",
                buffer.len()
            );
            return;
        }
    };
    assert!(text.len() <= TEXT_BYTES_MAX + 64 * 1024, "text of {}", text.len());
    let value: Value = serde_json::from_slice(&text).unwrap_or_else(|error| {
        panic!("decoded text does not parse: {error}: {}", String::from_utf8_lossy(&text))
    });
    let mut again = vec![PREAMBLE];
    encode(&value, &mut again);
    let round = to_json_text(&again).expect("the verbose encoding of decoded text decodes");
    // Compared as values: a duplicated name is one member once parsed.
    let round: Value = serde_json::from_slice(&round).expect("round trip parses");
    assert_eq!(round, value, "round trip");
});
