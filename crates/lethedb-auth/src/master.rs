//! Master-key authorization, as the service checks it and as clients compute it.
//!
//! The signature is an HMAC-SHA256, keyed by the base64-decoded master key, over
//! `verb\nresourceType\nresourceLink\nx-ms-date\n\n` with verb, type and date in lower case. The
//! `authorization` header carries `type=master&ver=1.0&sig=<base64>`, URL-encoded. This module
//! knows the signing rule and the clock-skew rule; which link a path signs is the router's.

use base64::Engine as _;
use ring::{digest, hmac};
use std::borrow::Cow;

/// The well-known master key of the Cosmos DB emulator, so existing connection strings work.
pub const EMULATOR_KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

/// How far a request's `x-ms-date` may be from the server's clock (the service allows 15 min).
pub const CLOCK_SKEW_MAX_SECS: i64 = 15 * 60;
/// The longest `authorization` header we look at.
pub const AUTHORIZATION_BYTES_MAX: usize = 1024;

/// A master key, decoded once at start-up and kept as an HMAC-SHA256 key with its padded
/// blocks already hashed. `ring` computes SHA-256 with the processor's SHA instructions where
/// it has them and with vector code where it does not (a third fewer instructions per request
/// than the `sha2` crate's portable code, which that crate falls back to).
#[derive(Clone)]
pub struct MasterKey {
    key: hmac::Key,
    /// SHA-256 of the key's text as configured, which the emulator's Entra ID tokens carry in
    /// place of a signature (`entra.rs`); the key itself is not kept.
    text_digest: [u8; 32],
}

impl MasterKey {
    pub fn from_base64(text: &str) -> Option<MasterKey> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .ok()?;
        if bytes.is_empty() {
            return None;
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, &bytes);
        let text_digest = sha256(text.trim().as_bytes());
        Some(MasterKey { key, text_digest })
    }

    fn mac(&self) -> hmac::Context {
        hmac::Context::with_key(&self.key)
    }

    /// An HMAC-SHA256 under the master key of `data`, which starts with a label of its own so
    /// that it can never equal a request signature (`resource_token.rs`).
    pub(crate) fn mac_of(&self, data: &[u8]) -> Vec<u8> {
        hmac::sign(&self.key, data).as_ref().to_vec()
    }

    /// Checks a MAC made by [`MasterKey::mac_of`] in constant time.
    pub(crate) fn verify_mac_of(&self, data: &[u8], tag: &[u8]) -> bool {
        hmac::verify(&self.key, data, tag).is_ok()
    }

    /// Whether `text` is the master key's text (compared through their digests).
    pub(crate) fn is_key_text(&self, text: &[u8]) -> bool {
        equal_in_constant_time(&sha256(text), &self.text_digest)
    }

    /// A name for the key that is safe to log: the first 8 hex digits of the SHA-256 of its
    /// text (trimmed). It tells two keys apart without helping anyone recover either.
    pub fn fingerprint(&self) -> String {
        self.text_digest[..4]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// Whether this is the emulator's well-known key, which anyone can sign with.
    pub fn is_emulator_key(&self) -> bool {
        self.is_key_text(EMULATOR_KEY.as_bytes())
    }

    /// The base64 signature of one request.
    pub fn sign(&self, verb: &str, resource_type: &str, resource_link: &str, date: &str) -> String {
        let mut mac = self.mac();
        update_with_string_to_sign(&mut mac, verb, resource_type, resource_link, date);
        base64::engine::general_purpose::STANDARD.encode(mac.sign())
    }

    /// Checks a decoded signature in constant time.
    pub fn verify(
        &self,
        verb: &str,
        resource_type: &str,
        resource_link: &str,
        date: &str,
        signature: &[u8],
    ) -> bool {
        let mut mac = self.mac();
        update_with_string_to_sign(&mut mac, verb, resource_type, resource_link, date);
        equal_in_constant_time(mac.sign().as_ref(), signature)
    }

    /// The full, URL-encoded `authorization` header value a client sends.
    pub fn authorization_header(
        &self,
        verb: &str,
        resource_type: &str,
        resource_link: &str,
        date: &str,
    ) -> String {
        let token = format!(
            "type=master&ver=1.0&sig={}",
            self.sign(verb, resource_type, resource_link, date)
        );
        percent_encoding::utf8_percent_encode(&token, percent_encoding::NON_ALPHANUMERIC)
            .to_string()
    }
}

/// Feeds the MAC `verb\nresourceType\nresourceLink\nx-ms-date\n\n`, with verb, type and date
/// in lower case, piece by piece: the same bytes as the string joined, without allocating it
/// and its three lower-cased parts on every request.
fn update_with_string_to_sign(
    mac: &mut hmac::Context,
    verb: &str,
    resource_type: &str,
    resource_link: &str,
    date: &str,
) {
    update_lowercase(mac, verb.as_bytes());
    mac.update(b"\n");
    update_lowercase(mac, resource_type.as_bytes());
    mac.update(b"\n");
    mac.update(resource_link.as_bytes());
    mac.update(b"\n");
    update_lowercase(mac, date.as_bytes());
    mac.update(b"\n\n");
}

