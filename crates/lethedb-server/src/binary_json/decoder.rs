//! The decoder: a cursor over the buffer that writes JSON text as it reads each value, so
//! members keep their order and no tree is built.
//!
//! Every read is bounds-checked and every failure is a [`DecodeError`] at an offset; nesting is
//! capped at [`NESTING_MAX`] and the text at [`TEXT_BYTES_MAX`]. It knows the format, not HTTP.

use super::error::{DecodeError, Problem, NESTING_MAX, TEXT_BYTES_MAX};
use super::markers::*;
use super::strings;

/// The width of a length or count field.
#[derive(Clone, Copy)]
enum Width {
    One,
    Two,
    Four,
}

/// A cursor over the buffer and the text written so far.
pub struct Decoder<'a> {
    buffer: &'a [u8],
    position: usize,
    out: Vec<u8>,
}

impl<'a> Decoder<'a> {
    /// Decodes a whole buffer whose first byte is the preamble into compact JSON text.
    pub fn decode(buffer: &'a [u8]) -> Result<Vec<u8>, DecodeError> {
        if buffer.first() != Some(&PREAMBLE) {
            return Err(DecodeError {
                offset: 0,
                problem: Problem::InvalidMarker(buffer.first().copied().unwrap_or(0)),
            });
        }
        let mut decoder = Decoder {
            buffer,
            position: 1,
            out: Vec::with_capacity(buffer.len() + buffer.len() / 4),
        };
        decoder.value(0)?;
        if decoder.position != buffer.len() {
            return Err(decoder.error_here(Problem::TrailingBytes));
        }
        Ok(decoder.out)
    }

    fn error_at(&self, offset: usize, problem: Problem) -> DecodeError {
        DecodeError { offset, problem }
    }

    fn error_here(&self, problem: Problem) -> DecodeError {
        self.error_at(self.position, problem)
    }

