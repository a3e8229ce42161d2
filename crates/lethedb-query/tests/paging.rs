//! Paging through the public interface: every page size gives the same concatenated results,
//! continuations survive insertions and deletions between pages, foreign or damaged tokens are
//! refused, and the paging contract (ascending keys, non-zero page size) is checked.
//!
//! A `BTreeMap` stands in for the engine's store: keys are big-endian numbers, so bytewise
//! order is numeric order, as the engine's keys are opaque but ordered bytes.

use std::collections::BTreeMap;
use std::ops::Bound;

use lethedb_query::{prepare, Prepared, QueryError};
use serde_json::{json, Value};

type Store = BTreeMap<Vec<u8>, Value>;

const NOW_MS: i64 = 0;

fn key(number: u64) -> Vec<u8> {
    number.to_be_bytes().to_vec()
}

/// 40 documents with duplicates in the sort fields (ties), undefined fields and fan-out arrays.
fn store() -> Store {
    (0..40u64)
        .map(|n| {
            let mut document = json!({
                "id": format!("d{n}"),
                "n": n,
                "group": format!("g{}", n % 4),
                "score": (n * 7) % 10,
                "tags": (0..(n % 3)).map(|t| format!("t{t}")).collect::<Vec<_>>(),
            });
            if n % 5 == 0 {
                if let Some(members) = document.as_object_mut() {
                    members.remove("score");
                }
            }
            (key(n), document)
        })
        .collect()
}

struct PageResult {
    items: Vec<Value>,
    continuation: Option<String>,
}

fn one_page(
    prepared: &Prepared,
    store: &Store,
    continuation: Option<&str>,
    page_size: usize,
) -> Result<PageResult, QueryError> {
    let mut run = prepared.start_page(continuation, page_size)?;
    let lower = match run.resume_after() {
        Some(after) => Bound::Excluded(after.to_vec()),
        None => Bound::Unbounded,
    };
    let mut exhausted = true;
    for (document_key, document) in store.range((lower, Bound::Unbounded)) {
        if run.push(document_key, document)?.is_break() {
            exhausted = false;
            break;
        }
    }
    let page = run.finish(exhausted)?;
    assert!(page.items.len() <= page_size);
    Ok(PageResult {
        items: page.items,
        continuation: page.continuation,
    })
}

fn all_pages(query: &str, store: &Store, page_size: usize) -> Vec<Value> {
    let prepared = prepare(query, &[], NOW_MS).unwrap_or_else(|error| panic!("{query}: {error}"));
    let mut results = Vec::new();
    let mut continuation = None;
    let mut previous_had_continuation = false;
    for _ in 0..10_000 {
        let page = one_page(&prepared, store, continuation.as_deref(), page_size)
            .unwrap_or_else(|error| panic!("{query}: {error}"));
        // A continuation leads to another result, or (after a page that filled exactly as the
        // scan ended) to one empty last page.
        if previous_had_continuation && page.items.is_empty() {
            assert_eq!(
                page.continuation, None,
                "{query}: page size {page_size}: an empty page that goes on"
            );
        }
        results.extend(page.items);
        previous_had_continuation = page.continuation.is_some();
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => return results,
        }
    }
    panic!("{query}: too many pages");
}

