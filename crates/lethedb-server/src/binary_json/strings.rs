//! The compact spellings of strings: the fixed dictionary of system strings, GUIDs (as strings
//! and as values), base64 text kept as its bytes, and text packed 4, 5, 6 or 7 bits a
//! character.
//!
//! Pure functions from the bytes after a marker (and its length fields) to the text; the decoder
//! reads the fields and the bytes, and turns `None` into an error at the marker's offset.

use base64::Engine;

/// The system-string dictionary: the marker `0x20 + i` stands for entry `i`. Its order is part
/// of the format.
pub const SYSTEM_STRINGS: [&str; 32] = [
    "$s",
    "$t",
    "$v",
    "_attachments",
    "_etag",
    "_rid",
    "_self",
    "_ts",
    "attachments/",
    "coordinates",
    "geometry",
    "GeometryCollection",
    "id",
    "url",
    "Value",
    "label",
    "LineString",
    "link",
    "MultiLineString",
    "MultiPoint",
    "MultiPolygon",
    "name",
    "Name",
    "Type",
    "Point",
    "Polygon",
    "properties",
    "type",
    "value",
    "Feature",
    "FeatureCollection",
    "_id",
];

/// The 4-bit alphabets, indexed by nibble.
pub const LOWERCASE_HEX: &[u8; 16] = b"0123456789abcdef";
pub const UPPERCASE_HEX: &[u8; 16] = b"0123456789ABCDEF";
/// ISO 8601 timestamps: space, digits and the separators `:-.TZ`.
pub const DATE_TIME: &[u8; 16] = b" 0123456789:-.TZ";

/// A GUID string kept as 16 bytes, each two hex digits low nibble first, written
/// `8-4-4-4-12`, in quotes for the quoted form (an ETag's text).
pub fn guid_string(bytes: &[u8; 16], alphabet: &[u8; 16], quoted: bool) -> String {
    let mut text = String::with_capacity(38);
    if quoted {
        text.push('"');
    }
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        text.push(char::from(alphabet[usize::from(byte & 0x0F)]));
        text.push(char::from(alphabet[usize::from(byte >> 4)]));
    }
    if quoted {
        text.push('"');
    }
    text
}

/// A GUID value: the 16 bytes of a .NET `Guid` (its first three fields little-endian), in
/// lower-case text.
pub fn guid_value(b: &[u8; 16]) -> String {
    format!(
        "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6],
        b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
    )
}

/// Bytes as base64 text with padding, in the standard or the URL-safe alphabet.
pub fn base64_of(bytes: &[u8], url_safe: bool) -> String {
    if url_safe {
        base64::engine::general_purpose::URL_SAFE.encode(bytes)
    } else {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

/// How a base64 string is laid out: `groups` four-character groups, and a padding field that
/// is the number of `=` the text ends with (0 to 2), or the complement of the number of
/// characters dropped when the text had no padding. Returns the number of raw bytes that
/// follow and the length of the text, or `None` for a padding field that is neither.
pub fn base64_layout(groups: usize, padding: u8) -> Option<(usize, usize)> {
    let (cut, omitted) = if padding <= 2 {
        (usize::from(padding), false)
    } else if !padding <= 2 {
        (usize::from(!padding), true)
    } else {
        return None;
    };
    let raw = groups.checked_mul(3)?.checked_sub(cut)?;
    let text = groups.checked_mul(4)?;
    let text = if omitted { text - cut } else { text };
    Some((raw, text))
}

/// The text of a base64 string from its raw bytes and its text length.
pub fn base64_string(raw: &[u8], text_length: usize, url_safe: bool) -> Option<String> {
    let mut text = base64_of(raw, url_safe);
    if text_length > text.len() {
        return None;
    }
    text.truncate(text_length);
    Some(text)
}

/// `length` characters from a 4-bit alphabet, two a byte, low nibble first; the high nibble of
/// the last byte of an odd-length string must be zero.
pub fn table_string(bytes: &[u8], length: usize, alphabet: &[u8; 16]) -> Option<String> {
    let mut text = String::with_capacity(length);
    for (index, byte) in bytes.iter().enumerate() {
        text.push(char::from(alphabet[usize::from(byte & 0x0F)]));
        if index * 2 + 1 < length {
            text.push(char::from(alphabet[usize::from(byte >> 4)]));
        } else if byte >> 4 != 0 {
            return None;
        }
    }
    Some(text)
}

/// `length` bytes of `bits` bits each, packed least significant bit first, each added to `base`:
/// the string's UTF-8 bytes (a base lets a run of non-ASCII bytes pack too). `None` when a byte
/// overflows or the bytes are not UTF-8.
pub fn packed_string(bytes: &[u8], length: usize, bits: usize, base: u8) -> Option<String> {
    let mask = (1u16 << bits) - 1;
    let mut text = Vec::with_capacity(length);
    for index in 0..length {
        let bit = index * bits;
        let low = u16::from(*bytes.get(bit / 8)?);
        let high = u16::from(bytes.get(bit / 8 + 1).copied().unwrap_or(0));
        let code = ((low | (high << 8)) >> (bit % 8)) & mask;
        text.push(u8::try_from(code).ok()?.checked_add(base)?);
    }
    String::from_utf8(text).ok()
}

/// The number of bytes `length` characters of `bits` bits take.
pub fn packed_bytes(length: usize, bits: usize) -> Option<usize> {
    Some(length.checked_mul(bits)?.div_ceil(8))
}