    fn take(&mut self, count: usize) -> Result<&'a [u8], DecodeError> {
        let buffer = self.buffer;
        let bytes = self
            .position
            .checked_add(count)
            .and_then(|end| buffer.get(self.position..end))
            .ok_or_else(|| self.error_here(Problem::Truncated))?;
        self.position += count;
        Ok(bytes)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take_array::<1>()?[0])
    }

    fn unsigned(&mut self, width: Width) -> Result<usize, DecodeError> {
        Ok(match width {
            Width::One => usize::from(self.byte()?),
            Width::Two => usize::from(u16::from_le_bytes(self.take_array()?)),
            Width::Four => u32::from_le_bytes(self.take_array()?) as usize,
        })
    }

    /// Writes one value at the cursor; `depth` counts the containers already open.
    fn value(&mut self, depth: usize) -> Result<(), DecodeError> {
        if self.out.len() > TEXT_BYTES_MAX {
            return Err(self.error_here(Problem::TooLarge));
        }
        let offset = self.position;
        let marker = self.byte()?;
        match marker {
            0..=LITERAL_INT_LAST => self.integer(i64::from(marker)),
            NULL => self.out.extend_from_slice(b"null"),
            FALSE => self.out.extend_from_slice(b"false"),
            TRUE => self.out.extend_from_slice(b"true"),
            NUMBER_UINT8 | UINT8 => {
                let value = self.byte()?;
                self.integer(i64::from(value));
            }
            INT8 => {
                let value = i8::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            NUMBER_INT16 | INT16 => {
                let value = i16::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            NUMBER_INT32 | INT32 => {
                let value = i32::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            UINT32 => {
                let value = u32::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            NUMBER_INT64 | INT64 => {
                let value = i64::from_le_bytes(self.take_array()?);
                self.integer(value);
            }
            NUMBER_UINT64 => {
                let value = u64::from_le_bytes(self.take_array()?);
                self.out.extend_from_slice(value.to_string().as_bytes());
            }
            NUMBER_DOUBLE | FLOAT64 => {
                let value = f64::from_le_bytes(self.take_array()?);
                self.double(value, offset)?;
            }
            FLOAT32 => {
                let value = f32::from_le_bytes(self.take_array()?);
                self.double(f64::from(value), offset)?;
            }
            FLOAT16 => return Err(self.error_at(offset, Problem::Float16)),
            GUID => {
                let text = strings::guid_value(&self.take_array()?);
                self.string(&text);
            }
            BINARY_1 | BINARY_2 | BINARY_4 => {
                let width = [Width::One, Width::Two, Width::Four][usize::from(marker - BINARY_1)];
                let length = self.unsigned(width)?;
                let text = strings::base64_of(self.take(length)?, false);
                self.string(&text);
            }
            ARRAY_EMPTY..=ARRAY_LAST => self.array(marker, offset, depth)?,
            OBJECT_EMPTY..=OBJECT_LAST => self.object(marker, offset, depth)?,
            UNIFORM_C1 | UNIFORM_C2 => self.uniform_array(marker, offset)?,
            UNIFORM_OF_UNIFORM_C1 | UNIFORM_OF_UNIFORM_C2 => self.uniform_arrays(marker, offset)?,
            _ => {
                let text = self.string_value(marker, offset)?;
                self.string(&text);
            }
        }
        Ok(())
    }

    fn integer(&mut self, value: i64) {
        self.out.extend_from_slice(value.to_string().as_bytes());
    }

    /// A double as the service writes it in text: an integral value in the range of 64-bit
    /// integers with integer syntax (`3`, not `3.0`), any other in the shortest form that reads
    /// back to the same double. Negative zero keeps its sign.
    fn double(&mut self, value: f64, offset: usize) -> Result<(), DecodeError> {
        const TWO_TO_THE_64: f64 = 18_446_744_073_709_551_616.0;
        if !value.is_finite() {
            return Err(self.error_at(offset, Problem::NonFiniteNumber));
        }
        let negative_zero = value == 0.0 && value.is_sign_negative();
        if value.fract() == 0.0 && !negative_zero {
            if (0.0..TWO_TO_THE_64).contains(&value) {
                self.out
                    .extend_from_slice((value as u64).to_string().as_bytes());
                return Ok(());
            }
            if value < 0.0 && value >= i64::MIN as f64 {
                self.integer(value as i64);
                return Ok(());
            }
        }
        // A finite f64 always serializes.
        serde_json::to_writer(&mut self.out, &value)
            .map_err(|_| self.error_at(offset, Problem::NonFiniteNumber))
    }

    /// Writes `text` as a JSON string literal, escaped as `serde_json` escapes.
    fn string(&mut self, text: &str) {
        // Writing a str to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.out, text);
    }

    /// Reads any string form whose marker was just read at `offset`.
    fn string_value(&mut self, marker: u8, offset: usize) -> Result<String, DecodeError> {
        match marker {
            SYSTEM_STRING_FIRST..=SYSTEM_STRING_LAST => {
                Ok(strings::SYSTEM_STRINGS[usize::from(marker - SYSTEM_STRING_FIRST)].to_string())
            }
            USER_STRING_FIRST..=USER_STRING_LAST => Err(self.error_at(offset, Problem::UserString)),
            INLINE_STRING_FIRST..=INLINE_STRING_LAST => {
                self.utf8(usize::from(marker - INLINE_STRING_FIRST), offset)
            }
            STRING_L1 => {
                let length = self.unsigned(Width::One)?;
                self.utf8(length, offset)
            }
            STRING_L2 => {
                let length = self.unsigned(Width::Two)?;
                self.utf8(length, offset)
            }
            STRING_L4 => {
                let length = self.unsigned(Width::Four)?;
                self.utf8(length, offset)
            }
            REFERENCE_1..=REFERENCE_4 => {
                let width = usize::from(marker - REFERENCE_1) + 1;
                let mut target = 0usize;
                for (index, byte) in self.take(width)?.iter().enumerate() {
                    target |= usize::from(*byte) << (8 * index);
                }
                self.reference(target, offset)
            }
            _ => self.compact_string(marker, offset),
        }
    }

    fn utf8(&mut self, length: usize, offset: usize) -> Result<String, DecodeError> {
        let bytes = self.take(length)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| self.error_at(offset, Problem::InvalidUtf8))
    }

    /// The string at byte `target` of the buffer, which must be a string that is not itself a
    /// reference; read with a cursor of its own, so the current one is left where it was.
    fn reference(&mut self, target: usize, offset: usize) -> Result<String, DecodeError> {
        let invalid = || DecodeError {
            offset,
            problem: Problem::InvalidReference,
        };
        let marker = *self.buffer.get(target).ok_or_else(invalid)?;
        if target == 0 || !is_plain_string_marker(marker) {
            return Err(invalid());
        }
        let mut sub = Decoder {
            buffer: self.buffer,
            position: target + 1,
            out: Vec::new(),
        };
        let text = sub.string_value(marker, target)?;
        if self.out.len() + text.len() > TEXT_BYTES_MAX {
            return Err(self.error_at(offset, Problem::TooLarge));
        }
        Ok(text)
    }

    /// Reads a container's frame: where its members end (`None` for the one-member forms,
    /// which have no length) and how many it declares.
    fn frame(&mut self, kind: u8) -> Result<(Option<usize>, Option<usize>), DecodeError> {
        // Per kind: empty, one member, length of width 1/2/4, length and count of width 1/2/4.
        let (width, counted) = match kind {
            0 => return Ok((Some(self.position), Some(0))),
            1 => return Ok((None, Some(1))),
            2 => (Width::One, false),
            3 => (Width::Two, false),
            4 => (Width::Four, false),
            5 => (Width::One, true),
            6 => (Width::Two, true),
            _ => (Width::Four, true),
        };
        let length = self.unsigned(width)?;
        let count = if counted {
            Some(self.unsigned(width)?)
        } else {
            None
        };
        let end = self
            .position
            .checked_add(length)
            .filter(|end| *end <= self.buffer.len())
            .ok_or_else(|| self.error_here(Problem::Truncated))?;
        Ok((Some(end), count))
    }

    /// Whether another member follows: inside the length, or until the declared count for the
    /// one-member forms.
    fn more(&self, end: Option<usize>, count: Option<usize>, read: usize) -> bool {
        match end {
            Some(end) => self.position < end,
            None => count.is_some_and(|count| read < count),
        }
    }

    fn check_frame(
        &self,
        end: Option<usize>,
        count: Option<usize>,
        read: usize,
        offset: usize,
    ) -> Result<(), DecodeError> {
        if end.is_some_and(|end| self.position != end) {
            return Err(self.error_at(offset, Problem::LengthMismatch));
        }
        if count.is_some_and(|count| count != read) {
            return Err(self.error_at(offset, Problem::CountMismatch));
        }
        Ok(())
    }

    fn array(&mut self, marker: u8, offset: usize, depth: usize) -> Result<(), DecodeError> {
        if depth >= NESTING_MAX {
            return Err(self.error_at(offset, Problem::TooDeep));
        }
        let (end, count) = self.frame(marker - ARRAY_EMPTY)?;
        self.out.push(b'[');
        let mut read = 0;
        while self.more(end, count, read) {
            if read > 0 {
                self.out.push(b',');
            }
            self.value(depth + 1)?;
            read += 1;
        }
        self.check_frame(end, count, read, offset)?;
        self.out.push(b']');
        Ok(())
    }

    fn object(&mut self, marker: u8, offset: usize, depth: usize) -> Result<(), DecodeError> {
        if depth >= NESTING_MAX {
            return Err(self.error_at(offset, Problem::TooDeep));
        }
        let (end, count) = self.frame(marker - OBJECT_EMPTY)?;
        self.out.push(b'{');
        let mut read = 0;
        while self.more(end, count, read) {
            if read > 0 {
                self.out.push(b',');
            }
            let name_offset = self.position;
            let name_marker = self.byte()?;
            if !(is_plain_string_marker(name_marker)
                || (REFERENCE_1..=REFERENCE_4).contains(&name_marker))
            {
                return Err(self.error_at(name_offset, Problem::NameNotString));
            }
            let name = self.string_value(name_marker, name_offset)?;
            self.string(&name);
            self.out.push(b':');
            self.value(depth + 1)?;
            read += 1;
        }
        self.check_frame(end, count, read, offset)?;
        self.out.push(b'}');
        Ok(())
    }

    /// One number of a uniform array: its bytes only, typed by the array's item marker.
    fn bare_number(&mut self, item: u8, item_offset: usize) -> Result<(), DecodeError> {
        match item {
            UINT8 => {
                let value = self.byte()?;
                self.integer(i64::from(value));
            }
            INT8 => {
                let value = i8::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            INT16 => {
                let value = i16::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            INT32 => {
                let value = i32::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            UINT32 => {
                let value = u32::from_le_bytes(self.take_array()?);
                self.integer(i64::from(value));
            }
            INT64 => {
                let value = i64::from_le_bytes(self.take_array()?);
                self.integer(value);
            }
            FLOAT32 => {
                let value = f32::from_le_bytes(self.take_array()?);
                self.double(f64::from(value), item_offset)?;
            }
            FLOAT64 => {
                let value = f64::from_le_bytes(self.take_array()?);
                self.double(value, item_offset)?;
            }
            _ => return Err(self.error_at(item_offset, Problem::InvalidUniformArray)),
        }
        Ok(())
    }

    fn numbers(&mut self, item: u8, item_offset: usize, count: usize) -> Result<(), DecodeError> {
        self.out.push(b'[');
        for index in 0..count {
            if index > 0 {
                self.out.push(b',');
            }
            self.bare_number(item, item_offset)?;
        }
        self.out.push(b']');
        Ok(())
    }

    /// A uniform number array: the item marker, a count (1 or 2 bytes), the bare numbers.
    fn uniform_array(&mut self, marker: u8, offset: usize) -> Result<(), DecodeError> {
        let width = if marker == UNIFORM_C1 {
            Width::One
        } else {
            Width::Two
        };
        let item_offset = self.position;
        let item = self.byte()?;
        let count = self.unsigned(width)?;
        if self.out.len() + count > TEXT_BYTES_MAX {
            return Err(self.error_at(offset, Problem::TooLarge));
        }
        self.numbers(item, item_offset, count)
    }

    /// An array of uniform number arrays of one length: the inner array's marker, the item
    /// marker, the inner count, the outer count, then every inner array's bare numbers.
    fn uniform_arrays(&mut self, marker: u8, offset: usize) -> Result<(), DecodeError> {
        let (width, inner_marker) = if marker == UNIFORM_OF_UNIFORM_C1 {
            (Width::One, UNIFORM_C1)
        } else {
            (Width::Two, UNIFORM_C2)
        };
        let inner_offset = self.position;
        if self.byte()? != inner_marker {
            return Err(self.error_at(inner_offset, Problem::InvalidUniformArray));
        }
        let item_offset = self.position;
        let item = self.byte()?;
        let inner_count = self.unsigned(width)?;
        let outer_count = self.unsigned(width)?;
        // Empty inner arrays take no bytes, so the text is bounded here rather than by the input.
        if self.out.len() + outer_count.saturating_mul(inner_count + 3) > TEXT_BYTES_MAX {
            return Err(self.error_at(offset, Problem::TooLarge));
        }
        self.out.push(b'[');
        for index in 0..outer_count {
            if index > 0 {
                self.out.push(b',');
            }
            self.numbers(item, item_offset, inner_count)?;
        }
        self.out.push(b']');
        Ok(())
    }

    /// The compact string forms: base64, GUID strings, 4-bit alphabets, packed bits.
    fn compact_string(&mut self, marker: u8, offset: usize) -> Result<String, DecodeError> {
        let malformed = |problem| DecodeError { offset, problem };
        let text = match marker {
            BASE64_1 | BASE64_2 | BASE64_URL_1 | BASE64_URL_2 => {
                let width = if matches!(marker, BASE64_1 | BASE64_URL_1) {
                    Width::One
                } else {
                    Width::Two
                };
                let url_safe = matches!(marker, BASE64_URL_1 | BASE64_URL_2);
                let groups = self.unsigned(width)?;
                let padding = self.byte()?;
                let (raw, length) = strings::base64_layout(groups, padding)
                    .ok_or_else(|| malformed(Problem::InvalidBase64Padding))?;
                strings::base64_string(self.take(raw)?, length, url_safe)
            }
            GUID_LOWERCASE | GUID_UPPERCASE | GUID_QUOTED => {
                let alphabet = if marker == GUID_UPPERCASE {
                    strings::UPPERCASE_HEX
                } else {
                    strings::LOWERCASE_HEX
                };
                let bytes = self.take_array()?;
                Some(strings::guid_string(
                    &bytes,
                    alphabet,
                    marker == GUID_QUOTED,
                ))
            }
            HEX_LOWERCASE | HEX_UPPERCASE | DATE_TIME => {
                let alphabet = match marker {
                    HEX_LOWERCASE => strings::LOWERCASE_HEX,
                    HEX_UPPERCASE => strings::UPPERCASE_HEX,
                    _ => strings::DATE_TIME,
                };
                let length = self.unsigned(Width::One)?;
                strings::table_string(self.take(length.div_ceil(2))?, length, alphabet)
            }
            PACKED_4 | PACKED_5 | PACKED_6 | PACKED_7_L1 | PACKED_7_L2 => {
                let (bits, width) = match marker {
                    PACKED_4 => (4, Width::One),
                    PACKED_5 => (5, Width::One),
                    PACKED_6 => (6, Width::One),
                    PACKED_7_L1 => (7, Width::One),
                    _ => (7, Width::Two),
                };
                let length = self.unsigned(width)?;
                let base = if bits < 7 { self.byte()? } else { 0 };
                let count = strings::packed_bytes(length, bits)
                    .ok_or_else(|| malformed(Problem::Truncated))?;
                strings::packed_string(self.take(count)?, length, bits, base)
            }
            _ => return Err(malformed(Problem::InvalidMarker(marker))),
        };
        text.ok_or_else(|| malformed(Problem::InvalidCompressedString))
    }
}
