//! Effective partition keys (EPKs): the strings the service orders partitions by, computed as
//! the official SDKs compute them, for hash v1, hash v2 and MultiHash (hierarchical) keys; the
//! EPK range a hierarchical prefix covers; and the boundary arithmetic that lays out and splits
//! physical partition key ranges.
//!
//! An EPK is upper-case hex and compares as a plain string; `""` is the lowest and `"FF"` lies
//! above every key. Hash v2 hashes the whole key with MurmurHash3 x64-128 (32 hex digits, top
//! two bits cleared); MultiHash concatenates the v2 hash of each part; hash v1 writes the
//! MurmurHash3 x86-32 of the key, as a number, followed by the key's parts (strings cut to 100
//! UTF-16 units), in the order-preserving binary encoding below. Where the Python and
//! JavaScript SDKs disagree on v1, this follows the .NET SDK (the service's own code); the
//! fixture test lists each such case.

use crate::partitions::partition_key::{
    PartitionKeyDefinition, PartitionKeyPart, PartitionKeyValue,
};
use serde_json::Value;

/// The lowest effective partition key (inclusive).
pub const EPK_MIN: &str = "";
/// The end of the effective partition key space (exclusive): above every key.
pub const EPK_MAX: &str = "FF";

/// How a container's partition key is hashed into effective partition keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashScheme {
    V1,
    V2,
    MultiHash,
}

impl HashScheme {
    /// The scheme of a definition: kind `MultiHash`; else version 2; else (version 1 or absent,
    /// the system key `/_partitionKey` included) v1, as both SDKs assume when version is absent.
    pub fn of(definition: &PartitionKeyDefinition) -> HashScheme {
        let kind = definition.resource.get("kind").and_then(Value::as_str);
        let version = definition.resource.get("version").and_then(Value::as_u64);
        match (kind, version) {
            (Some("MultiHash"), _) => HashScheme::MultiHash,
            (_, Some(2)) => HashScheme::V2,
            _ => HashScheme::V1,
        }
    }

    /// The highest point of the hash space ("FF" stands for it): `u32::MAX` for v1, `2^126 - 1`
    /// for v2 and MultiHash.
    fn top(self) -> u128 {
        match self {
            HashScheme::V1 => u128::from(u32::MAX),
            HashScheme::V2 | HashScheme::MultiHash => (1u128 << 126) - 1,
        }
    }

    /// The boundary string of a point of the hash space.
    fn encode_point(self, point: u128) -> String {
        match self {
            // Every point of the v1 space is below 2^32, exact as a float.
            HashScheme::V1 => {
                let mut out = Vec::new();
                write_number(
                    u32::try_from(point).map_or(f64::from(u32::MAX), f64::from),
                    &mut out,
                );
                to_hex(&out)
            }
            HashScheme::V2 | HashScheme::MultiHash => format!("{point:032X}"),
        }
    }

    /// The point of the hash space an EPK or boundary starts at; `None` when it is not one.
    fn decode_point(self, epk: &str) -> Option<u128> {
        if epk == EPK_MIN {
            return Some(0);
        }
        if epk.eq_ignore_ascii_case(EPK_MAX) {
            return Some(self.top());
        }
        match self {
            HashScheme::V1 => {
                let value = read_number(&from_hex(epk)?)?;
                // Truncation to an integer point is the intent; NaN and negatives go to 0.
                let point = if value >= 0.0 {
                    value.floor() as u128
                } else {
                    0
                };
                Some(point.min(self.top()))
            }
            HashScheme::V2 | HashScheme::MultiHash => {
                let digits = epk.get(..epk.len().min(32))?;
                if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let padded = format!("{digits:0<32}");
                u128::from_str_radix(&padded, 16).ok()
            }
        }
    }
}

impl PartitionKeyValue {
    /// The effective partition key of this value (a full key or a hierarchical prefix) in a
    /// container with this definition; `""` for a value with no parts.
    pub fn effective(&self, definition: &PartitionKeyDefinition) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        match HashScheme::of(definition) {
            HashScheme::V1 => hash_v1(&self.0),
            HashScheme::V2 => hash_v2(&self.0),
            HashScheme::MultiHash => self
                .0
                .iter()
                .map(|part| hash_v2(std::slice::from_ref(part)))
                .collect(),
        }
    }
}

