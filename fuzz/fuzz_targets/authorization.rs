//! Fuzzes the `authorization` header and the request date: any bytes give `Some`/`None`,
//! `Ok`/`Err` from the master-key parser, the resource-token checker and the Entra ID token
//! checker of `lethedb-auth`, never a panic. The input is `date\nheader`: the date line also
//! feeds the string to sign, the header line is also used as a resource link, a token payload
//! and Entra ID claims, so the fuzzer reaches the checks behind a valid signature. Invariants:
//! - a header made by `MasterKey::authorization_header` parses and verifies, and neither any
//!   single-byte change of its signature nor a single-byte change of the header's text (a
//!   dozen positions per input) that alters the decoded signature verifies;
//! - a resource token made by `ResourceToken::sign` verifies to the same token, and no
//!   single-byte change of its MAC verifies; a changed token that verifies names the same
//!   permission and times;
//! - an Entra ID token carrying another key's text is refused.

#![no_main]

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use lethedb_auth::{
    check_emulator_entra_token, parse_authorization, EntraError, MasterKey, ResourceToken,
    TokenError, EMULATOR_KEY, ENTRA_TOKEN_PREFIX,
};
use lethedb_fuzz::split_line;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const NOW_SECS: i64 = 1_800_000_000;
const DEFAULT_DATE: &str = "Fri, 15 Jan 2027 08:00:00 GMT";
const ENTRA_HEADER: &str = r#"{"typ":"JWT","alg":"RS256","x5t":"CosmosEmulatorPrimaryMaster","kid":"CosmosEmulatorPrimaryMaster"}"#;

fn key() -> &'static MasterKey {
    static KEY: OnceLock<MasterKey> = OnceLock::new();
    KEY.get_or_init(|| MasterKey::from_base64(EMULATOR_KEY).expect("emulator key"))
}

/// What every parser and checker does with a header as sent.
fn check_raw(header: &str, date: &str) {
    let key = key();
    if let Some(token) = parse_authorization(header) {
        for (verb, kind, link) in [
            ("GET", "docs", "dbs/db/colls/c/docs/x"),
            ("POST", "dbs", ""),
        ] {
            // A random signature verifying would be a forgery (or a broken MAC).
            let forged = key.verify(verb, kind, link, date, &token.signature);
            let expected = STANDARD
                .decode(key.sign(verb, kind, link, date))
                .expect("base64");
            assert_eq!(
                forged,
                token.signature == expected,
                "signature {:?}",
                token.signature
            );
        }
    }
    let _ = ResourceToken::is_resource_token(header);
    if let Ok(token) = ResourceToken::verify(header, key) {
        // Only a token this key made verifies: signing it again gives a token that verifies
        // to the same fields.
        assert_eq!(ResourceToken::verify(&token.sign(key), key), Ok(token));
    }
    let decoded = percent_encoding::percent_decode_str(header).decode_utf8_lossy();
    if let Some(jwt) = decoded.strip_prefix(ENTRA_TOKEN_PREFIX) {
        let _ = check_emulator_entra_token(jwt, key, NOW_SECS);
    }
    let _ = check_emulator_entra_token(header, key, NOW_SECS);
    let _ = MasterKey::from_base64(header);
}

/// The positions of a text of `len` bytes changed per input: a few spread from a start the
/// input picks (every position of every text would cost a verification each).
fn positions(len: usize, pick: u8) -> impl Iterator<Item = usize> {
    const CHANGES: usize = 12;
    let step = len.div_ceil(CHANGES).max(1);
    let start = usize::from(pick) % step;
    (start..len).step_by(step)
}

