//! The decoder against bodies the Rust SDK's own encoder produced (`fixtures/sdk_encoded.json`:
//! the bytes it sent and the text it reads them as), and against hand-made buffers for every
//! type marker, every length width and every way a buffer can be malformed.

use super::*;
use serde_json::Value;

fn bytes(hex: &str) -> Vec<u8> {
    hex.split_whitespace()
        .map(|byte| u8::from_str_radix(byte, 16).expect("hex"))
        .collect()
}

/// One buffer decodes to exactly `expected` (compact JSON text).
fn check(hex: &str, expected: &str) {
    let text = to_json_text(&bytes(hex)).unwrap_or_else(|error| panic!("{hex}: {error}"));
    assert_eq!(String::from_utf8(text).expect("utf-8"), expected, "{hex}");
}

/// One buffer is refused at `offset` for `problem`.
fn check_error(hex: &str, offset: usize, problem: Problem) {
    let error = to_json_text(&bytes(hex)).expect_err(hex);
    assert_eq!(error, DecodeError { offset, problem }, "{hex}");
}

fn sdk_fixtures() -> Vec<(String, Vec<u8>, String)> {
    let fixtures: Value =
        serde_json::from_str(include_str!("fixtures/sdk_encoded.json")).expect("fixtures");
    fixtures
        .as_array()
        .expect("array")
        .iter()
        .map(|fixture| {
            (
                fixture["name"].as_str().expect("name").to_string(),
                bytes(fixture["binary"].as_str().expect("binary")),
                fixture["text"].as_str().expect("text").to_string(),
            )
        })
        .collect()
}

#[test]
fn bodies_from_the_sdk_encoder_decode_to_the_text_the_sdk_reads_them_as() {
    let fixtures = sdk_fixtures();
    assert!(fixtures.len() >= 8);
    for (name, binary, text) in fixtures {
        let decoded = to_json_text(&binary).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(String::from_utf8(decoded).expect("utf-8"), text, "{name}");
    }
}

#[test]
fn every_truncation_of_an_sdk_body_is_refused_and_never_panics() {
    for (name, binary, _) in sdk_fixtures().into_iter().take(3) {
        for end in 1..binary.len() {
            let error = to_json_text(&binary[..end]).expect_err(&name);
            assert!(
                matches!(
                    error.problem,
                    Problem::Truncated | Problem::LengthMismatch | Problem::CountMismatch
                ),
                "{name} cut at {end}: {error}"
            );
            assert!(error.offset <= end, "{name} cut at {end}: {error}");
        }
    }
}

#[test]
fn literals_and_numbers_of_every_width() {
    check("80 D0", "null");
    check("80 D1", "false");
    check("80 D2", "true");
    check("80 00", "0");
    check("80 1F", "31");
    check("80 C8 FF", "255");
    check("80 C9 00 80", "-32768");
    check("80 CA FF FF FF 7F", "2147483647");
    check("80 CB FF FF FF FF FF FF FF 7F", "9223372036854775807");
    check("80 C7 FF FF FF FF FF FF FF FF", "18446744073709551615");
    check("80 D7 FE", "254");
    check("80 D8 80", "-128");
    check("80 D9 FF 7F", "32767");
    check("80 DA 00 00 00 80", "-2147483648");
    check("80 DB 01 00 00 00 00 00 00 80", "-9223372036854775807");
    check("80 DC FF FF FF FF", "4294967295");
}

#[test]
fn doubles_read_as_the_service_writes_them() {
    check("80 CC 00 00 00 00 00 00 E0 3F", "0.5");
    // Integral doubles take integer syntax, up to 2^64; negative zero keeps its sign.
    check("80 CC 00 00 00 00 00 00 08 40", "3");
    check("80 CC 00 3D 91 60 E4 58 E1 43", "10000000000000000000");
    check("80 CC 40 8C B5 78 1D AF 15 44", "1e+20");
    check("80 CC 00 00 00 00 00 00 F0 C3", "-1.8446744073709552e+19");
    check("80 CC 00 00 00 00 00 00 00 80", "-0.0");
    check("80 CD 00 00 C0 3F", "1.5");
    check("80 CD CD CC CC 3D", "0.10000000149011612");
    check("80 CE 00 00 00 00 00 00 04 C0", "-2.5");
    check("80 CE 9C 75 00 88 3C E4 37 7E", "1e+300");
}