/// How many leading hex digits of an EPK its point keeps (8 bytes).
const POINT_DIGITS: usize = 16;

/// The EPK point of an EPK or range boundary: its first 16 hex digits, right-padded with `0`,
/// as a number; `None` for a string with anything but upper-case hex digits. The map never
/// decreases as the string grows: among upper-case hex strings, string order is digit order,
/// and a string padded with the smallest digit stays at or below every string it prefixes. So
/// every EPK in `[low, high)` has a point in `[epk_point(low), epk_point(high)]`, which is
/// what lets an EPK-ordered container read a range as one span of keys (`keys.rs`).
pub fn epk_point(epk: &str) -> Option<u64> {
    let mut point = 0u64;
    for byte in epk.bytes() {
        if !matches!(byte, b'0'..=b'9' | b'A'..=b'F') {
            return None;
        }
    }
    for byte in epk.bytes().take(POINT_DIGITS) {
        let digit = if byte.is_ascii_digit() {
            byte - b'0'
        } else {
            byte - b'A' + 10
        };
        point = point << 4 | u64::from(digit);
    }
    let padding = POINT_DIGITS.saturating_sub(epk.len()) as u32;
    Some(point.checked_shl(4 * padding).unwrap_or(0))
}

/// The EPK range a value covers, as the SDKs compute it. A hierarchical prefix (fewer parts than
/// paths) covers `[epk, epk + "FF")`; no parts cover everything, `["", "FF")` (as the JS SDK; the
/// Python SDK answers `("", "")`); a full key gives the SDKs' point range `[epk, epk]`, both ends
/// inclusive.
pub fn prefix_range(
    definition: &PartitionKeyDefinition,
    prefix: &PartitionKeyValue,
) -> (String, String) {
    if prefix.0.is_empty() {
        return (EPK_MIN.to_string(), EPK_MAX.to_string());
    }
    let epk = prefix.effective(definition);
    if HashScheme::of(definition) == HashScheme::MultiHash
        && prefix.0.len() < definition.paths.len()
    {
        let end = format!("{epk}{EPK_MAX}");
        (epk, end)
    } else {
        (epk.clone(), epk)
    }
}

/// `n + 1` boundaries that cut the hash space into `n` even ranges: `""`, the inner points
/// `k * floor(top / n)` for `k` in `1..n`, and `"FF"` (`n = 0` counts as 1). The service steps
/// by the whole width so: its five-range hash v2 container ends range 0 at `0CCC...CC` and
/// range 3 at `3333...30` (four steps), not at `floor(top * 4 / 5)` = `3333...32` (the Python
/// SDK's circuit-breaker test reads both), and the last range absorbs the remainder.
pub fn even_boundaries(scheme: HashScheme, n: usize) -> Vec<String> {
    let n = n.max(1);
    let parts = n as u128;
    let step = scheme.top() / parts;
    let mut boundaries = Vec::with_capacity(n + 1);
    boundaries.push(EPK_MIN.to_string());
    for k in 1..parts {
        boundaries.push(scheme.encode_point(step * k));
    }
    boundaries.push(EPK_MAX.to_string());
    boundaries
}

/// The boundary that halves `[min, max)` in the hash space, or `None` when the range holds
/// fewer than two points (or either end is not a boundary of this scheme).
pub fn split_point(scheme: HashScheme, min: &str, max: &str) -> Option<String> {
    let low = scheme.decode_point(min)?;
    let high = scheme.decode_point(max)?;
    if high <= low || high - low < 2 {
        return None;
    }
    Some(scheme.encode_point(low + (high - low) / 2))
}

/// Component type markers shared by the hashing and binary encodings.
const UNDEFINED: u8 = 0x00;
const NULL: u8 = 0x01;
const FALSE: u8 = 0x02;
const TRUE: u8 = 0x03;
const NUMBER: u8 = 0x05;
const STRING: u8 = 0x08;
/// What ends a string in the bytes hashed: v1 and v2 differ.
const STRING_END_V1: u8 = 0x00;
const STRING_END_V2: u8 = 0xFF;
/// v1 hashes at most this many UTF-16 units of a string, and appends at most this many bytes.
const V1_STRING_CHARS_MAX: usize = 100;
const V1_STRING_BYTES_MAX: usize = 100;
/// The sign bit of a float's bits.
const SIGN: u64 = 1 << 63;