/// Feeds the MAC `text` with ASCII letters in lower case (as `str::to_ascii_lowercase`), a
/// stack buffer's worth at a time.
fn update_lowercase(mac: &mut hmac::Context, text: &[u8]) {
    let mut buffer = [0u8; 64];
    for chunk in text.chunks(buffer.len()) {
        let lowered = &mut buffer[..chunk.len()];
        lowered.copy_from_slice(chunk);
        lowered.make_ascii_lowercase();
        mac.update(lowered);
    }
}

fn sha256(data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
    out
}

/// Whether two byte strings are equal, taking the same time wherever they differ (a signature
/// must not be guessable byte by byte from how soon a wrong one is refused). Lengths are not
/// secret.
fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .fold(0u8, |difference, (x, y)| difference | (x ^ y))
            == 0
}

/// The parts of an `authorization` header that matter.
#[derive(Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: String,
    pub signature: Vec<u8>,
}

/// Parses a (URL-encoded) `authorization` header; `None` if it is not a master-key token.
pub fn parse_authorization(header: &str) -> Option<Token> {
    parse_decoded_authorization(&decode_authorization(header)?)
}

/// An `authorization` header percent-decoded, if it is of a sane length and UTF-8 (borrowed
/// when nothing in it was encoded): the server decodes a header once and parses the text.
pub fn decode_authorization(header: &str) -> Option<Cow<'_, str>> {
    if header.len() > AUTHORIZATION_BYTES_MAX {
        return None;
    }
    percent_encoding::percent_decode_str(header)
        .decode_utf8()
        .ok()
}

/// [`decode_authorization`] into a caller's buffer: the server decodes every request's header,
/// and an owned string grown as it decodes cost a point read several allocations.
pub fn decode_authorization_into<'buffer>(
    header: &str,
    buffer: &'buffer mut [u8; AUTHORIZATION_BYTES_MAX],
) -> Option<&'buffer str> {
    if header.len() > AUTHORIZATION_BYTES_MAX {
        return None;
    }
    let length = percent_decode_runs(header.as_bytes(), buffer);
    std::str::from_utf8(buffer.get(..length)?).ok()
}

/// Percent-decodes `input` into `output` as `percent_encoding::percent_decode` does (a `%`
/// not followed by two hex digits stays as it is) and says how many bytes it wrote. The runs
/// between escapes are copied whole, where an iterator of decoded bytes cost a point read
/// ~1,900 instructions. Decoding never lengthens the text; what would not fit is left out.
fn percent_decode_runs(input: &[u8], output: &mut [u8]) -> usize {
    let hex = |byte: Option<&u8>| byte.and_then(|byte| char::from(*byte).to_digit(16));
    let (mut read, mut written) = (0, 0);
    while let Some(rest) = input.get(read..).filter(|rest| !rest.is_empty()) {
        let run = rest
            .iter()
            .position(|byte| *byte == b'%')
            .unwrap_or(rest.len());
        let Some(slot) = output.get_mut(written..written + run) else {
            break;
        };
        slot.copy_from_slice(&rest[..run]);
        written += run;
        read += run;
        if read == input.len() {
            break;
        }
        // Two hex digits make one byte; a `%` without them stays.
        let decoded =
            if let (Some(high), Some(low)) = (hex(input.get(read + 1)), hex(input.get(read + 2))) {
                read += 3;
                (high << 4 | low) as u8
            } else {
                read += 1;
                b'%'
            };
        let Some(slot) = output.get_mut(written) else {
            break;
        };
        *slot = decoded;
        written += 1;
    }
    written
}

/// Parses an `authorization` header already decoded ([`decode_authorization`]); `None` if it
/// is not a master-key token.
pub fn parse_decoded_authorization(decoded: &str) -> Option<Token> {
    let mut kind = None;
    let mut signature = None;
    for pair in decoded.split('&') {
        let (name, value) = pair.split_once('=')?;
        match name.trim() {
            "type" => kind = Some(value.trim().to_string()),
            "sig" => {
                signature = base64::engine::general_purpose::STANDARD
                    .decode(value.trim())
                    .ok();
            }
            _ => {}
        }
    }
    Some(Token {
        kind: kind?,
        signature: signature?,
    })
}

