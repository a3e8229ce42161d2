//! Resource tokens: what a permission hands out in `_token`, and what a client then sends as
//! its whole `authorization` header (URL-encoded).
//!
//! A token reads `type=resource&ver=1&sig=<mac>;<payload>;`, both parts standard base64. The
//! payload names the permission that issued it by resource ids (its database, user and own
//! `_rid`), the permission's `_etag` when the token was made, and the seconds it was made and
//! expires. The
//! MAC is an HMAC-SHA256 under the master key of a label and the payload, so a token survives
//! restarts and needs no table, and only the key's holder can make one. It starts with
//! `type=resource&` because that is how the SDKs tell a resource token from a master key.
//!
//! This module only makes and checks tokens; whether the permission still exists with the same
//! `_etag`, whether the token has expired and what it allows are the server's questions.

use crate::master::{header_starts_with, MasterKey};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// How every resource token begins (the SDKs look for `type=resource`).
pub const RESOURCE_TOKEN_PREFIX: &str = "type=resource&";
/// The rest of the fixed head: the version and the start of the signature.
const HEAD_AFTER_PREFIX: &str = "ver=1&sig=";
/// What the MAC covers before the payload, so it never equals any other signature.
const MAC_LABEL: &[u8] = b"lethedb resource token v1\n";
/// The longest token we look at (URL-decoded).
const TOKEN_BYTES_MAX: usize = 2048;

/// What a resource token names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceToken {
    pub database_rid: String,
    pub user_rid: String,
    pub permission_rid: String,
    /// The permission's `_etag` when the token was made: a replaced permission has another.
    pub permission_etag: String,
    /// Seconds since the Unix epoch when the token was made.
    pub issued_at_secs: i64,
    /// Seconds since the Unix epoch after which the token is refused.
    pub expires_at_secs: i64,
}

/// Why a header is not a valid resource token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// Not of the form `type=resource&ver=1&sig=<mac>;<payload>;`.
    Malformed,
    /// Well formed, but not made with this server's key (or changed since).
    BadSignature,
}

impl ResourceToken {
    fn payload(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            self.database_rid,
            self.user_rid,
            self.permission_rid,
            self.permission_etag,
            self.issued_at_secs,
            self.expires_at_secs
        )
    }

    /// The token's text, as a permission's `_token` carries it.
    pub fn sign(&self, key: &MasterKey) -> String {
        let payload = self.payload();
        let mac = key.mac_of(&[MAC_LABEL, payload.as_bytes()].concat());
        format!(
            "{RESOURCE_TOKEN_PREFIX}{HEAD_AFTER_PREFIX}{};{};",
            STANDARD.encode(mac),
            STANDARD.encode(payload.as_bytes())
        )
    }

    /// Whether an `authorization` header (URL-encoded or not) claims to be a resource token.
    pub fn is_resource_token(header: &str) -> bool {
        header.trim().len() <= TOKEN_BYTES_MAX * 3
            && header_starts_with(header, RESOURCE_TOKEN_PREFIX)
    }

    /// Parses a header and checks its MAC; says nothing about expiry or revocation.
    pub fn verify(header: &str, key: &MasterKey) -> Result<ResourceToken, TokenError> {
        let text = decode(header).ok_or(TokenError::Malformed)?;
        let head_len = RESOURCE_TOKEN_PREFIX.len() + HEAD_AFTER_PREFIX.len();
        let (head, rest) = (
            text.get(..head_len).ok_or(TokenError::Malformed)?,
            text.get(head_len..).ok_or(TokenError::Malformed)?,
        );
        if !head.eq_ignore_ascii_case(&format!("{RESOURCE_TOKEN_PREFIX}{HEAD_AFTER_PREFIX}")) {
            return Err(TokenError::Malformed);
        }
        let mut parts = rest.split(';');
        let (Some(mac), Some(payload), Some(""), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let mac = STANDARD.decode(mac).map_err(|_| TokenError::Malformed)?;
        let payload = STANDARD
            .decode(payload)
            .map_err(|_| TokenError::Malformed)?;
        if !key.verify_mac_of(&[MAC_LABEL, &payload].concat(), &mac) {
            return Err(TokenError::BadSignature);
        }
        let payload = String::from_utf8(payload).map_err(|_| TokenError::Malformed)?;
        let fields: Vec<&str> = payload.split('\n').collect();
        let [database_rid, user_rid, permission_rid, permission_etag, issued, expires] = fields[..]
        else {
            return Err(TokenError::Malformed);
        };
        Ok(ResourceToken {
            database_rid: database_rid.to_string(),
            user_rid: user_rid.to_string(),
            permission_rid: permission_rid.to_string(),
            permission_etag: permission_etag.to_string(),
            issued_at_secs: issued.parse().map_err(|_| TokenError::Malformed)?,
            expires_at_secs: expires.parse().map_err(|_| TokenError::Malformed)?,
        })
    }
}