/// The bytes one part contributes to the hashed input: a type marker, then the value (floats
/// little-endian, strings as UTF-8 followed by `string_end`).
fn write_for_hashing(part: &PartitionKeyPart, string_end: u8, out: &mut Vec<u8>) {
    match part {
        PartitionKeyPart::Undefined => out.push(UNDEFINED),
        PartitionKeyPart::Null => out.push(NULL),
        PartitionKeyPart::Bool(false) => out.push(FALSE),
        PartitionKeyPart::Bool(true) => out.push(TRUE),
        PartitionKeyPart::Number(n) => {
            out.push(NUMBER);
            out.extend_from_slice(&n.to_le_bytes());
        }
        PartitionKeyPart::String(s) => {
            out.push(STRING);
            out.extend_from_slice(s.as_bytes());
            out.push(string_end);
        }
    }
}

/// MurmurHash3 x64-128 of the encoded parts, as upper-case hex, most significant byte first,
/// with the top two bits cleared so every key sorts below the range end `FF`.
fn hash_v2(parts: &[PartitionKeyPart]) -> String {
    let mut encoded = Vec::new();
    for part in parts {
        write_for_hashing(part, STRING_END_V2, &mut encoded);
    }
    // Reading from a byte slice cannot fail.
    let hash = murmur3::murmur3_x64_128(&mut encoded.as_slice(), 0).unwrap_or_default();
    let mut bytes = hash.to_be_bytes();
    bytes[0] &= 0x3F;
    to_hex(&bytes)
}

/// Hash v1: the MurmurHash3 x86-32 of the truncated parts, then the hash (as a number) and the
/// truncated parts in the binary encoding.
fn hash_v1(parts: &[PartitionKeyPart]) -> String {
    let truncated: Vec<PartitionKeyPart> = parts.iter().map(truncate_v1).collect();
    let mut hashed = Vec::new();
    for part in &truncated {
        write_for_hashing(part, STRING_END_V1, &mut hashed);
    }
    // Reading from a byte slice cannot fail.
    let hash = murmur3::murmur3_32(&mut hashed.as_slice(), 0).unwrap_or_default();
    let mut out = Vec::new();
    write_number(f64::from(hash), &mut out);
    for part in &truncated {
        write_binary(part, &mut out);
    }
    to_hex(&out)
}

/// A string cut to its first 100 UTF-16 units, as .NET and JS cut it; a surrogate pair split by
/// the cut leaves a lone surrogate, which their UTF-8 encoders write as U+FFFD.
fn truncate_v1(part: &PartitionKeyPart) -> PartitionKeyPart {
    let PartitionKeyPart::String(s) = part else {
        return part.clone();
    };
    let mut units = 0;
    let mut cut = String::new();
    for c in s.chars() {
        let width = c.len_utf16();
        if units + width > V1_STRING_CHARS_MAX {
            if units < V1_STRING_CHARS_MAX {
                cut.push(char::REPLACEMENT_CHARACTER);
            }
            return PartitionKeyPart::String(cut);
        }
        units += width;
        cut.push(c);
    }
    part.clone()
}

/// The order-preserving binary encoding of one part: a type marker, then numbers as below and
/// strings as their UTF-8 bytes plus one, ended by 0x00 when at most 100 bytes, otherwise cut to
/// 101 bytes with no end.
fn write_binary(part: &PartitionKeyPart, out: &mut Vec<u8>) {
    match part {
        PartitionKeyPart::Number(n) => write_number(*n, out),
        PartitionKeyPart::String(s) => {
            out.push(STRING);
            let bytes = s.as_bytes();
            let short = bytes.len() <= V1_STRING_BYTES_MAX;
            let taken = if short {
                bytes
            } else {
                &bytes[..=V1_STRING_BYTES_MAX]
            };
            out.extend(taken.iter().map(|b| if *b < 0xFF { b + 1 } else { *b }));
            if short {
                out.push(0x00);
            }
        }
        other => write_for_hashing(other, STRING_END_V1, out),
    }
}