#[test]
fn every_page_size_gives_the_same_results() {
    let store = store();
    let queries = [
        "SELECT VALUE c.n FROM c",
        "SELECT c.id, t FROM c JOIN t IN c.tags",
        "SELECT VALUE [c.n, t] FROM c JOIN t IN c.tags WHERE c.n % 2 = 0",
        "SELECT VALUE c.n FROM c WHERE c.score > 4",
        "SELECT TOP 9 VALUE c.n FROM c JOIN t IN c.tags",
        "SELECT VALUE c.n FROM c OFFSET 5 LIMIT 11",
        "SELECT VALUE [c.n, t] FROM c JOIN t IN c.tags OFFSET 3 LIMIT 13",
        "SELECT VALUE c.n FROM c ORDER BY c.score",
        "SELECT VALUE c.n FROM c ORDER BY c.score DESC, c.group",
        "SELECT VALUE [c.n, t] FROM c JOIN t IN c.tags ORDER BY t DESC",
        "SELECT TOP 7 VALUE c.n FROM c ORDER BY c.score DESC",
        "SELECT VALUE c.n FROM c ORDER BY c.group OFFSET 6 LIMIT 9",
        "SELECT DISTINCT VALUE c.score FROM c",
        "SELECT DISTINCT VALUE c.group FROM c ORDER BY c.group DESC",
        "SELECT c.group, COUNT(1) AS n, SUM(c.n) AS total FROM c GROUP BY c.group",
        "SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags",
        "SELECT VALUE c.score FROM c GROUP BY c.score OFFSET 1 LIMIT 4",
        "SELECT VALUE 42",
    ];
    for query in queries {
        let expected = all_pages(query, &store, usize::MAX);
        assert!(!expected.is_empty(), "{query}");
        for page_size in [1, 2, 3, 7] {
            assert_eq!(
                all_pages(query, &store, page_size),
                expected,
                "{query} with page size {page_size}"
            );
        }
    }
}

#[test]
fn ordered_results_are_sorted_with_ties_resolved() {
    let results = all_pages("SELECT VALUE c.score FROM c ORDER BY c.score", &store(), 3);
    assert_eq!(
        results.len(),
        32,
        "undefined scores sort first but are left out of VALUE results"
    );
    let numbers: Vec<u64> = results.iter().filter_map(Value::as_u64).collect();
    assert!(
        numbers.windows(2).all(|pair| pair[0] <= pair[1]),
        "{numbers:?}"
    );
}

