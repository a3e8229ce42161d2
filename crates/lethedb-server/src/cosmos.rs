//! The Cosmos entry point: every request that is not one of the few internal endpoints comes
//! through [`dispatch`], which runs the same straight line for all of them.
//!
//! This module orders the steps; it does not parse headers (`head`), classify (`operation`),
//! check signatures (`access`), resolve ids (`resolve`) or shape bodies (`handlers`) itself.

use crate::access::{authenticate, authorize};
use crate::error::{ApiError, ApiResult, Code};
use crate::faults;
use crate::handlers::{self, Context};
use crate::head::{PriorityLevel, RequestHead};
use crate::metrics::Observed;
use crate::operation::{classify, ItemOperation, Operation};
use crate::request::{add_host_from_authority, read_body, text_body, INTENDED_CONTAINER_HEADER};
use crate::resolve::resolve_resource_ids;
use crate::respond::{add_common_headers, Reply};
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use lethedb_engine::{Container, Priority};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Parse the path and the request head → classify → authenticate → resolve `_rid`s →
/// authorize → admit (item operations only) → handler → common headers → metrics.
///
/// The signature is checked before anything reads the catalog: resolving ids could answer 404
/// for an unknown `_rid`, which would tell a caller without the key what exists. So an
/// unauthenticated request gets 401 whatever it names, and a failed classification (unknown
/// resource type, wrong verb) is reported only once the caller is known, as it always was.
/// Master keys (and Entra ID tokens) allow everything; a resource token is authorized per
/// operation after resolution, where the `_rid`s are ids, and after the body is read (a
/// partition-scoped token looks into a batch).
pub async fn dispatch(State(state): State<AppState>, request: Request) -> Response {
    let started = Instant::now();
    let (mut parts, body) = request.into_parts();
    add_host_from_authority(&mut parts);
    let mut observed: Option<(Option<Operation>, ResourcePath)> = None;
    let result: ApiResult<Response> = async {
        let mut path = ResourcePath::parse(&full_path(&parts.uri))?;
        let head = RequestHead::parse(&parts.headers);
        let classified = classify(&parts.method, &path, &head);
        let caller = authenticate(&state, &parts.method, &parts.headers, &path)?;
        resolve_resource_ids(&state.engine, &mut path).await?;
        let point_read = matches!(classified, Ok(Operation::Item(ItemOperation::Read)));
        let checked = check_intended_container(&state, &path, &parts.headers, point_read).await?;
        // The metrics keep the path past the request; without them nothing reads it.
        if state.metrics.is_some() {
            observed = Some((classified.as_ref().ok().copied(), path.clone()));
        }
        let operation = classified?;
        let body = text_body(read_body(body).await?)?;
        authorize(
            &state.engine,
            &caller,
            (&parts.method, parts.uri.path()),
            operation,
            &path,
            &head,
            &body,
        )
        .await?;
        if let Some(fault) = inject_fault(&state, operation, &path, &parts.headers).await {
            return Ok(fault);
        }
        let admitted = admit(&state, (operation, &head), &path, checked).await?;
        let context = Context {
            state: &state,
            headers: &parts.headers,
            head: &head,
            path: &path,
            body: &body,
        };
        let mut reply = handlers::route(operation, &context, admitted.as_ref()).await?;
        if let Some(container) = &admitted {
            state.engine.charge(container, reply.request_charge());
            if let Ok(Some(bucket)) = head.throughput_bucket() {
                state
                    .engine
                    .charge_bucket(container, bucket, reply.request_charge());
            }
        }
        check_continuation_limit(&head, &reply)?;
        if names_its_location(&parts.method, operation) {
            reply = reply.content_location(
                &state.endpoint.as_addressed(&parts.headers),
                (parts.uri.path(), parts.uri.query()),
            );
        }
        Ok(reply.finish())
    }
    .await;
    let mut response = match result {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    add_common_headers(&mut response, &parts.headers, started.elapsed());
    if let (Some(metrics), Some((operation, path))) = (&state.metrics, observed) {
        metrics.observe(Observed {
            operation,
            path: &path,
            status: response.status(),
            seconds: started.elapsed().as_secs_f64(),
            request_units: request_charge(&response),
        });
    }
    response
}

/// A request on a container or anything in it that names the container it means
/// (`x-ms-cosmos-intended-collection-rid`) is refused with 400/1024 when another container now
/// has that name (the one meant was deleted and a new one created), as the service does: the
/// SDKs then refresh their cached container and retry. A missing container is left to the
/// handler's 404, and a request without the header reads nothing here. The container read is
/// returned, so that admission does not look it up again. A point read takes the definition
/// its instance cached (`Engine::container_for_point_read`), since it reads the current one in
/// its own snapshot.
async fn check_intended_container(
    state: &AppState,
    path: &ResourcePath,
    headers: &HeaderMap,
    point_read: bool,
) -> ApiResult<Option<Arc<Container>>> {
    let Some(intended) = crate::request::header(headers, INTENDED_CONTAINER_HEADER) else {
        return Ok(None);
    };
    if path.segments.len() < 4 || path.segments[2] != "colls" || intended.is_empty() {
        return Ok(None);
    }
    let found = if point_read {
        state
            .engine
            .container_for_point_read(path.id(0), path.id(1))
    } else {
        state
            .engine
            .read_container_awaiting(path.id(0), path.id(1))
            .await
    };
    match found {
        Ok(container) if container.rid() != intended => {
            Err(ApiError::from_code(Code::CollectionRidMismatch))
        }
        Ok(container) => Ok(Some(container)),
        Err(_) => Ok(None),
    }
}

/// Item operations draw on their container's throughput budget: admitted while this second's
/// budget lasts (429 with a retry hint once it is spent), charged what they cost afterwards.
/// Other operations are not metered and load nothing here; `checked` is the container the
/// intended-container check already read, if it did.
async fn admit(
    state: &AppState,
    (operation, head): (Operation, &RequestHead<'_>),
    path: &ResourcePath,
    checked: Option<Arc<Container>>,
) -> ApiResult<Option<Arc<Container>>> {
    if !operation.is_item_operation() {
        return Ok(None);
    }
    let container = match checked {
        Some(container) => container,
        None if operation == Operation::Item(ItemOperation::Read) => state
            .engine
            .container_for_point_read(path.id(0), path.id(1))?,
        None => {
            state
                .engine
                .read_container_awaiting(path.id(0), path.id(1))
                .await?
        }
    };
    // Low-priority requests are throttled first (`x-ms-cosmos-priority-level`).
    let priority = match head.priority {
        Some(PriorityLevel::Low) => Priority::Low,
        Some(PriorityLevel::High) | None => Priority::High,
    };
    state
        .engine
        .admit(&container, priority)
        .map_err(ApiError::too_many_requests)?;
    if let Some(bucket) = head.throughput_bucket()? {
        state
            .engine
            .admit_bucket(&container, bucket)
            .map_err(ApiError::throughput_bucket_spent)?;
    }
    Ok(Some(container))
}

/// `x-ms-documentdb-responsecontinuationtokenlimitinkb` on feeds and queries: a value that is
/// not a whole number of KiB (0 or more) is a 400, and so is 0 on a page that needs a
/// continuation, with the service's message (no token fits in 0 KiB). The service shrinks its
/// tokens to a limit of 1 KiB or more by dropping optional parts, and what must stay (a
/// resource id and a few counters) always fits; ours have no optional part and carry the last
/// key (and ORDER BY values), so one longer than the limit is sent whole rather than failing a
/// query the service would answer (the JS SDK asks for 1 KiB on every request).
fn check_continuation_limit(head: &RequestHead<'_>, reply: &Reply) -> ApiResult<()> {
    let Some(limit_kb) = head.continuation_limit_kb()? else {
        return Ok(());
    };
    if limit_kb == 0 && reply.continuation().is_some() {
        return Err(ApiError::new(
            Code::BadRequestHeader,
            "The continuation token limit specified is not large enough to serialize the required attributes into the continuation token. Please provide a higher limit.",
        ));
    }
    Ok(())
}

/// Whether a success carries `Content-Location` (the request's URL): the service sends it on
/// reads, read feeds, replaces and deletes (GET, PUT, DELETE), not on creates, upserts,
/// queries or batches (POST) — as in every request/response example of the REST reference
/// (for instance "Get a Document", "Delete a Collection", "Replace an Offer", "List Users").
/// The account (`GET /`) is not a resource path and gets none.
fn names_its_location(method: &Method, operation: Operation) -> bool {
    (method == Method::GET || method == Method::PUT || method == Method::DELETE)
        && operation != Operation::ReadAccount
}

/// The path with anything after `?`: some clients leave `?` unescaped in item ids, and Cosmos
/// paths carry no query string, so it belongs to the last id.
fn full_path(uri: &Uri) -> String {
    match uri.query() {
        Some(query) => format!("{}?{query}", uri.path()),
        None => uri.path().to_string(),
    }
}

fn request_charge(response: &Response) -> f64 {
    response
        .headers()
        .get("x-ms-request-charge")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// What a fault rule makes of this request (`faults.rs`): its latency, then its reset or its
/// answer; `None` when no rule hits it, or one adds only latency.
async fn inject_fault(
    state: &AppState,
    operation: Operation,
    path: &ResourcePath,
    headers: &HeaderMap,
) -> Option<Response> {
    let partition_key = headers
        .get("x-ms-documentdb-partitionkey")
        .and_then(|value| value.to_str().ok());
    let rule = state
        .faults
        .hit(operation.name(), &path.link, partition_key)?;
    if let Some(delay_ms) = rule.delay_ms {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    }
    if rule.reset_connection {
        return Some(faults::reset());
    }
    rule.status.map(|status| faults::answer(&rule, status))
}