#[test]
fn strings_inline_length_prefixed_and_from_the_dictionary() {
    check("80 2C", r#""id""#);
    check("80 20", r#""$s""#);
    check("80 3B", r#""type""#);
    check("80 3F", r#""_id""#);
    check("80 80", r#""""#);
    check("80 83 61 62 63", r#""abc""#);
    check("80 82 22 0A", r#""\"\n""#);
    check("80 81 01", r#""\u0001""#);
    check("80 C0 03 78 79 7A", r#""xyz""#);
    check("80 C1 02 00 C3 A9", r#""é""#);
    check("80 C2 01 00 00 00 41", r#""A""#);
}

#[test]
fn reference_strings_of_every_width_repeat_an_earlier_string() {
    check("80 E2 05 82 61 62 C3 03", r#"["ab","ab"]"#);
    check("80 E2 06 82 61 62 C4 03 00", r#"["ab","ab"]"#);
    check("80 E2 07 82 61 62 C5 03 00 00", r#"["ab","ab"]"#);
    check("80 E2 08 82 61 62 C6 03 00 00 00", r#"["ab","ab"]"#);
    // A name may be a reference, and a reference may point at a name.
    check("80 EA 04 81 6B C3 03", r#"{"k":"k"}"#);
    check("80 E2 03 2C C3 03", r#"["id","id"]"#);
}

#[test]
fn guids_base64_and_binary() {
    let guid = "01 23 45 67 89 AB CD EF 10 32 54 76 98 BA DC FE";
    check(
        &format!("80 75 {guid}"),
        r#""10325476-98ba-dcfe-0123-456789abcdef""#,
    );
    check(
        &format!("80 76 {guid}"),
        r#""10325476-98BA-DCFE-0123-456789ABCDEF""#,
    );
    check(
        &format!("80 77 {guid}"),
        r#""\"10325476-98ba-dcfe-0123-456789abcdef\"""#,
    );
    check(
        "80 D3 33 22 11 00 55 44 77 66 88 99 AA BB CC DD EE FF",
        r#""00112233-4455-6677-8899-aabbccddeeff""#,
    );
    check("80 71 01 00 61 62 63", r#""YWJj""#);
    check("80 71 01 01 61 62", r#""YWI=""#);
    check("80 71 01 02 61", r#""YQ==""#);
    check("80 71 01 FD 61", r#""YQ""#);
    check("80 71 01 FE 61 62", r#""YWI""#);
    check("80 72 01 00 00 61 62 63", r#""YWJj""#);
    check("80 71 01 00 FB EF BE", r#""++++""#);
    check("80 73 01 00 FB EF BE", r#""----""#);
    check("80 74 01 00 00 FF FF FF", r#""____""#);
    check("80 DD 03 01 02 03", r#""AQID""#);
    check("80 DE 00 00", r#""""#);
    check("80 DF 02 00 00 00 FF FE", r#""//4=""#);
}

#[test]
fn compressed_strings() {
    check("80 78 04 BA DC", r#""abcd""#);
    check("80 79 04 BA DC", r#""ABCD""#);
    check("80 78 05 21 43 05", r#""12345""#);
    check("80 7A 06 32 4B F1", r#""12:30Z""#);
    check("80 7B 03 61 10 02", r#""abc""#);
    check("80 7C 03 78 20 08", r#""xyz""#);
    check("80 7D 04 41 40 20 0C", r#""ABCD""#);
    check("80 7E 02 EF 35", r#""ok""#);
    check("80 7F 02 00 EF 35", r#""ok""#);
    // A base lets UTF-8 bytes above ASCII pack: "éé" is C3 A9 C3 A9, 5 bits above A9.
    check("80 7C 04 A9 1A 68 00", r#""éé""#);
}

#[test]
fn uniform_number_arrays() {
    check("80 F0 D7 03 01 02 03", "[1,2,3]");
    check("80 F1 D8 02 00 FF 7F", "[-1,127]");
    check("80 F0 D9 01 00 80", "[-32768]");
    check("80 F0 DA 01 FF FF FF FF", "[-1]");
    check(
        "80 F0 DB 01 FF FF FF FF FF FF FF 7F",
        "[9223372036854775807]",
    );
    check("80 F0 DC 01 FF FF FF FF", "[4294967295]");
    check("80 F0 CD 01 00 00 20 40", "[2.5]");
    check("80 F0 CE 01 00 00 00 00 00 00 E0 3F", "[0.5]");
    check("80 F0 D7 00", "[]");
    check("80 F2 F0 D7 02 03 01 02 03 04 05 06", "[[1,2],[3,4],[5,6]]");
    check("80 F3 F1 D8 01 00 02 00 FF 01", "[[-1],[1]]");
}

#[test]
fn arrays_and_objects_in_every_frame_keep_member_order() {
    check("80 E0", "[]");
    check("80 E1 01", "[1]");
    check("80 E2 02 01 02", "[1,2]");
    check("80 E3 02 00 01 02", "[1,2]");
    check("80 E4 02 00 00 00 01 02", "[1,2]");
    check("80 E5 02 02 01 02", "[1,2]");
    check("80 E6 02 00 02 00 01 02", "[1,2]");
    check("80 E7 02 00 00 00 02 00 00 00 01 02", "[1,2]");
    check("80 E8", "{}");
    check("80 E9 2C 81 78", r#"{"id":"x"}"#);
    check("80 EA 04 2C 01 3B 02", r#"{"id":1,"type":2}"#);
    check("80 EB 04 00 2C 01 3B 02", r#"{"id":1,"type":2}"#);
    check("80 EC 04 00 00 00 2C 01 3B 02", r#"{"id":1,"type":2}"#);
    check("80 ED 04 02 2C 01 3B 02", r#"{"id":1,"type":2}"#);
    check("80 EE 04 00 02 00 2C 01 3B 02", r#"{"id":1,"type":2}"#);
    check(
        "80 EF 04 00 00 00 02 00 00 00 2C 01 3B 02",
        r#"{"id":1,"type":2}"#,
    );
    check("80 EA 06 81 62 01 81 61 02", r#"{"b":1,"a":2}"#);
    check("80 E9 81 61 E1 E8", r#"{"a":[{}]}"#);
}

#[test]
fn malformed_buffers_name_the_offset_at_fault() {
    check_error("80", 1, Problem::Truncated);
    check_error("80 CB 01 02", 2, Problem::Truncated);
    check_error("80 D0 D0", 2, Problem::TrailingBytes);
    check_error("80 FF", 1, Problem::InvalidMarker(0xFF));
    check_error("80 68", 1, Problem::InvalidMarker(0x68));
    check_error("80 D4", 1, Problem::InvalidMarker(0xD4));
    check_error("80 E1 F4", 2, Problem::InvalidMarker(0xF4));
    check_error("80 40", 1, Problem::UserString);
    check_error("80 60 00", 1, Problem::UserString);
    check_error("80 CF 00 3C", 1, Problem::Float16);
    check_error("80 CC 00 00 00 00 00 00 F8 7F", 1, Problem::NonFiniteNumber);
    check_error("80 CD 00 00 80 7F", 1, Problem::NonFiniteNumber);
    check_error("80 81 FF", 1, Problem::InvalidUtf8);
    check_error("80 E2 03 01 02", 3, Problem::Truncated);
    check_error("80 E2 02 01 C9 00 01", 1, Problem::LengthMismatch);
    check_error("80 E5 02 03 01 02", 1, Problem::CountMismatch);
    check_error("80 E9 01 02", 2, Problem::NameNotString);
    check_error("80 E1 C3 09", 2, Problem::InvalidReference);
    check_error("80 E1 C3 00", 2, Problem::InvalidReference);
    check_error("80 E2 03 01 C3 03", 4, Problem::InvalidReference);
    check_error(
        "80 E2 07 82 61 62 C3 03 C3 06",
        8,
        Problem::InvalidReference,
    );
    check_error("80 71 01 05 61", 1, Problem::InvalidBase64Padding);
    check_error("80 78 01 F1", 1, Problem::InvalidCompressedString);
    check_error("80 7B 01 80 00", 1, Problem::InvalidCompressedString);
    check_error("80 7B 01 FF 01", 1, Problem::InvalidCompressedString);
    check_error("80 F0 C8 01 00", 2, Problem::InvalidUniformArray);
    check_error("80 F0 CF 01 00 00", 2, Problem::InvalidUniformArray);
    check_error("80 F2 F1 D7 01 01 00", 2, Problem::InvalidUniformArray);
    check_error("80 F0 DA 02 01 00 00 00", 8, Problem::Truncated);
    assert_eq!(
        to_json_text(b"{}").expect_err("text"),
        DecodeError {
            offset: 0,
            problem: Problem::InvalidMarker(b'{')
        }
    );
}

#[test]
fn nesting_stops_where_the_text_parser_stops() {
    let nested = |depth: usize| {
        let mut buffer = vec![PREAMBLE];
        buffer.extend(std::iter::repeat_n(0xE1, depth));
        buffer.push(0xD0);
        buffer
    };
    let text = to_json_text(&nested(NESTING_MAX)).expect("deepest accepted");
    serde_json::from_slice::<Value>(&text).expect("the text parses");
    let error = to_json_text(&nested(NESTING_MAX + 1)).expect_err("too deep");
    assert_eq!(
        error,
        DecodeError {
            offset: NESTING_MAX + 1,
            problem: Problem::TooDeep
        }
    );
    let text = "[".repeat(NESTING_MAX + 1) + &"]".repeat(NESTING_MAX + 1);
    assert!(serde_json::from_str::<Value>(&text).is_err());
}

#[test]
fn references_cannot_expand_a_small_body_past_the_text_limit() {
    let string_bytes = 65_000;
    let references = TEXT_BYTES_MAX / string_bytes + 1;
    let mut payload = vec![0xC1];
    payload.extend_from_slice(&(string_bytes as u16).to_le_bytes());
    payload.extend(std::iter::repeat_n(b'a', string_bytes));
    for _ in 0..references {
        payload.extend_from_slice(&[0xC6, 6, 0, 0, 0]);
    }
    let mut buffer = vec![PREAMBLE, 0xE4];
    buffer.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buffer.extend_from_slice(&payload);
    assert!(buffer.len() < 100_000);
    let error = to_json_text(&buffer).expect_err("too large");
    assert_eq!(error.problem, Problem::TooLarge);
    // Half as many references fit.
    let fitting = 6 + 3 + string_bytes + 5 * (references / 2);
    let mut small = buffer[..fitting].to_vec();
    small[2..6].copy_from_slice(&((fitting - 6) as u32).to_le_bytes());
    let text = to_json_text(&small).expect("fits");
    assert!(text.len() > string_bytes * (references / 2));
}