/// A number in the binary encoding: the marker, the first byte of its order-preserving 64 bits,
/// then 7 bits a byte with the low bit 1 while more follow, the last byte with the low bit 0.
fn write_number(value: f64, out: &mut Vec<u8>) {
    out.push(NUMBER);
    let bits = value.to_bits();
    let mut payload = if bits < SIGN {
        bits ^ SIGN
    } else {
        (!bits).wrapping_add(1)
    };
    out.push(payload.to_be_bytes()[0]);
    payload <<= 8;
    let mut byte = 0u8;
    let mut first = true;
    while payload != 0 {
        if !first {
            out.push(byte);
        }
        first = false;
        byte = payload.to_be_bytes()[0] | 0x01;
        payload <<= 7;
    }
    out.push(byte & 0xFE);
}

/// Reads the number at the start of a binary encoding (the inverse of `write_number`); `None`
/// when the bytes do not start with one. Input ending after the first byte reads as if the rest
/// were zero.
fn read_number(bytes: &[u8]) -> Option<f64> {
    let (&marker, rest) = bytes.split_first()?;
    let (&first, mut rest) = rest.split_first().filter(|_| marker == NUMBER)?;
    let mut payload = u64::from(first) << 56;
    let mut shift = 56u32;
    while let Some((&byte, tail)) = rest.split_first() {
        rest = tail;
        shift = shift.checked_sub(7)?;
        payload |= u64::from(byte >> 1) << shift;
        if byte & 0x01 == 0 {
            break;
        }
    }
    let bits = if payload >= SIGN {
        payload ^ SIGN
    } else {
        (!payload).wrapping_add(1)
    };
    Some(f64::from_bits(bits))
}

