//! The type markers of the binary encoding: one byte before every value says how to read it.
//! The marker space is cut into ranges (literal integers, dictionary strings, inline strings,
//! numbers, containers); `docs/binary-json.md` has the table.
//!
//! Constants only, and the one rule on them the decoder needs in two places.

/// The first byte of every binary buffer. No JSON text starts with it (it is a UTF-8
/// continuation byte), so it tells the two encodings apart.
pub const PREAMBLE: u8 = 0x80;

// The type markers, by range. Ranges are inclusive here.
pub const LITERAL_INT_LAST: u8 = 0x1F;
pub const SYSTEM_STRING_FIRST: u8 = 0x20;
pub const SYSTEM_STRING_LAST: u8 = 0x3F;
pub const USER_STRING_FIRST: u8 = 0x40;
pub const USER_STRING_LAST: u8 = 0x67;
pub const BASE64_1: u8 = 0x71;
pub const BASE64_2: u8 = 0x72;
pub const BASE64_URL_1: u8 = 0x73;
pub const BASE64_URL_2: u8 = 0x74;
pub const GUID_LOWERCASE: u8 = 0x75;
pub const GUID_UPPERCASE: u8 = 0x76;
pub const GUID_QUOTED: u8 = 0x77;
pub const HEX_LOWERCASE: u8 = 0x78;
pub const HEX_UPPERCASE: u8 = 0x79;
pub const DATE_TIME: u8 = 0x7A;
pub const PACKED_4: u8 = 0x7B;
pub const PACKED_5: u8 = 0x7C;
pub const PACKED_6: u8 = 0x7D;
pub const PACKED_7_L1: u8 = 0x7E;
pub const PACKED_7_L2: u8 = 0x7F;
pub const INLINE_STRING_FIRST: u8 = 0x80;
pub const INLINE_STRING_LAST: u8 = 0xBF;
pub const STRING_L1: u8 = 0xC0;
pub const STRING_L2: u8 = 0xC1;
pub const STRING_L4: u8 = 0xC2;
pub const REFERENCE_1: u8 = 0xC3;
pub const REFERENCE_4: u8 = 0xC6;
pub const NUMBER_UINT64: u8 = 0xC7;
pub const NUMBER_UINT8: u8 = 0xC8;
pub const NUMBER_INT16: u8 = 0xC9;
pub const NUMBER_INT32: u8 = 0xCA;
pub const NUMBER_INT64: u8 = 0xCB;
pub const NUMBER_DOUBLE: u8 = 0xCC;
pub const FLOAT32: u8 = 0xCD;
pub const FLOAT64: u8 = 0xCE;
pub const FLOAT16: u8 = 0xCF;
pub const NULL: u8 = 0xD0;
pub const FALSE: u8 = 0xD1;
pub const TRUE: u8 = 0xD2;
pub const GUID: u8 = 0xD3;
pub const UINT8: u8 = 0xD7;
pub const INT8: u8 = 0xD8;
pub const INT16: u8 = 0xD9;
pub const INT32: u8 = 0xDA;
pub const INT64: u8 = 0xDB;
pub const UINT32: u8 = 0xDC;
pub const BINARY_1: u8 = 0xDD;
pub const BINARY_2: u8 = 0xDE;
pub const BINARY_4: u8 = 0xDF;
pub const ARRAY_EMPTY: u8 = 0xE0;
pub const ARRAY_LAST: u8 = 0xE7;
pub const OBJECT_EMPTY: u8 = 0xE8;
pub const OBJECT_LAST: u8 = 0xEF;
pub const UNIFORM_C1: u8 = 0xF0;
pub const UNIFORM_C2: u8 = 0xF1;
pub const UNIFORM_OF_UNIFORM_C1: u8 = 0xF2;
pub const UNIFORM_OF_UNIFORM_C2: u8 = 0xF3;

/// Whether a marker opens a string a reference may point at or a name may be spelled with:
/// every string form but references themselves (so references never chain).
pub fn is_plain_string_marker(marker: u8) -> bool {
    (SYSTEM_STRING_FIRST..=STRING_L4).contains(&marker)
}
