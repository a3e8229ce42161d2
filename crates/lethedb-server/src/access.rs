//! Who may make a request, and whether it may make this one.
//!
//! [`authenticate`] runs before anything reads the catalog and says who the caller is: a
//! master key (the signature over verb, resource type, link and date, within the clock skew),
//! a resource token (its MAC and expiry), or, over HTTPS, an Entra ID token in the emulator's
//! format. [`authorize`] runs once the path's resource ids are resolved: a master key may do
//! anything, an Entra ID token data operations only (`grants.rs`); a resource token is checked against its permission as the
//! catalog holds it now (deleted or replaced since the token was made: revoked, 401) and then
//! against the rules of `grants.rs` (403). Key handling itself (HMAC, token parsing) lives in
//! the `lethedb-auth` crate.

use crate::error::{ApiError, ApiResult, Code};
use crate::grants::{entra_allows, granted_partition_key, Grant, Mode};
use crate::head::RequestHead;
use crate::operation::Operation;
use crate::resolve::resolve_resource_ids;
use crate::routes::ResourcePath;
use crate::state::{AppState, Gateway};
use axum::http::{HeaderMap, Method};
use lethedb_auth::{self as auth, EntraError, ResourceToken, TokenError};
use lethedb_engine::{Engine, ResourceKind, ResourceParent};
use serde_json::Value;

/// Who is calling, once authenticated.
#[derive(Debug)]
pub enum Caller {
    /// A master-key signature: everything is allowed.
    Master,
    /// An Entra ID token in the emulator's format: data operations, not management.
    Entra,
    /// A resource token: what its permission allows.
    Resource(ResourceToken),
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(Code::Unauthorized, message)
}

fn invalid_resource_token() -> ApiError {
    unauthorized("The input authorization token can't serve the request. Please check that the expected payload is built as per the protocol, and check the key being used.")
}

/// Checks the `authorization` header (and, for master keys, the request date). Reads no
/// resource from the engine (only its clock), so it answers the same whether or not the named
/// resources exist.
pub fn authenticate(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
) -> ApiResult<Caller> {
    let header = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| unauthorized("Required Header authorization is missing. Ensure a valid Authorization token is passed."))?;
    let now_secs = state.engine.now_ms().div_euclid(1000);
    if ResourceToken::is_resource_token(header) {
        let token = ResourceToken::verify(header, &state.key).map_err(|error| match error {
            TokenError::Malformed | TokenError::BadSignature => invalid_resource_token(),
        })?;
        if now_secs > token.expires_at_secs {
            // The service's answer to a token out of its time window (403, as for clock skew).
            return Err(ApiError::new(Code::ClockSkew, format!(
                "The authorization token is not valid at the current time. Please create another token and retry (token start time: {}, token expiry time: {}, current server time: {}).",
                http_date(token.issued_at_secs),
                http_date(token.expires_at_secs),
                http_date(now_secs)
            )));
        }
        return Ok(Caller::Resource(token));
    }
    let prefix = auth::ENTRA_TOKEN_PREFIX;
    if auth::header_starts_with(header, prefix) {
        let decoded = percent_encoding::percent_decode_str(header).decode_utf8_lossy();
        return authenticate_entra(
            state,
            decoded.trim_start().get(prefix.len()..).unwrap_or_default(),
            now_secs,
        );
    }
    // Decoded once, here, for the parser, into the stack.
    let mut buffer = [0u8; auth::AUTHORIZATION_BYTES_MAX];
    let decoded = auth::decode_authorization_into(header, &mut buffer);
    authenticate_master(state, method, headers, path, decoded, now_secs)
}

fn authenticate_entra(state: &AppState, jwt: &str, now_secs: i64) -> ApiResult<Caller> {
    if !state.entra_id {
        return Err(unauthorized(
            "Microsoft Entra ID (AAD) tokens are turned off on this server (--no-entra-id).",
        ));
    }
    if state.certificate_pem.is_none() {
        return Err(unauthorized(
            "Microsoft Entra ID (AAD) tokens are accepted only over HTTPS; start the server with --tls.",
        ));
    }
    auth::check_emulator_entra_token(jwt, &state.key, now_secs).map_err(|error| match error {
        EntraError::Expired | EntraError::NotYetValid => {
            unauthorized("The Microsoft Entra ID (AAD) token is not valid at the current time.")
        }
        EntraError::Invalid => {
            unauthorized("The Microsoft Entra ID (AAD) token is not valid for this account.")
        }
    })?;
    Ok(Caller::Entra)
}