#[test]
fn streaming_continuation_survives_inserts_and_deletes() {
    let mut store = store();
    let prepared = prepare("SELECT VALUE [c.n, t] FROM c JOIN t IN c.tags", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    // Document 1 has one tag, 2 has two: a page of 2 ends inside document 2.
    let first = one_page(&prepared, &store, None, 2).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(first.items, vec![json!([1, "t0"]), json!([2, "t0"])]);
    // Insert before the resume point (never seen), delete a later document, and insert
    // after the resume point (seen in order).
    store.insert(key(0), json!({"n": 100, "tags": ["early"]}));
    store.remove(&key(4));
    store.insert(key(3), json!({"n": 3, "tags": ["new"]}));
    let mut results = first.items.clone();
    let mut continuation = first.continuation;
    while let Some(token) = continuation {
        let page =
            one_page(&prepared, &store, Some(&token), 2).unwrap_or_else(|error| panic!("{error}"));
        results.extend(page.items);
        continuation = page.continuation;
    }
    assert_eq!(
        &results[..4],
        &[
            json!([1, "t0"]),
            json!([2, "t0"]),
            json!([2, "t1"]),
            json!([3, "new"])
        ]
    );
    assert!(!results.contains(&json!([100, "early"])));
    assert!(!results.iter().any(|item| item[0] == json!(4)));
    let mut unique = results.clone();
    unique.dedup();
    assert_eq!(unique.len(), results.len(), "no result is repeated");
}

#[test]
fn streaming_continuation_when_the_resume_document_is_deleted() {
    let mut store = store();
    let prepared = prepare("SELECT VALUE [c.n, t] FROM c JOIN t IN c.tags", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    let first = one_page(&prepared, &store, None, 2).unwrap_or_else(|error| panic!("{error}"));
    // The page stopped inside document 2; it disappears before the next page.
    store.remove(&key(2));
    let token = first
        .continuation
        .unwrap_or_else(|| panic!("expected a continuation"));
    let second =
        one_page(&prepared, &store, Some(&token), 2).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(second.items, vec![json!([4, "t0"]), json!([5, "t0"])]);
}

#[test]
fn ordered_continuation_survives_inserts_and_deletes() {
    let mut store = store();
    let prepared = prepare(
        "SELECT VALUE c.n FROM c WHERE c.n < 10 ORDER BY c.n DESC",
        &[],
        NOW_MS,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let first = one_page(&prepared, &store, None, 3).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(first.items, vec![json!(9), json!(8), json!(7)]);
    store.insert(key(100), json!({"n": 8.5}));
    store.insert(key(101), json!({"n": 6.5}));
    store.remove(&key(5));
    let mut results = first.items;
    let mut continuation = first.continuation;
    while let Some(token) = continuation {
        let page =
            one_page(&prepared, &store, Some(&token), 3).unwrap_or_else(|error| panic!("{error}"));
        results.extend(page.items);
        continuation = page.continuation;
    }
    assert_eq!(
        results,
        vec![
            json!(9),
            json!(8),
            json!(7),
            json!(6.5),
            json!(6),
            json!(4),
            json!(3),
            json!(2),
            json!(1),
            json!(0)
        ]
    );
}

/// The service's backend stops reading once a page is full, so a page that fills exactly as
/// the results end still has a token, and the page after it is empty (the JavaScript SDK's
/// hierarchical `readAll` test counts that page); a page that is not full has none.
#[test]
fn a_page_that_fills_exactly_as_the_results_end_leads_to_an_empty_last_page() {
    let store = store();
    let prepared = prepare("SELECT VALUE c.n FROM c WHERE c.n >= 36", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    let first = one_page(&prepared, &store, None, 2).unwrap_or_else(|error| panic!("{error}"));
    let token = first
        .continuation
        .unwrap_or_else(|| panic!("expected a continuation"));
    let second =
        one_page(&prepared, &store, Some(&token), 2).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(second.items, vec![json!(38), json!(39)]);
    let token = second
        .continuation
        .unwrap_or_else(|| panic!("a full last page has a continuation"));
    let third =
        one_page(&prepared, &store, Some(&token), 2).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(third.items, Vec::<Value>::new());
    assert_eq!(third.continuation, None);
    let whole = one_page(&prepared, &store, None, 5).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(whole.items.len(), 4);
    assert_eq!(whole.continuation, None, "a page with room left has none");
}

#[test]
fn resume_after_skips_consumed_documents() {
    let store = store();
    let prepared =
        prepare("SELECT VALUE c.n FROM c", &[], NOW_MS).unwrap_or_else(|error| panic!("{error}"));
    let first = one_page(&prepared, &store, None, 5).unwrap_or_else(|error| panic!("{error}"));
    let token = first
        .continuation
        .unwrap_or_else(|| panic!("expected a continuation"));
    let run = prepared
        .start_page(Some(&token), 5)
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(run.resume_after(), Some(key(4).as_slice()));
    let ordered = prepare("SELECT VALUE c.n FROM c ORDER BY c.n", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    let page = one_page(&ordered, &store, None, 5).unwrap_or_else(|error| panic!("{error}"));
    let token = page
        .continuation
        .unwrap_or_else(|| panic!("expected a continuation"));
    let run = ordered
        .start_page(Some(&token), 5)
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        run.resume_after(),
        None,
        "ORDER BY pages re-scan from the start"
    );
}

#[test]
fn foreign_and_damaged_tokens_are_refused() {
    let store = store();
    let prepared =
        prepare("SELECT VALUE c.n FROM c", &[], NOW_MS).unwrap_or_else(|error| panic!("{error}"));
    let page = one_page(&prepared, &store, None, 3).unwrap_or_else(|error| panic!("{error}"));
    let token = page
        .continuation
        .unwrap_or_else(|| panic!("expected a continuation"));
    let other = prepare("SELECT VALUE c.n FROM c WHERE true", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(matches!(
        other.start_page(Some(&token), 3),
        Err(QueryError::InvalidContinuation(_))
    ));
    let with_parameter = prepare(
        "SELECT VALUE c.n FROM c WHERE c.n > @p",
        &[("@p".into(), json!(1))],
        NOW_MS,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let parameter_token = one_page(&with_parameter, &store, None, 3)
        .unwrap_or_else(|error| panic!("{error}"))
        .continuation
        .unwrap_or_else(|| panic!("expected a continuation"));
    let changed = prepare(
        "SELECT VALUE c.n FROM c WHERE c.n > @p",
        &[("@p".into(), json!(2))],
        NOW_MS,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert!(matches!(
        changed.start_page(Some(&parameter_token), 3),
        Err(QueryError::InvalidContinuation(_))
    ));
    let mut garbage: Vec<String> = vec![
        String::new(),
        "garbage".into(),
        "{}".into(),
        "AAAA".into(),
        "eyJ2IjoxfQ".into(),
    ];
    // Every truncation and single-character change of a real token.
    for cut in 0..token.len() {
        garbage.push(token[..cut].to_string());
    }
    for position in 0..token.len() {
        let mut changed: Vec<char> = token.chars().collect();
        changed[position] = if changed[position] == 'A' { 'B' } else { 'A' };
        garbage.push(changed.into_iter().collect());
    }
    for text in garbage {
        // Some changes still decode to a valid token of this query; none may panic, and every
        // refusal is an InvalidContinuation error.
        match prepared.start_page(Some(&text), 3) {
            Ok(_) => {}
            Err(error) => assert!(
                matches!(error, QueryError::InvalidContinuation(_)),
                "{text}: {error}"
            ),
        }
    }
    let ordered = prepare("SELECT VALUE c.n FROM c ORDER BY c.n", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(matches!(
        ordered.start_page(Some(&token), 3),
        Err(QueryError::InvalidContinuation(_))
    ));
}

#[test]
fn the_paging_contract_is_checked() {
    let prepared =
        prepare("SELECT VALUE c.n FROM c", &[], NOW_MS).unwrap_or_else(|error| panic!("{error}"));
    assert!(matches!(
        prepared.start_page(None, 0),
        Err(QueryError::Usage(_))
    ));
    let mut run = prepared
        .start_page(None, 10)
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(run.push(&key(5), &json!({"n": 5})).is_ok());
    assert!(matches!(
        run.push(&key(5), &json!({"n": 5})),
        Err(QueryError::Usage(_))
    ));
    assert!(matches!(
        run.push(&key(4), &json!({"n": 4})),
        Err(QueryError::Usage(_))
    ));
    let ordered = prepare("SELECT VALUE c.n FROM c ORDER BY c.n", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    let run = ordered
        .start_page(None, 10)
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        matches!(run.finish(false), Err(QueryError::Usage(_))),
        "ORDER BY needs the whole scan"
    );
}

#[test]
fn metrics_count_documents_and_matches() {
    let store = store();
    let prepared = prepare("SELECT VALUE c.n FROM c WHERE c.n < 3", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    let mut run = prepared
        .start_page(None, 100)
        .unwrap_or_else(|error| panic!("{error}"));
    for (document_key, document) in &store {
        if run
            .push(document_key, document)
            .map_or(true, |flow| flow.is_break())
        {
            break;
        }
    }
    let page = run.finish(true).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(page.documents_scanned, 40);
    assert_eq!(page.rows_matched, 3);
    assert_eq!(page.items, vec![json!(0), json!(1), json!(2)]);
}

#[test]
fn top_stops_the_scan_early() {
    let store = store();
    let prepared = prepare("SELECT TOP 2 VALUE c.n FROM c", &[], NOW_MS)
        .unwrap_or_else(|error| panic!("{error}"));
    let mut run = prepared
        .start_page(None, 100)
        .unwrap_or_else(|error| panic!("{error}"));
    let mut pushed = 0;
    for (document_key, document) in &store {
        pushed += 1;
        if run
            .push(document_key, document)
            .map_or(true, |flow| flow.is_break())
        {
            break;
        }
    }
    assert_eq!(pushed, 2);
    let page = run.finish(false).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(page.items, vec![json!(0), json!(1)]);
    assert_eq!(page.continuation, None);
}

#[test]
fn partition_key_equality_finds_pinned_paths() {
    let pk = |query: &str, parameters: &[(String, Value)], paths: &[&[&str]]| {
        let paths: Vec<Vec<String>> = paths
            .iter()
            .map(|path| path.iter().map(std::string::ToString::to_string).collect())
            .collect();
        prepare(query, parameters, NOW_MS)
            .unwrap_or_else(|error| panic!("{query}: {error}"))
            .partition_key_equality(&paths)
    };
    assert_eq!(
        pk("SELECT * FROM c WHERE c.tenant = 'a'", &[], &[&["tenant"]]),
        Some(vec![json!("a")])
    );
    assert_eq!(
        pk(
            "SELECT * FROM c WHERE 'a' = c.tenant AND c.x > 1",
            &[],
            &[&["tenant"]]
        ),
        Some(vec![json!("a")])
    );
    assert_eq!(
        pk(
            "SELECT * FROM root r WHERE r.x > 1 AND (r.user.id = @u AND r['tenant'] = 7)",
            &[("@u".into(), json!("bob"))],
            &[&["tenant"], &["user", "id"]]
        ),
        Some(vec![json!(7), json!("bob")])
    );
    assert_eq!(
        pk(
            "SELECT * FROM c WHERE c.tenant = 'a' OR c.tenant = 'b'",
            &[],
            &[&["tenant"]]
        ),
        None
    );
    assert_eq!(
        pk("SELECT * FROM c WHERE c.tenant > 'a'", &[], &[&["tenant"]]),
        None
    );
    assert_eq!(
        pk(
            "SELECT * FROM c WHERE c.tenant = c.other",
            &[],
            &[&["tenant"]]
        ),
        None
    );
    assert_eq!(pk("SELECT * FROM c", &[], &[&["tenant"]]), None);
    assert_eq!(
        pk(
            "SELECT * FROM c WHERE c.tenant = 'a'",
            &[],
            &[&["tenant"], &["user"]]
        ),
        None
    );
    assert_eq!(
        pk(
            "SELECT * FROM t IN c.tags WHERE t.tenant = 'a'",
            &[],
            &[&["tenant"]]
        ),
        None
    );
    assert_eq!(
        pk("SELECT * FROM c WHERE c.tenant = null", &[], &[&["tenant"]]),
        Some(vec![json!(null)])
    );
}

const TOKEN_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding, as tokens were written before they were JSON text (still read).
fn token_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let buffer = chunk
            .iter()
            .enumerate()
            .fold(0u32, |total, (i, b)| total | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(
                TOKEN_ALPHABET[(buffer >> (18 - 6 * i) & 63) as usize],
            ));
        }
    }
    out
}

/// A client can rewrite a token of the right query: counts at `u64::MAX` must give a page or an
/// error, not an overflow (found by the `continuation` fuzz target: a streamed page added one to
/// `produced`, an ORDER BY page summed it with the offset and the page's items).
#[test]
fn forged_counts_at_the_top_of_the_range_do_not_overflow() {
    let store = store();
    for text in [
        "SELECT * FROM c",
        "SELECT c.id FROM c OFFSET 1 LIMIT 5",
        "SELECT c.id FROM c ORDER BY c.n",
    ] {
        let prepared = prepare(text, &[], NOW_MS).expect("prepare");
        let first = one_page(&prepared, &store, None, 2).expect("first page");
        let token = first.continuation.expect("a second page");
        let mut object: Value = serde_json::from_str(&token).expect("token json");
        object["p"] = json!(u64::MAX);
        if object.get("k").is_some() {
            object["k"] = json!(u64::MAX);
        }
        let _ = one_page(&prepared, &store, Some(&object.to_string()), 2);
        let old_form = token_encode(object.to_string().as_bytes());
        let _ = one_page(&prepared, &store, Some(&old_form), 2);
    }
}