/// A header this key signed verifies; no single-byte change of it does, unless the change
/// leaves the decoded signature as it was (case in `type`, a `%` escape of the same byte).
fn check_master_signature(link: &str, date: &str, flip: u8) {
    let key = key();
    let header = key.authorization_header("GET", "docs", link, date);
    let token = parse_authorization(&header).expect("a signed header parses");
    assert_eq!(token.kind, "master");
    assert!(
        key.verify("get", "DOCS", link, date, &token.signature),
        "{header}"
    );
    let flip = flip.max(1);
    for at in 0..token.signature.len() {
        let mut changed = token.signature.clone();
        changed[at] ^= flip;
        assert!(
            !key.verify("GET", "docs", link, date, &changed),
            "changed byte {at}"
        );
    }
    let mut bytes = header.clone().into_bytes();
    for at in positions(bytes.len(), flip) {
        let original = bytes[at];
        bytes[at] = original ^ flip;
        if let Ok(changed) = std::str::from_utf8(&bytes) {
            if let Some(parsed) = parse_authorization(changed) {
                if key.verify("GET", "docs", link, date, &parsed.signature) {
                    assert_eq!(parsed.signature, token.signature, "{changed} verifies");
                }
            }
        }
        bytes[at] = original;
    }
}

/// A resource token made from the input's fields round-trips; a changed one never verifies to
/// other fields.
fn check_resource_token(fields: &str, flip: u8) {
    let key = key();
    let mut parts = fields.split(['\n', '\t']);
    let mut next = || parts.next().unwrap_or_default().to_string();
    let token = ResourceToken {
        database_rid: next(),
        user_rid: next(),
        permission_rid: next(),
        permission_etag: next(),
        issued_at_secs: next().parse().unwrap_or(NOW_SECS),
        expires_at_secs: next().parse().unwrap_or(NOW_SECS + 3600),
    };
    let text = token.sign(key);
    let verified = ResourceToken::verify(&text, key);
    if text.len() <= 2048 {
        assert_eq!(verified.as_ref(), Ok(&token), "{text}");
        let encoded =
            percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        if encoded.len() <= 3 * 2048 {
            assert_eq!(ResourceToken::verify(&encoded, key).as_ref(), Ok(&token));
        }
    } else {
        assert_eq!(verified, Err(TokenError::Malformed), "an oversized token");
    }
    let Some(body) = text.strip_prefix("type=resource&ver=1&sig=") else {
        panic!("token head {text}");
    };
    let (mac, payload) = body.split_once(';').expect("mac;payload;");
    let mac = STANDARD.decode(mac).expect("mac base64");
    let flip = flip.max(1);
    for at in 0..mac.len() {
        let mut changed = mac.clone();
        changed[at] ^= flip;
        let forged = format!(
            "type=resource&ver=1&sig={};{payload}",
            STANDARD.encode(&changed)
        );
        assert!(
            ResourceToken::verify(&forged, key).is_err(),
            "changed MAC byte {at}"
        );
    }
    let mut bytes = text.into_bytes();
    for at in positions(bytes.len(), flip) {
        let original = bytes[at];
        bytes[at] = original ^ flip;
        if let Ok(changed) = std::str::from_utf8(&bytes) {
            if let Ok(other) = ResourceToken::verify(changed, key) {
                assert_eq!(other, token, "{changed} verifies to other fields");
            }
        }
        bytes[at] = original;
    }
}

/// An Entra ID token of the emulator's form with the input as claims: the times decide, never a
/// panic; the same token with another key's text is refused.
fn check_entra(claims: &str) {
    let key = key();
    let part = |text: &str| URL_SAFE_NO_PAD.encode(text.as_bytes());
    let jwt = format!(
        "{}.{}.{}",
        part(ENTRA_HEADER),
        part(claims),
        part(EMULATOR_KEY)
    );
    let _ = check_emulator_entra_token(&jwt, key, NOW_SECS);
    let other = format!("{}.{}.{}", part(ENTRA_HEADER), part(claims), part("AAAA"));
    assert_eq!(
        check_emulator_entra_token(&other, key, NOW_SECS),
        Err(EntraError::Invalid)
    );
}

fuzz_target!(|data: &[u8]| {
    let (first, rest) = split_line(data);
    let (date, header) = match rest {
        Some(rest) => (
            String::from_utf8_lossy(first),
            String::from_utf8_lossy(rest),
        ),
        None => (DEFAULT_DATE.into(), String::from_utf8_lossy(first)),
    };
    let flip = data.first().copied().unwrap_or(1);
    check_raw(&header, &date);
    check_master_signature(&header, &date, flip);
    check_resource_token(&header, flip);
    check_entra(&header);
});