/// Whether a (URL-encoded or not) `authorization` header begins with `prefix`, ignoring ASCII
/// case. Only its head is decoded (an encoded character takes at most three bytes, so the
/// prefix lies in it): every request asks this of each kind of token before parsing one.
pub fn header_starts_with(header: &str, prefix: &str) -> bool {
    let trimmed = header.trim().as_bytes();
    let head = &trimmed[..(prefix.len() * 3).min(trimmed.len())];
    // Compared as it decodes, up to the first byte that differs (the sixth, `type=`'s end,
    // for another kind of token), with nothing allocated.
    let mut decoded = percent_encoding::percent_decode(head);
    prefix.bytes().all(|wanted| {
        decoded
            .next()
            .is_some_and(|byte| byte.eq_ignore_ascii_case(&wanted))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_header_verifies_and_a_changed_one_does_not() {
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let date = "Tue, 01 Nov 2022 10:00:00 GMT";
        let header = key.authorization_header("GET", "docs", "dbs/db 1/colls/c/docs/ä", date);
        let token = parse_authorization(&header).expect("parse");
        assert_eq!(token.kind, "master");
        assert!(key.verify(
            "get",
            "DOCS",
            "dbs/db 1/colls/c/docs/ä",
            date,
            &token.signature
        ));
        assert!(!key.verify(
            "GET",
            "docs",
            "dbs/db 1/colls/c/docs/b",
            date,
            &token.signature
        ));
        let other = MasterKey::from_base64("AAAA").expect("key");
        assert!(!other.verify(
            "GET",
            "docs",
            "dbs/db 1/colls/c/docs/ä",
            date,
            &token.signature
        ));
    }

    #[test]
    fn a_known_signature_matches() {
        // The string-to-sign rule, checked against an independently computed HMAC
        // (python3: hmac.new(b64decode(key), b"get\ndbs\ndbs/db1\nthu, 01 jan 1970 00:00:00 gmt\n\n", sha256)).
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        assert_eq!(
            key.sign("GET", "dbs", "dbs/db1", "Thu, 01 Jan 1970 00:00:00 GMT"),
            KNOWN_SIGNATURE
        );
    }

    const KNOWN_SIGNATURE: &str = "xj86+MWCCKMsKoaDK1xTBGEWeWzbmhBy42jihSkJCtQ=";

    #[test]
    fn decoding_into_a_buffer_reads_as_decoding_into_a_string() {
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let signed = key.authorization_header("GET", "docs", "dbs/d/colls/c/docs/x", "date");
        let too_long = "a".repeat(AUTHORIZATION_BYTES_MAX + 1);
        let longest = "%41".repeat(AUTHORIZATION_BYTES_MAX / 3);
        for header in [
            signed.as_str(),
            "type%3Dmaster",
            "plain",
            "%FF%FE",
            &too_long,
            &longest,
            "",
            "%",
            "%4",
            "a%",
            "%%41",
            "%4g%41",
            "%G1x",
            "100%",
            "%e2%82%ac%",
        ] {
            let mut buffer = [0u8; AUTHORIZATION_BYTES_MAX];
            assert_eq!(
                decode_authorization_into(header, &mut buffer),
                decode_authorization(header).as_deref(),
                "{header}"
            );
        }
    }

    #[test]
    fn runs_decode_as_the_percent_encoding_crate_decodes() {
        let alphabet = b"%%%0123456789abcdefABCDEFgG=&+/ \xff";
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let length = (seed % 24) as usize;
            let input: Vec<u8> = (0..length)
                .map(|at| alphabet[((seed >> (at % 8 * 8)) as usize + at * 7) % alphabet.len()])
                .collect();
            let mut output = [0u8; 32];
            let written = percent_decode_runs(&input, &mut output);
            let want: Vec<u8> = percent_encoding::percent_decode(&input).collect();
            assert_eq!(&output[..written], want.as_slice(), "{input:?}");
        }
    }

    #[test]
    fn parts_longer_than_the_lowercasing_buffer_sign_as_the_joined_string() {
        // The string to sign is fed in pieces; a part longer than the 64-byte buffer, in mixed
        // case, must sign exactly as the lower-cased string joined whole.
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let (verb, kind, link) = ("PoSt", "DOCS".repeat(40), "dbs/A/colls/B/docs/C".repeat(5));
        let date = "Thu, 01 Jan 1970 00:00:00 GMT ".repeat(7);
        let joined = format!(
            "{}\n{}\n{link}\n{}\n\n",
            verb.to_ascii_lowercase(),
            kind.to_ascii_lowercase(),
            date.to_ascii_lowercase()
        );
        let mut mac = key.mac();
        mac.update(joined.as_bytes());
        let expected = base64::engine::general_purpose::STANDARD.encode(mac.sign());
        assert_eq!(key.sign(verb, &kind, &link, &date), expected);
    }

    #[test]
    fn the_fingerprint_names_the_key_without_showing_it() {
        let emulator = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        // The first 4 bytes of SHA-256 of the emulator key's text, in hex.
        assert_eq!(emulator.fingerprint(), "aa654743");
        assert!(emulator.is_emulator_key());
        assert_eq!(
            MasterKey::from_base64(&format!("  {EMULATOR_KEY}\n"))
                .expect("key")
                .fingerprint(),
            emulator.fingerprint(),
            "surrounding whitespace is not part of the key"
        );
        let custom = MasterKey::from_base64("c2VjcmV0LWtleQ==").expect("key");
        assert!(!custom.is_emulator_key());
        assert_ne!(custom.fingerprint(), emulator.fingerprint());
        assert!(!EMULATOR_KEY
            .to_ascii_lowercase()
            .contains(&emulator.fingerprint()));
    }

    #[test]
    fn malformed_headers_are_rejected() {
        for header in [
            "",
            "type=master",
            "sig=%%%",
            "type=master&ver=1.0&sig=not base64!",
            &"x".repeat(2000),
        ] {
            assert_eq!(parse_authorization(header), None, "{header}");
        }
    }
}