/// Upper-case hex, two digits a byte. Every point operation hashes its partition key into such
/// a string, so it is written digit by digit rather than through `format!` (which cost 15 times
/// the hash itself: a profile of point reads found it 14% of their instructions).
fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0F)]));
    }
    text
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epk_points_never_decrease_as_epks_grow() {
        assert_eq!(epk_point(""), Some(0));
        assert_eq!(epk_point("FF"), Some(0xFF00_0000_0000_0000));
        assert_eq!(epk_point("0123456789ABCDEF77"), Some(0x0123_4567_89AB_CDEF));
        assert_eq!(epk_point("0a"), None);
        assert_eq!(epk_point("0G"), None);
        let mut epks: Vec<String> = ["", "0", "00", "05", "05C1", "1F", "3FFFFFFFFFFFFFFF", "FF"]
            .iter()
            .map(ToString::to_string)
            .collect();
        let bodies = [
            serde_json::json!({"paths": ["/pk"], "kind": "Hash", "version": 2}),
            serde_json::json!({"paths": ["/pk"], "kind": "Hash", "version": 1}),
            serde_json::json!({"paths": ["/a", "/b"], "kind": "MultiHash", "version": 2}),
        ];
        for body in &bodies {
            let definition =
                PartitionKeyDefinition::from_container_body(Some(body)).expect("definition");
            let scheme = HashScheme::of(&definition);
            for n in 0..200 {
                let parts = vec![PartitionKeyPart::String(format!("k{n}")); definition.paths.len()];
                let epk = PartitionKeyValue(parts).effective(&definition);
                epks.push(epk[..(n % 33).min(epk.len())].to_string());
                epks.push(epk);
            }
            // Ten ranges are ten distinct spans of points, so each reads about a tenth.
            let bounds: Vec<Option<u64>> = even_boundaries(scheme, 10)
                .iter()
                .map(|b| epk_point(b))
                .collect();
            assert!(
                bounds.windows(2).all(|pair| pair[0] < pair[1]),
                "{scheme:?}"
            );
        }
        epks.sort();
        for pair in epks.windows(2) {
            assert!(epk_point(&pair[0]) <= epk_point(&pair[1]), "{pair:?}");
        }
    }

    const SCHEMES: [HashScheme; 3] = [HashScheme::V1, HashScheme::V2, HashScheme::MultiHash];

    #[test]
    fn even_boundaries_span_the_space_in_increasing_order() {
        for scheme in SCHEMES {
            for n in [1, 2, 3, 5] {
                let boundaries = even_boundaries(scheme, n);
                assert_eq!(boundaries.len(), n + 1, "{scheme:?} {n}");
                assert_eq!(boundaries[0], EPK_MIN);
                assert_eq!(boundaries[n], EPK_MAX);
                assert!(
                    boundaries.windows(2).all(|w| w[0] < w[1]),
                    "{scheme:?} {n}: {boundaries:?}"
                );
            }
        }
    }

    #[test]
    fn five_even_ranges_step_by_the_whole_width_as_the_service_does() {
        // The Python SDK's circuit-breaker test reads these from a five-range container.
        let boundaries = even_boundaries(HashScheme::V2, 5);
        assert_eq!(boundaries[1], "0CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC");
        assert_eq!(boundaries[3], "26666666666666666666666666666664");
        assert_eq!(boundaries[4], "33333333333333333333333333333330");
    }

    #[test]
    fn two_even_ranges_meet_where_the_service_puts_them() {
        // A two-partition hash v1 container reports this boundary.
        assert_eq!(even_boundaries(HashScheme::V1, 2)[1], "05C1DFFFFFFFFC");
        for scheme in [HashScheme::V2, HashScheme::MultiHash] {
            assert_eq!(
                even_boundaries(scheme, 2)[1],
                "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
            );
        }
    }

    #[test]
    fn halving_the_whole_space_gives_the_two_range_boundary() {
        for scheme in SCHEMES {
            let half = split_point(scheme, EPK_MIN, EPK_MAX).expect("split");
            assert_eq!(half, even_boundaries(scheme, 2)[1], "{scheme:?}");
            let quarter = split_point(scheme, EPK_MIN, &half).expect("quarter");
            let three_quarters = split_point(scheme, &half, EPK_MAX).expect("3/4");
            assert!(EPK_MIN < quarter.as_str() && quarter < half && half < three_quarters);
            assert!(three_quarters.as_str() < EPK_MAX);
        }
    }

    #[test]
    fn split_points_fall_strictly_inside_and_tiny_ranges_do_not_split() {
        for scheme in SCHEMES {
            for n in [3, 5] {
                let boundaries = even_boundaries(scheme, n);
                for w in boundaries.windows(2) {
                    let mid = split_point(scheme, &w[0], &w[1]).expect("split");
                    assert!(w[0] < mid && mid < w[1], "{scheme:?}: {w:?} -> {mid}");
                }
            }
            let one = scheme.encode_point(1);
            let two = scheme.encode_point(2);
            assert_eq!(split_point(scheme, EPK_MIN, &one), None);
            assert_eq!(split_point(scheme, &one, &two), None);
            assert_eq!(split_point(scheme, &two, &one), None);
            assert_eq!(split_point(scheme, EPK_MIN, &two), Some(one));
            assert_eq!(split_point(scheme, "zz", EPK_MAX), None);
        }
        // MultiHash looks only at the first 32 digits of a longer EPK.
        let long = format!("{}{}", "2".repeat(32), "3".repeat(32));
        let mid = split_point(HashScheme::MultiHash, &long, EPK_MAX).expect("split");
        assert!(long < mid && mid.as_str() < EPK_MAX);
    }

    #[test]
    fn v1_numbers_decode_what_they_encode() {
        for value in [
            0.0,
            1.0,
            2.0,
            1.5,
            2_147_483_647.0,
            4_294_967_295.0,
            -3.25,
            1e308,
        ] {
            let mut bytes = Vec::new();
            write_number(value, &mut bytes);
            assert_eq!(read_number(&bytes), Some(value), "{value}");
        }
        for point in [0u128, 1, 2, 12345, u128::from(u32::MAX)] {
            let text = HashScheme::V1.encode_point(point);
            assert_eq!(HashScheme::V1.decode_point(&text), Some(point), "{text}");
        }
    }
}