fn authenticate_master(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
    decoded: Option<&str>,
    now_secs: i64,
) -> ApiResult<Caller> {
    let date = headers
        .get("x-ms-date")
        .or_else(|| headers.get("date"))
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            unauthorized(
                "Required Header x-ms-date is missing. Ensure a valid date header is passed.",
            )
        })?;
    let wrong_key = || {
        ApiError::new(Code::Unauthorized, format!(
            "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. Server used the following payload to sign: '{}\n{}\n{}\n{}\n\n'",
            method.as_str().to_ascii_lowercase(),
            path.resource_type.to_ascii_lowercase(),
            path.gateway_link.as_deref().unwrap_or(&path.link),
            date.to_ascii_lowercase()
        ))
    };
    let token = decoded
        .and_then(auth::parse_decoded_authorization)
        .ok_or_else(wrong_key)?;
    if token.kind != "master" {
        return Err(unauthorized(
            "Only master keys (type=master), resource tokens (type=resource) and Entra ID tokens (type=aad) are accepted.",
        ));
    }
    let verb = method.as_str();
    // The compute gateway checks the signature over the ids as sent; only the routing gateway
    // reads them once more (`Gateway`).
    let gateway_link = match state.gateway {
        Gateway::Routing => path.gateway_link.as_deref(),
        Gateway::Compute => None,
    };
    let verify = |link: &str| {
        state
            .key
            .verify(verb, &path.resource_type, link, date, &token.signature)
    };
    // The link as resolved, as sent, or as a `_rid`; the others are formed only when needed.
    // Where the service's gateway reads an id differently from how it is stored, it checks
    // the signature over its own reading, which no client signs (`ResourcePath::gateway_link`).
    let signed = match gateway_link {
        Some(gateway_link) => verify(gateway_link),
        None => {
            verify(&path.link)
                || (path.raw_link != path.link && verify(&path.raw_link))
                || verify(&path.resource_id_link())
        }
    };
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
    if (now_secs - sent_secs).abs() > auth::CLOCK_SKEW_MAX_SECS {
        return Err(ApiError::new(Code::ClockSkew, format!(
            "The authorization token is not valid at the current time. Please create another token and retry (token start time: {date}, current server time: {}).",
            http_date(now_secs)
        )));
    }
    Ok(Caller::Master)
}

fn http_date(secs: i64) -> String {
    httpdate::fmt_http_date(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64),
    )
}

/// Whether the caller may perform `operation` on `path` (ids resolved). Reads the catalog for
/// resource tokens only, on the blocking pool (finding a user and a permission by `_rid` lists
/// their siblings, more than the point read a request worker may do).
pub async fn authorize(
    engine: &Engine,
    caller: &Caller,
    request: (&Method, &str),
    operation: Operation,
    path: &ResourcePath,
    head: &RequestHead<'_>,
    body: &[u8],
) -> ApiResult<()> {
    let token = match caller {
        Caller::Master => return Ok(()),
        Caller::Entra if entra_allows(operation) => return Ok(()),
        Caller::Entra => {
            let (method, uri_path) = request;
            return Err(ApiError::new(
                Code::EntraForbidden,
                format!(
                    "Request blocked by Auth lethedb : The given request [{method} {uri_path}] cannot be authorized by AAD token in data plane. Learn more: https://aka.ms/cosmos-native-rbac."
                ),
            ));
        }
        Caller::Resource(token) => token,
    };
    let grant = load_grant(engine, token)
        .await?
        .ok_or_else(invalid_resource_token)?;
    // A header outside the key's grammar is the 400 the operation itself would answer.
    let partition_key = if grant.reads_partition_key(operation) {
        head.partition_key()?
    } else {
        None
    };
    if grant.allows(operation, path, partition_key, body) {
        Ok(())
    } else {
        Err(ApiError::from_code(Code::Forbidden))
    }
}

/// The grant of the permission the token names, if that permission still exists with the
/// `_etag` it had when the token was made (deleting or replacing it revokes its tokens).
async fn load_grant(engine: &Engine, token: &ResourceToken) -> ApiResult<Option<Grant>> {
    let Some(database_id) = engine.database_id_by_rid(&token.database_rid).await? else {
        return Ok(None);
    };
    let users = ResourceParent::Database {
        database_id: database_id.clone(),
    };
    let Some(user_id) = engine
        .resource_id_by_rid(ResourceKind::User, &users, &token.user_rid)
        .await?
    else {
        return Ok(None);
    };
    let permissions = ResourceParent::User {
        database_id,
        user_id,
    };
    let Some(permission_id) = engine
        .resource_id_by_rid(
            ResourceKind::Permission,
            &permissions,
            &token.permission_rid,
        )
        .await?
    else {
        return Ok(None);
    };
    let permission =
        engine.read_resource(ResourceKind::Permission, &permissions, &permission_id)?;
    if permission.get("_etag").and_then(Value::as_str) != Some(token.permission_etag.as_str()) {
        return Ok(None);
    }
    let mode = match permission.get("permissionMode").and_then(Value::as_str) {
        Some(mode) if mode.eq_ignore_ascii_case("all") => Mode::All,
        _ => Mode::Read,
    };
    let link = permission
        .get("resource")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut resource = ResourcePath::parse(link)?;
    // A rid link names the same resource as its name link; one that names nothing stays as is
    // and so matches no request.
    let _ = resolve_resource_ids(engine, &mut resource).await;
    Ok(Some(Grant {
        mode,
        resource: resource.segments,
        // A key no permission may have any more (it is refused when written) revokes the token.
        partition_key: match granted_partition_key(&permission) {
            Ok(key) => key,
            Err(_) => return Ok(None),
        },
    }))
}
