//! Who may make a request: the master-key signature over (verb, resource type, link, date)
//! and the clock skew of the date.
//!
//! Only master keys are accepted, which allow everything, so authenticating is all the
//! authorization there is today; resource tokens would add a per-[`Operation`] check after
//! resolution. Key handling itself (HMAC, token parsing) lives in `auth`.
//!
//! [`Operation`]: crate::operation::Operation

use crate::auth;
use crate::error::{ApiError, ApiResult, Code};
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::http::{HeaderMap, Method};

/// Checks the master-key signature and the request date. Reads no resource from the engine
/// (only its clock), so it answers the same whether or not the named resources exist.
pub fn authenticate(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
) -> ApiResult<()> {
    let header = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::new(Code::Unauthorized, "Required Header authorization is missing. Ensure a valid Authorization token is passed."))?;
    let date = headers
        .get("x-ms-date")
        .or_else(|| headers.get("date"))
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::new(
                Code::Unauthorized,
                "Required Header x-ms-date is missing. Ensure a valid date header is passed.",
            )
        })?;
    let wrong_key = || {
        ApiError::new(Code::Unauthorized, format!(
            "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. Server used the following payload to sign: '{}\n{}\n{}\n{}\n\n'",
            method.as_str().to_ascii_lowercase(),
            path.resource_type.to_ascii_lowercase(),
            path.link,
            date.to_ascii_lowercase()
        ))
    };
    let token = auth::parse_authorization(header).ok_or_else(wrong_key)?;
    if token.kind != "master" {
        return Err(ApiError::new(
            Code::Unauthorized,
            "Only master-key authorization (type=master) is supported.",
        ));
    }
    let verb = method.as_str();
    let links = [
        path.link.as_str(),
        path.raw_link.as_str(),
        &path.resource_id_link(),
    ];
    let signed = links.iter().any(|link| {
        state
            .key
            .verify(verb, &path.resource_type, link, date, &token.signature)
    });
    if !signed {
        return Err(wrong_key());
    }
    let sent = httpdate::parse_http_date(date).map_err(|_| {
        ApiError::new(
            Code::Unauthorized,
            format!("The x-ms-date header '{date}' is not a valid RFC 1123 date."),
        )
    })?;
    let sent_secs = match sent.duration_since(std::time::UNIX_EPOCH) {
        Ok(elapsed) => elapsed.as_secs() as i64,
        Err(_) => 0,
    };
    let now_secs = state.engine.now_ms().div_euclid(1000);
    if (now_secs - sent_secs).abs() > auth::CLOCK_SKEW_MAX_SECS {
        return Err(ApiError::new(Code::ClockSkew, format!(
            "The authorization token is not valid at the current time. Please create another token and retry (token start time: {date}, current server time: {}).",
            httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(now_secs.max(0) as u64))
        )));
    }
    Ok(())
}
