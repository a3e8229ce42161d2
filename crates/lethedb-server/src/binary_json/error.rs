//! The limits of a decode and the ways a buffer can be malformed, each reported with the byte
//! offset at fault.
//!
//! Holds no decoding logic; the decoder raises these, the request layer maps them to a 400 (or a
//! 413 for [`Problem::TooLarge`]).

use std::fmt;

/// The most containers open at once: the same nesting `serde_json` accepts when the decoded
/// text is parsed, so whatever decodes also parses.
pub const NESTING_MAX: usize = 127;
/// The most JSON text one body may decode to. References and compact strings make text longer
/// than the buffer; beyond this the request is refused as too large rather than expanded.
pub const TEXT_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Why a buffer could not be decoded, and at which byte offset (the preamble is offset 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: usize,
    pub problem: Problem,
}

/// What is wrong at the offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The buffer ends inside a value.
    Truncated,
    /// A byte that is not a type marker where a value must start.
    InvalidMarker(u8),
    /// A user-dictionary string: the dictionary is not part of a request, so it cannot be read.
    UserString,
    /// A 16-bit float, which has no JSON number form in the service.
    Float16,
    /// NaN or an infinity, which JSON cannot write.
    NonFiniteNumber,
    /// String bytes that are not UTF-8.
    InvalidUtf8,
    /// A compressed string whose characters fall outside ASCII, or a padding nibble that is set.
    InvalidCompressedString,
    /// A base64 string whose padding field is not 0, 1, 2 or a complement of one of them.
    InvalidBase64Padding,
    /// A container's members run past its declared length, or fewer fill it.
    LengthMismatch,
    /// A container holds a different number of members than it declares.
    CountMismatch,
    /// An object member's name is not a string.
    NameNotString,
    /// A reference string whose target is outside the buffer, not a string, or a reference.
    InvalidReference,
    /// A uniform number array whose item or inner-array marker is not one it may use.
    InvalidUniformArray,
    /// More than [`NESTING_MAX`] containers are open.
    TooDeep,
    /// The decoded text would exceed [`TEXT_BYTES_MAX`].
    TooLarge,
    /// Bytes after the one top-level value.
    TrailingBytes,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Truncated => write!(f, "the buffer ends inside a value"),
            Problem::InvalidMarker(marker) => write!(f, "0x{marker:02X} is not a type marker"),
            Problem::UserString => write!(f, "user-dictionary strings are not supported"),
            Problem::Float16 => write!(f, "16-bit floats are not supported"),
            Problem::NonFiniteNumber => write!(f, "a number is NaN or infinite"),
            Problem::InvalidUtf8 => write!(f, "a string is not valid UTF-8"),
            Problem::InvalidCompressedString => write!(f, "a compressed string is malformed"),
            Problem::InvalidBase64Padding => write!(f, "a base64 string has invalid padding"),
            Problem::LengthMismatch => {
                write!(f, "a container's members do not fill its declared length")
            }
            Problem::CountMismatch => {
                write!(
                    f,
                    "a container's member count differs from its declared count"
                )
            }
            Problem::NameNotString => write!(f, "an object member's name is not a string"),
            Problem::InvalidReference => write!(f, "a reference string has an invalid target"),
            Problem::InvalidUniformArray => {
                write!(f, "a uniform number array has an invalid item type")
            }
            Problem::TooDeep => write!(f, "containers nest deeper than {NESTING_MAX}"),
            Problem::TooLarge => write!(f, "the decoded text exceeds {TEXT_BYTES_MAX} bytes"),
            Problem::TrailingBytes => write!(f, "bytes follow the top-level value"),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte offset {}", self.problem, self.offset)
    }
}
