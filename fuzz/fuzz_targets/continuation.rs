//! Fuzzes continuation tokens: any bytes as `x-ms-continuation` give `Ok` or `Err`, never a
//! panic, for
//! - the query crate's paging (`prepare` + `start_page(Some(token), n)`, then the page run over a
//!   few documents) for streamed, ORDER BY, JOIN, TOP/OFFSET, DISTINCT and GROUP BY queries;
//! - the engine's query pages (`query_items`), read feeds (`read_feed`, whose token is a storage
//!   key) and change feeds (`read_change_feed` from an LSN or a point in time taken from the
//!   input), on an in-memory engine holding a few items.
//!
//! Besides the raw text, the input is tried re-wrapped as a well-formed token of each query
//! (its JSON object with the query's fingerprint put in, base64url) and as a feed key, so the
//! fuzzer reaches the position logic behind the fingerprint check. A page that starts is
//! followed to its end, at most a few pages.

#![no_main]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use lethedb_engine::RangeFilter;
use lethedb_engine::{
    ChangeFeedMode, ChangeFeedRequest, ChangeFeedStart, FeedCursor, QueryOutcome, QueryRequest,
};
use lethedb_fuzz::{base_documents, partition_key_of, Harness, DATABASE, NOW_MS};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::OnceLock;

const QUERIES: [&str; 9] = [
    "SELECT * FROM c",
    "SELECT c.id, c.n FROM c WHERE c.n > 0 OR IS_DEFINED(c.s)",
    "SELECT * FROM c ORDER BY c.n DESC",
    "SELECT c.id FROM c ORDER BY c.a.b, c.id",
    "SELECT t AS tag, c.id FROM c JOIN t IN c.tags",
    "SELECT TOP 3 * FROM c",
    "SELECT c.id FROM c ORDER BY c.n OFFSET 1 LIMIT 2",
    "SELECT DISTINCT VALUE c.a.b FROM c",
    "SELECT c.a.b AS k, COUNT(1) AS n FROM c GROUP BY c.a.b",
];
/// Most pages followed from one token.
const PAGES_MAX: usize = 4;

/// A token's fingerprint field, read from a real token of the query.
fn fingerprint_of(token: &str) -> Option<Value> {
    let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
    let object: Value = serde_json::from_slice(&bytes).ok()?;
    object.get("f").cloned()
}

/// The input as a well-formed token of a query: its JSON object, with version and fingerprint.
fn rewrap(input: &[u8], fingerprint: &Value) -> Option<String> {
    let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(input) else {
        return None;
    };
    object.insert("v".into(), json!(1));
    object.insert("f".into(), fingerprint.clone());
    Some(URL_SAFE_NO_PAD.encode(Value::Object(object).to_string()))
}

fn documents() -> &'static [Value] {
    static DOCUMENTS: OnceLock<Vec<Value>> = OnceLock::new();
    DOCUMENTS.get_or_init(base_documents)
}

/// One page of `query` over the base documents, keyed by their index, from `token`.
fn pure_page(
    prepared: &lethedb_query::Prepared,
    token: Option<&str>,
    size: usize,
) -> Option<Option<String>> {
    let mut run = prepared.start_page(token, size).ok()?;
    let after = run.resume_after().map(<[u8]>::to_vec);
    let mut exhausted = true;
    for (index, document) in documents().iter().enumerate() {
        let key = [index as u8];
        if after
            .as_deref()
            .is_some_and(|after| key.as_slice() <= after)
        {
            continue;
        }
        match run.push(&key, document) {
            Ok(flow) if flow.is_continue() => {}
            Ok(_) => {
                exhausted = false;
                break;
            }
            Err(_) => return None,
        }
    }
    run.finish(exhausted).ok().map(|page| page.continuation)
}

/// The queries prepared, with the fingerprint their tokens carry.
fn pure_queries() -> &'static [(lethedb_query::Prepared, Option<Value>)] {
    static PREPARED: OnceLock<Vec<(lethedb_query::Prepared, Option<Value>)>> = OnceLock::new();
    PREPARED.get_or_init(|| {
        QUERIES
            .iter()
            .map(|text| {
                let prepared = lethedb_query::prepare(text, &[], NOW_MS).expect("query prepares");
                let token = pure_page(&prepared, None, 1).flatten();
                let fingerprint = token.as_deref().and_then(fingerprint_of);
                (prepared, fingerprint)
            })
            .collect()
    })
}

fn follow_pure(prepared: &lethedb_query::Prepared, token: &str, size: usize) {
    let mut token = Some(token.to_string());
    for _ in 0..PAGES_MAX {
        match pure_page(prepared, token.as_deref(), size) {
            Some(Some(next)) => token = Some(next),
            _ => return,
        }
    }
}

