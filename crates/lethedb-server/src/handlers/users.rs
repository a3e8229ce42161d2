//! Permissions (`dbs/{db}/users/{user}/permissions`): create, read, replace, upsert, delete,
//! read feed and query, over the engine's generic catalog. Users themselves are served like
//! any other child resource (`children.rs`; a replace with a new id renames).
//!
//! A permission's body is checked here (`permissionMode` `All` or `Read`, a `resource` link,
//! an optional `resourcePartitionKey`; one permission per user and resource), and every
//! permission this module answers with carries a fresh `_token`, valid for
//! `x-ms-documentdb-expiry-seconds` (default one hour, at most five), as on the service. The
//! resource a permission names need not exist, as on the service.

use super::children::resource_reply;
use super::context::{list_resources, Context, Listing};
use crate::error::{ApiError, ApiResult, Code};
use crate::grants::granted_partition_key;
use crate::request::{header, parse_json};
use crate::resolve::resolve_resource_ids;
use crate::respond::Reply;
use crate::routes::ResourcePath;
use axum::http::StatusCode;
use lethedb_auth::ResourceToken;
use lethedb_engine::{request_units, ErrorCode, ResourceKind, ResourceParent};
use serde_json::Value;

/// A resource token's lifetime when the request does not say (the service's one hour).
pub const TOKEN_SECONDS_DEFAULT: i64 = 3600;
/// The longest lifetime a request may ask for (the service's 18,000 seconds, five hours).
pub const TOKEN_SECONDS_MAX: i64 = 18_000;

fn database(context: &Context<'_>) -> ResourceParent {
    ResourceParent::Database {
        database_id: context.path.id(0).to_string(),
    }
}

fn user(context: &Context<'_>) -> ResourceParent {
    ResourceParent::User {
        database_id: context.path.id(0).to_string(),
        user_id: context.path.id(1).to_string(),
    }
}

fn text<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// The lifetime the request asks for: `x-ms-documentdb-expiry-seconds`, 1 to 18,000.
fn token_seconds(context: &Context<'_>) -> ApiResult<i64> {
    let Some(text) = header(context.headers, "x-ms-documentdb-expiry-seconds") else {
        return Ok(TOKEN_SECONDS_DEFAULT);
    };
    match text.trim().parse::<i64>() {
        Ok(seconds) if (1..=TOKEN_SECONDS_MAX).contains(&seconds) => Ok(seconds),
        _ => Err(ApiError::new(
            Code::BadRequestHeader,
            format!(
                "The value '{text}' of header x-ms-documentdb-expiry-seconds is invalid: a resource token's lifetime is 1 to {TOKEN_SECONDS_MAX} seconds."
            ),
        )),
    }
}

/// The permission with a fresh `_token` naming it, signed with the master key.
fn with_token(context: &Context<'_>, mut permission: Value, seconds: i64) -> ApiResult<Value> {
    let engine = &context.state.engine;
    let user = engine.read_resource(ResourceKind::User, &database(context), context.path.id(1))?;
    let database = engine.read_database(context.path.id(0))?;
    let now_secs = engine.now_ms().div_euclid(1000);
    let token = ResourceToken {
        database_rid: text(&database, "_rid").to_string(),
        user_rid: text(&user, "_rid").to_string(),
        permission_rid: text(&permission, "_rid").to_string(),
        permission_etag: text(&permission, "_etag").to_string(),
        issued_at_secs: now_secs,
        expires_at_secs: now_secs + seconds,
    }
    .sign(&context.state.key);
    if let Some(object) = permission.as_object_mut() {
        object.insert("_token".into(), Value::String(token));
    }
    Ok(permission)
}

fn bad_permission(message: &str) -> ApiError {
    ApiError::new(Code::Engine(ErrorCode::InvalidDocument), message)
}

/// Checks a permission body: its mode (any case, as the JS SDK sends `read` and `all`; kept
/// as sent, as the service echoes it), its resource link and its partition key.
fn check_permission(body: &mut Value) -> ApiResult<String> {
    match body.get("permissionMode").and_then(Value::as_str) {
        Some(mode) if mode.eq_ignore_ascii_case("all") || mode.eq_ignore_ascii_case("read") => {}
        Some(_) => {
            return Err(bad_permission(
                "The permissionMode of a permission must be 'All' or 'Read'.",
            ))
        }
        None => {
            return Err(bad_permission(
                "The input content is invalid because the required property, 'permissionMode', is missing.",
            ))
        }
    }
    let resource = match body.get("resource") {
        Some(Value::String(link)) if !link.trim_matches('/').is_empty() => link,
        Some(_) => {
            return Err(bad_permission(
                "The resource of a permission must be a resource link.",
            ))
        }
        None => return Err(bad_permission(
            "The input content is invalid because the required property, 'resource', is missing.",
        )),
    };
    // The key must be one a grant can hold (`grants.rs`), so no stored permission names a
    // partition no request can name.
    granted_partition_key(body)?;
    Ok(resource.trim_matches('/').to_string())
}

