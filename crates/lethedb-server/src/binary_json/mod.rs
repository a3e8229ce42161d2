//! The Cosmos binary JSON encoding of request bodies, decoded into the JSON text the rest of the
//! server handles. The Rust SDK sends item bodies this way (the body's first byte is `0x80`);
//! `docs/binary-json.md` describes the format and what LetheDB does with it.
//!
//! A buffer is the preamble byte `0x80` and one value. Each value opens with a type marker byte
//! that says how to read the bytes after it: literal integers, fixed-width numbers, strings in
//! several spellings (inline, length-prefixed, from the fixed dictionary of system strings,
//! compressed, references back to an earlier string), arrays and objects framed by length and
//! count, uniform number arrays, GUIDs and binary blobs. Multi-byte fields are little-endian.
//!
//! Floors: `error` and `markers`, then `strings` (the compact string spellings, pure), then
//! `decoder`. The decoder is total: any bytes give text or a [`DecodeError`] naming the byte
//! offset at fault, never a panic. This module does not encode (LetheDB answers in text, which
//! the SDKs accept) and knows nothing of HTTP.

mod decoder;
mod error;
mod markers;
mod strings;
#[cfg(test)]
mod tests;

pub use self::decoder::Decoder;
pub use self::error::{DecodeError, Problem, NESTING_MAX, TEXT_BYTES_MAX};
pub use self::markers::PREAMBLE;

/// Whether a body is in the binary encoding (its first byte is the preamble).
pub fn is_binary(body: &[u8]) -> bool {
    body.first() == Some(&PREAMBLE)
}

/// Decodes a whole binary buffer (preamble included) into compact JSON text.
pub fn to_json_text(buffer: &[u8]) -> Result<Vec<u8>, DecodeError> {
    Decoder::decode(buffer)
}