/// The header percent-decoded, if it is of a sane length and UTF-8.
fn decode(header: &str) -> Option<String> {
    if header.len() > TOKEN_BYTES_MAX * 3 {
        return None;
    }
    let text = percent_encoding::percent_decode_str(header.trim())
        .decode_utf8()
        .ok()?
        .into_owned();
    (text.len() <= TOKEN_BYTES_MAX).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::master::EMULATOR_KEY;

    fn token() -> ResourceToken {
        ResourceToken {
            database_rid: "AQAAAA==".into(),
            user_rid: "AQAAAAAAAAA=".into(),
            permission_rid: "AQAAAAAAAAAAAAAAAAAAAg==".into(),
            permission_etag: "\"00000003-0000-0000-0000-000000000001\"".into(),
            issued_at_secs: 1_800_000_000,
            expires_at_secs: 1_800_003_600,
        }
    }

    fn key() -> MasterKey {
        MasterKey::from_base64(EMULATOR_KEY).expect("key")
    }

    #[test]
    fn a_token_round_trips_plain_and_url_encoded() {
        let text = token().sign(&key());
        assert!(text.starts_with("type=resource&ver=1&sig="), "{text}");
        assert!(text.ends_with(';'), "{text}");
        assert_eq!(ResourceToken::verify(&text, &key()), Ok(token()));
        // As Python (`quote(token, "-_.!~*'()")`) and JS (`encodeURIComponent`) send it.
        let encoded =
            percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        assert!(ResourceToken::is_resource_token(&encoded));
        assert_eq!(ResourceToken::verify(&encoded, &key()), Ok(token()));
    }

    #[test]
    fn another_key_or_a_changed_payload_is_a_bad_signature() {
        let text = token().sign(&key());
        let other = MasterKey::from_base64("AAAA").expect("key");
        assert_eq!(
            ResourceToken::verify(&text, &other),
            Err(TokenError::BadSignature)
        );
        let mut longer = token();
        longer.expires_at_secs += 3600;
        let forged_payload = STANDARD.encode(longer.payload().as_bytes());
        let mac = text
            .trim_start_matches("type=resource&ver=1&sig=")
            .split(';')
            .next()
            .expect("mac");
        let forged = format!("type=resource&ver=1&sig={mac};{forged_payload};");
        assert_eq!(
            ResourceToken::verify(&forged, &key()),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn malformed_tokens_are_malformed() {
        for text in [
            "",
            "type=resource&",
            "type=resource&ver=1&sig=",
            "type=resource&ver=1&sig=abc",
            "type=resource&ver=1&sig=%%%;xyz;",
            "type=resource&ver=2&sig=YWJj;YWJj;",
            "type=resource&ver=1&sig=YWJj;YWJj;extra;",
            "type=master&ver=1.0&sig=YWJj",
        ] {
            assert_eq!(
                ResourceToken::verify(text, &key()),
                Err(TokenError::Malformed),
                "{text}"
            );
        }
        assert!(!ResourceToken::is_resource_token(
            "type=master&ver=1.0&sig=x"
        ));
        assert!(ResourceToken::is_resource_token(
            "TYPE=RESOURCE&ver=1&sig=x"
        ));
        // Fully encoded, as some SDKs send it, and encoded only in part.
        assert!(ResourceToken::is_resource_token(
            "%74%79%70%65%3D%72%65%73%6F%75%72%63%65%26%76%65%72"
        ));
        assert!(ResourceToken::is_resource_token(
            "type%3Dresource%26ver%3D1"
        ));
        assert!(!ResourceToken::is_resource_token("type%3Dmaster%26ver%3D1"));
        assert!(!ResourceToken::is_resource_token("type=res"));
        assert!(!ResourceToken::is_resource_token(""));
    }
}
