//! Entra ID (AAD) tokens in the Cosmos DB emulator's format: the header
//! `type=aad&ver=1.0&sig=<JWT>`, where the JWT's header names the emulator's key
//! (`kid` or `x5t` `CosmosEmulatorPrimaryMaster`), its claims carry `exp` (and usually `nbf`),
//! and its third part, where a real token has an RS256 signature, is the master key's own text
//! in base64url. That is what the SDKs' emulator credentials (for instance the Java SDK's
//! `AadSimpleEmulatorTokenCredential` and the .NET SDK's `LocalEmulatorTokenCredential` test
//! helpers) produce, and what the emulator accepts in place of a token from Entra ID.
//!
//! Only the format and the times are checked here; whether the connection is HTTPS is the
//! server's question.

use crate::master::MasterKey;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::Value;

/// How an Entra ID `authorization` header begins (after URL-decoding).
pub const ENTRA_TOKEN_PREFIX: &str = "type=aad&ver=1.0&sig=";
/// The key id the emulator's tokens name.
const EMULATOR_KEY_ID: &str = "CosmosEmulatorPrimaryMaster";
/// How far `nbf` and `exp` may be off the server's clock (the usual JWT leeway).
const LEEWAY_SECS: i64 = 5 * 60;
/// The longest token we look at.
const TOKEN_BYTES_MAX: usize = 16 * 1024;

/// Why an Entra ID token is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntraError {
    /// Not a JWT of the emulator's form, or not made with this server's key.
    Invalid,
    /// Its `exp` has passed.
    Expired,
    /// Its `nbf` is still to come.
    NotYetValid,
}

/// Checks the JWT (the part after [`ENTRA_TOKEN_PREFIX`]) against the key and the time.
pub fn check_emulator_entra_token(
    jwt: &str,
    key: &MasterKey,
    now_secs: i64,
) -> Result<(), EntraError> {
    if jwt.len() > TOKEN_BYTES_MAX {
        return Err(EntraError::Invalid);
    }
    let mut parts = jwt.trim().split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(EntraError::Invalid);
    };
    let header = json_part(header)?;
    let names_key = ["kid", "x5t"]
        .iter()
        .any(|name| header.get(name).and_then(Value::as_str) == Some(EMULATOR_KEY_ID));
    if !names_key {
        return Err(EntraError::Invalid);
    }
    let signature = base64url(signature)?;
    if !key.is_key_text(&signature) {
        return Err(EntraError::Invalid);
    }
    let claims = json_part(claims)?;
    let time = |name: &str| claims.get(name).and_then(Value::as_f64).map(|v| v as i64);
    let expires = time("exp").ok_or(EntraError::Invalid)?;
    // Claims are any JSON numbers (cast to i64 they saturate), so the leeway saturates too: a
    // far-future `exp` is valid, not an overflow (found by the `authorization` fuzz target).
    if now_secs > expires.saturating_add(LEEWAY_SECS) {
        return Err(EntraError::Expired);
    }
    if time("nbf").is_some_and(|not_before| now_secs.saturating_add(LEEWAY_SECS) < not_before) {
        return Err(EntraError::NotYetValid);
    }
    Ok(())
}

fn base64url(part: &str) -> Result<Vec<u8>, EntraError> {
    URL_SAFE_NO_PAD
        .decode(part)
        .or_else(|_| URL_SAFE.decode(part))
        .map_err(|_| EntraError::Invalid)
}

fn json_part(part: &str) -> Result<Value, EntraError> {
    let value: Value =
        serde_json::from_slice(&base64url(part)?).map_err(|_| EntraError::Invalid)?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(EntraError::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::master::EMULATOR_KEY;

    const NOW: i64 = 1_800_000_000;

    fn jwt(header: &str, claims: &str, key_text: &str) -> String {
        [header, claims, key_text]
            .iter()
            .map(|part| URL_SAFE_NO_PAD.encode(part.as_bytes()))
            .collect::<Vec<_>>()
            .join(".")
    }

    fn header() -> &'static str {
        r#"{"typ":"JWT","alg":"RS256","x5t":"CosmosEmulatorPrimaryMaster","kid":"CosmosEmulatorPrimaryMaster"}"#
    }

    fn claims(nbf: i64, exp: i64) -> String {
        format!(
            r#"{{"aud":"https://localhost.localhost","iat":{nbf},"nbf":{nbf},"exp":{exp},"tid":"EmulatorFederation"}}"#
        )
    }

    #[test]
    fn the_emulator_credential_form_is_accepted_and_its_times_checked() {
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let good = jwt(header(), &claims(NOW - 10, NOW + 3600), EMULATOR_KEY);
        assert_eq!(check_emulator_entra_token(&good, &key, NOW), Ok(()));
        let expired = jwt(header(), &claims(NOW - 7200, NOW - 3600), EMULATOR_KEY);
        assert_eq!(
            check_emulator_entra_token(&expired, &key, NOW),
            Err(EntraError::Expired)
        );
        let early = jwt(header(), &claims(NOW + 3600, NOW + 7200), EMULATOR_KEY);
        assert_eq!(
            check_emulator_entra_token(&early, &key, NOW),
            Err(EntraError::NotYetValid)
        );
    }

    #[test]
    fn times_at_the_ends_of_the_range_do_not_overflow() {
        // `exp` past i64::MAX used to overflow adding the leeway (a panic with overflow checks,
        // a token refused as expired without). Found by the `authorization` fuzz target.
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        for (claims, expected) in [
            (r#"{"exp":9.3e18}"#, Ok(())),
            (r#"{"exp":1e300,"nbf":-1e300}"#, Ok(())),
            (r#"{"exp":-9.3e18}"#, Err(EntraError::Expired)),
            (r#"{"exp":1e300,"nbf":1e300}"#, Err(EntraError::NotYetValid)),
        ] {
            let token = jwt(header(), claims, EMULATOR_KEY);
            assert_eq!(
                check_emulator_entra_token(&token, &key, NOW),
                expected,
                "{claims}"
            );
            // Any clock at all gives an answer, never an overflow.
            let _ = check_emulator_entra_token(&token, &key, i64::MAX);
            let _ = check_emulator_entra_token(&token, &key, i64::MIN);
        }
    }

    #[test]
    fn another_key_or_form_is_invalid() {
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let claims = claims(NOW, NOW + 3600);
        for token in [
            jwt(header(), &claims, "AAAA"),
            jwt(
                r#"{"typ":"JWT","alg":"RS256","kid":"other"}"#,
                &claims,
                EMULATOR_KEY,
            ),
            jwt(header(), r#"{"aud":"x"}"#, EMULATOR_KEY),
            jwt(header(), "[]", EMULATOR_KEY),
            "a.b".to_string(),
            "not a jwt".to_string(),
        ] {
            assert_eq!(
                check_emulator_entra_token(&token, &key, NOW),
                Err(EntraError::Invalid),
                "{token}"
            );
        }
    }
}