fn engine_query(
    harness: &Harness,
    text: &str,
    token: Option<String>,
    size: usize,
    scoped: bool,
) -> Option<String> {
    let engine = harness.engine();
    let container = engine.read_container(DATABASE, "v2").expect("container");
    let request = QueryRequest {
        text: text.to_string(),
        parameters: Vec::new(),
        partition_key: if scoped {
            partition_key_of(&json!("a"))
        } else {
            None
        },
        page_items_max: Some(size),
        continuation: token,
        enable_cross_partition: true,
        effective_range: None,
        // Unscoped, the query runs on the container's one range, as the SDKs run a query whose
        // order or aggregates their pipeline combines (the whole container answers with a plan).
        range_id: (!scoped).then(|| "0".to_string()),
        populate_query_metrics: false,
        populate_index_metrics: false,
    };
    match harness.block_on(engine.query_items(&container, &request)) {
        Ok(QueryOutcome::Page(page)) => page.continuation,
        _ => None,
    }
}

fn follow_engine(harness: &Harness, text: &str, token: String, size: usize, scoped: bool) {
    let mut token = Some(token);
    for _ in 0..PAGES_MAX {
        match engine_query(harness, text, token.take(), size, scoped) {
            Some(next) => token = Some(next),
            None => return,
        }
    }
}

fn engine_fingerprints(harness: &Harness) -> &'static [Option<Value>] {
    static FINGERPRINTS: OnceLock<Vec<Option<Value>>> = OnceLock::new();
    FINGERPRINTS.get_or_init(|| {
        QUERIES
            .iter()
            .map(|text| {
                engine_query(harness, text, None, 1, false)
                    .as_deref()
                    .and_then(fingerprint_of)
            })
            .collect()
    })
}

fn feeds(harness: &Harness, data: &[u8], text: Option<&str>, size: usize, scoped: bool) {
    let engine = harness.engine();
    let container = engine.read_container(DATABASE, "v2").expect("container");
    let mut tokens: Vec<String> = vec![URL_SAFE_NO_PAD.encode(data)];
    tokens.extend(text.map(str::to_string));
    for token in &tokens {
        let scope = if scoped {
            partition_key_of(&json!("a"))
        } else {
            None
        };
        {
            let mut next = Some(token.clone());
            for _ in 0..PAGES_MAX {
                let Some(current) = next.take() else { break };
                let Ok(feed) = harness.block_on(engine.read_feed(
                    &container,
                    scope.clone(),
                    RangeFilter::everything(),
                    size,
                    Some(&current),
                )) else {
                    break;
                };
                next = feed.continuation;
            }
        }
    }
    let mut number = [0u8; 8];
    for (slot, byte) in number.iter_mut().zip(data) {
        *slot = *byte;
    }
    let mut starts = vec![
        ChangeFeedStart::Continuation {
            cursor: FeedCursor::single(u64::from_le_bytes(number)),
        },
        ChangeFeedStart::PointInTime {
            ms: i64::from_le_bytes(number),
        },
    ];
    // The server's own form: `If-None-Match` with a page's ETag (a bare LSN, or a position
    // per shard), and a point in time in milliseconds.
    if let Some(cursor) = text.and_then(|text| FeedCursor::parse(text.trim().trim_matches('"'))) {
        starts.push(ChangeFeedStart::Continuation { cursor });
    }
    if let Some(ms) = text.and_then(|text| text.trim().parse::<i64>().ok()) {
        starts.push(ChangeFeedStart::PointInTime { ms });
    }
    for start in starts {
        for mode in [
            ChangeFeedMode::LatestVersion,
            ChangeFeedMode::AllVersionsAndDeletes,
        ] {
            let request = ChangeFeedRequest {
                mode,
                start: start.clone(),
                partition_key: None,
                filter: RangeFilter::everything(),
                page_items_max: Some(size),
            };
            let _ = harness.block_on(engine.read_change_feed(&container, request));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let size = usize::from(data.first().copied().unwrap_or(1) % 4) + 1;
    let text = std::str::from_utf8(data).ok();
    for (prepared, fingerprint) in pure_queries() {
        if let Some(text) = text {
            follow_pure(prepared, text, size);
        }
        if let Some(token) = fingerprint.as_ref().and_then(|f| rewrap(data, f)) {
            follow_pure(prepared, &token, size);
        }
    }
    // The engine runs each query on the blocking pool, dearer than the pure runs above: one
    // query per input, picked by the second byte.
    let chosen = usize::from(data.get(1).copied().unwrap_or(0)) % QUERIES.len();
    let scoped = data.get(2).is_some_and(|byte| byte % 2 == 1);
    Harness::with(|harness| {
        let query = QUERIES[chosen];
        if let Some(text) = text {
            follow_engine(harness, query, text.to_string(), size, scoped);
        }
        if let Some(token) = engine_fingerprints(harness)[chosen]
            .as_ref()
            .and_then(|f| rewrap(data, f))
        {
            follow_engine(harness, query, token, size, scoped);
        }
        feeds(harness, data, text, size, scoped);
    });
});