/// A permission's resource as path segments, a `_rid` link resolved to names where it names an
/// existing resource, so both forms of one resource compare equal.
async fn resource_segments(context: &Context<'_>, link: &str) -> Vec<String> {
    match ResourcePath::parse(link) {
        Ok(mut path) => {
            // A link naming nothing stays as written.
            let _ = resolve_resource_ids(&context.state.engine, &mut path).await;
            path.segments
        }
        Err(_) => vec![link.to_string()],
    }
}

/// Refuses a second permission of one user on one resource (the service's 409). Checked before
/// the write, not inside it: two racing creates on one resource may both pass.
async fn check_one_per_resource(
    context: &Context<'_>,
    resource: &str,
    except_id: Option<&str>,
) -> ApiResult<()> {
    let existing = context
        .state
        .engine
        .list_resources(ResourceKind::Permission, &user(context))
        .await?;
    let wanted = resource_segments(context, resource).await;
    let mut taken = false;
    for permission in &existing {
        if Some(text(permission, "id")) != except_id
            && resource_segments(context, text(permission, "resource")).await == wanted
        {
            taken = true;
            break;
        }
    }
    if taken {
        return Err(ApiError::new(
            Code::Engine(ErrorCode::ResourceIdConflict),
            "A permission for this user and resource already exists.",
        ));
    }
    Ok(())
}

pub async fn feed_or_query_permissions(
    context: &Context<'_>,
    listing: Listing,
) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    let parent = user(context);
    let seconds = token_seconds(context)?;
    list_resources(
        context,
        listing,
        ResourceKind::Permission.feed_name(),
        async {
            let permissions = engine
                .list_resources(ResourceKind::Permission, &parent)
                .await?;
            permissions
                .into_iter()
                .map(|permission| with_token(context, permission, seconds))
                .collect()
        },
        || {
            Ok(text(
                &engine.read_resource(
                    ResourceKind::User,
                    &database(context),
                    context.path.id(1),
                )?,
                "_rid",
            )
            .to_string())
        },
    )
    .await
}

pub async fn create_permission(context: &Context<'_>) -> ApiResult<Reply> {
    let mut body = parse_json(context.body)?;
    let seconds = token_seconds(context)?;
    let resource = check_permission(&mut body)?;
    check_one_per_resource(context, &resource, None).await?;
    let created = context
        .state
        .engine
        .create_resource(ResourceKind::Permission, user(context), body)
        .await?;
    let created = with_token(context, created, seconds)?;
    Ok(resource_reply(
        StatusCode::CREATED,
        &created,
        request_units::CATALOG_WRITE,
    ))
}

pub async fn upsert_permission(context: &Context<'_>) -> ApiResult<Reply> {
    let mut body = parse_json(context.body)?;
    let seconds = token_seconds(context)?;
    let resource = check_permission(&mut body)?;
    check_one_per_resource(context, &resource, body.get("id").and_then(Value::as_str)).await?;
    let (resource, created) = context
        .state
        .engine
        .upsert_resource(ResourceKind::Permission, user(context), body)
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let resource = with_token(context, resource, seconds)?;
    Ok(resource_reply(
        status,
        &resource,
        request_units::CATALOG_WRITE,
    ))
}

pub fn read_permission(context: &Context<'_>) -> ApiResult<Reply> {
    let seconds = token_seconds(context)?;
    let resource = context.state.engine.read_resource(
        ResourceKind::Permission,
        &user(context),
        context.path.id(2),
    )?;
    let resource = with_token(context, resource, seconds)?;
    Ok(resource_reply(
        StatusCode::OK,
        &resource,
        request_units::CATALOG_READ,
    ))
}

/// Replaces a permission; its new `_etag` revokes the tokens handed out before.
pub async fn replace_permission(context: &Context<'_>) -> ApiResult<Reply> {
    let mut body = parse_json(context.body)?;
    let seconds = token_seconds(context)?;
    let resource = check_permission(&mut body)?;
    check_one_per_resource(context, &resource, Some(context.path.id(2))).await?;
    let replaced = context
        .state
        .engine
        .replace_resource(
            ResourceKind::Permission,
            user(context),
            context.path.id(2),
            body,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    let replaced = with_token(context, replaced, seconds)?;
    Ok(resource_reply(
        StatusCode::OK,
        &replaced,
        request_units::CATALOG_WRITE,
    ))
}

/// Deletes a permission, which revokes its tokens.
pub async fn delete_permission(context: &Context<'_>) -> ApiResult<Reply> {
    context
        .state
        .engine
        .delete_resource(
            ResourceKind::Permission,
            user(context),
            context.path.id(2),
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT).charge(request_units::CATALOG_WRITE))
}
