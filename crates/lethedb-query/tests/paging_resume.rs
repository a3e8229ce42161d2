//! Resuming an ORDER BY query with the text an SDK rewrites: the SDKs fill the client plan's
//! filter placeholder with `true` on the first request and with a comparison against the last
//! values they returned when they resume, and send the range's token with that text. Such a
//! token is honoured and every page is the page the unchanged query would have given; a token
//! used with a query that differs in anything else is refused.

use std::collections::BTreeMap;
use std::ops::Bound;

use lethedb_query::{prepare, Prepared, QueryError};
use serde_json::{json, Value};

type Store = BTreeMap<Vec<u8>, Value>;

const PLACEHOLDER: &str = "{documentdb-formattableorderbyquery-filter}";

/// 40 documents with ties in `score`, some without a `score`, and fan-out arrays.
fn store() -> Store {
    (0..40u64)
        .map(|n| {
            let mut document = json!({
                "n": n,
                "score": (n * 7) % 10,
                "tags": (0..(n % 3)).map(|t| format!("t{t}")).collect::<Vec<_>>(),
            });
            if n % 5 == 0 {
                if let Some(members) = document.as_object_mut() {
                    members.remove("score");
                }
            }
            (n.to_be_bytes().to_vec(), document)
        })
        .collect()
}

fn prepared(text: &str) -> Prepared {
    prepare(text, &[], 0).unwrap_or_else(|error| panic!("{text}: {error}"))
}

/// One page of `text`.
fn page(
    text: &str,
    store: &Store,
    continuation: Option<&str>,
    page_size: usize,
) -> Result<(Vec<Value>, Option<String>), QueryError> {
    run_page(&prepared(text), store, continuation, page_size)
}

fn run_page(
    prepared: &Prepared,
    store: &Store,
    continuation: Option<&str>,
    page_size: usize,
) -> Result<(Vec<Value>, Option<String>), QueryError> {
    let mut run = prepared.start_page(continuation, page_size)?;
    let lower = run
        .resume_after()
        .map_or(Bound::Unbounded, |after| Bound::Excluded(after.to_vec()));
    let mut exhausted = true;
    for (key, document) in store.range((lower, Bound::Unbounded)) {
        if run.push(key, document)?.is_break() {
            exhausted = false;
            break;
        }
    }
    let page = run.finish(exhausted)?;
    Ok((page.items, page.continuation))
}

/// Every row of `template` (holding the placeholder) in one page, the placeholder read as `true`.
fn whole(template: &str, store: &Store) -> Vec<Value> {
    let text = template.replace(PLACEHOLDER, "true");
    let (items, continuation) =
        page(&text, store, None, 1_000).unwrap_or_else(|error| panic!("{text}: {error}"));
    assert_eq!(continuation, None);
    items
}

/// Pages through `template` as the JavaScript SDK resumes: the first request fills the
/// placeholder with `true`, every later one with `resume(last row)`, each with the token of the
/// page before.
fn resumed_pages(
    template: &str,
    store: &Store,
    page_size: usize,
    resume: &dyn Fn(&Value) -> String,
) -> Vec<Value> {
    let mut text = template.replace(PLACEHOLDER, "true");
    let mut continuation: Option<String> = None;
    let mut rows = Vec::new();
    for _ in 0..1_000 {
        let (items, next) = page(&text, store, continuation.as_deref(), page_size)
            .unwrap_or_else(|error| panic!("{text}: {error}"));
        assert!(items.len() <= page_size);
        let Some(next) = next else {
            rows.extend(items);
            return rows;
        };
        let last = items
            .last()
            .unwrap_or_else(|| panic!("{text}: an empty page"));
        text = template.replace(PLACEHOLDER, &resume(last));
        rows.extend(items);
        continuation = Some(next);
    }
    panic!("{template}: too many pages");
}

/// `(c.score >= v)` for the row's first ORDER BY item, or `true` when it has none (the SDK
/// writes no condition for an undefined item).
fn at_or_after(key: &'static str, operator: &'static str) -> impl Fn(&Value) -> String {
    move |row: &Value| match row["orderByItems"][0].get("item") {
        Some(value) => format!("({key} {operator} {value})"),
        None => "true".into(),
    }
}

#[test]
fn a_token_is_honoured_with_the_resume_filter_an_sdk_writes() {
    let store = store();
    let cases = [
        (
            "SELECT c._rid, [{\"item\": c.score}] AS orderByItems, c AS payload FROM c \
             WHERE ({PLACEHOLDER}) ORDER BY c.score",
            "c.score",
            ">=",
        ),
        (
            // Descending over a field every document has: the SDK's `<=` drops the rows without
            // one, which sort last.
            "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c.score AS payload FROM c \
             WHERE ((c.n >= 3) AND ({PLACEHOLDER})) ORDER BY c.n DESC",
            "c.n",
            "<=",
        ),
        (
            "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, t AS payload FROM c JOIN t IN c.tags \
             WHERE (({PLACEHOLDER}) AND IS_DEFINED(t)) ORDER BY c.n",
            "c.n",
            ">=",
        ),
        (
            "SELECT TOP 17 c._rid, [{\"item\": c.score}] AS orderByItems, c.n AS payload FROM c \
             WHERE ({PLACEHOLDER}) ORDER BY c.score",
            "c.score",
            ">=",
        ),
        (
            "SELECT c._rid, [{\"item\": c.score}] AS orderByItems, c.n AS payload FROM c \
             WHERE ({PLACEHOLDER}) ORDER BY c.score OFFSET 0 LIMIT 23",
            "c.score",
            ">=",
        ),
    ];
    for (template, key, operator) in cases {
        let template = template.replace("{PLACEHOLDER}", PLACEHOLDER);
        let expected = whole(&template, &store);
        assert!(expected.len() > 10, "{template}");
        for page_size in [1, 2, 3, 7] {
            let rows = resumed_pages(&template, &store, page_size, &at_or_after(key, operator));
            assert_eq!(rows, expected, "{template} by {page_size}");
        }
    }
}

#[test]
fn a_token_with_an_offset_resumes_at_the_right_row() {
    // OFFSET counts rows of the whole stream, so the token's count of rows produced must be
    // read against the same OFFSET/LIMIT, under a filter that only drops rows before it.
    let store = store();
    let template =
        format!("SELECT VALUE c.n FROM c WHERE ({PLACEHOLDER}) ORDER BY c.n OFFSET 5 LIMIT 20");
    let expected: Vec<Value> = (5..25).map(|n| json!(n)).collect();
    assert_eq!(whole(&template, &store), expected);
    for page_size in [1, 3, 4] {
        let rows = resumed_pages(&template, &store, page_size, &|row| {
            format!("(c.n >= {row})")
        });
        assert_eq!(rows, expected, "by {page_size}");
    }
}

#[test]
fn a_token_is_refused_by_a_query_that_differs_in_anything_else() {
    let store = store();
    let original =
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.score OFFSET 1 LIMIT 30";
    let (_, token) = page(original, &store, None, 3).unwrap_or_else(|error| panic!("{error}"));
    let token = token.unwrap_or_else(|| panic!("expected a continuation"));
    let accepted = [
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 AND c.score >= 4 ORDER BY c.score OFFSET 1 LIMIT 30",
        "SELECT c.n FROM c WHERE c.n > 3 AND (true) AND c.n != 17 ORDER BY c.score OFFSET 1 LIMIT 30",
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 AND (c.score > 4 OR (c.score = 4 AND NOT (c.score < -1))) ORDER BY c.score OFFSET 1 LIMIT 30",
    ];
    for text in accepted {
        assert!(page(text, &store, Some(&token), 3).is_ok(), "{text}");
    }
    let refused = [
        // Another filter, or a resume filter on a field that is not an ORDER BY item.
        "SELECT c.n FROM c WHERE c.n > 3 ORDER BY c.score OFFSET 1 LIMIT 30",
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 AND c.n >= 4 ORDER BY c.score OFFSET 1 LIMIT 30",
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n = 17 ORDER BY c.score OFFSET 1 LIMIT 30",
        // Another projection, source, order or direction.
        "SELECT c.score FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.score OFFSET 1 LIMIT 30",
        "SELECT c.n FROM c JOIN t IN c.tags WHERE c.n > 3 AND c.n != 17 ORDER BY c.score OFFSET 1 LIMIT 30",
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.score DESC OFFSET 1 LIMIT 30",
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.n OFFSET 1 LIMIT 30",
        // Another OFFSET/LIMIT or TOP: the token's count of rows is relative to them.
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.score OFFSET 0 LIMIT 30",
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.score OFFSET 1 LIMIT 29",
        "SELECT c.n FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.score",
        "SELECT TOP 31 c.n FROM c WHERE c.n > 3 AND c.n != 17 ORDER BY c.score",
    ];
    for text in refused {
        assert!(
            matches!(
                page(text, &store, Some(&token), 3),
                Err(QueryError::InvalidContinuation(_))
            ),
            "{text}"
        );
    }
}

#[test]
fn a_resume_condition_with_a_parameter_stays_bound_to_its_value() {
    let store = store();
    let text = "SELECT VALUE c.n FROM c WHERE c.n >= @from ORDER BY c.n";
    let with = |from: i64| {
        prepare(text, &[("@from".into(), json!(from))], 0).unwrap_or_else(|error| panic!("{error}"))
    };
    let (_, token) = run_page(&with(2), &store, None, 3).unwrap_or_else(|error| panic!("{error}"));
    let token = token.unwrap_or_else(|| panic!("expected a continuation"));
    assert!(with(2).start_page(Some(&token), 3).is_ok());
    assert!(matches!(
        with(3).start_page(Some(&token), 3),
        Err(QueryError::InvalidContinuation(_))
    ));
}

#[test]
fn streamed_and_grouped_pages_stay_bound_to_their_exact_filter() {
    // Their positions (a key and a count of rows, an index into the result) depend on the
    // filter, and no SDK rewrites the filter of such a query.
    let store = store();
    for (original, changed) in [
        (
            "SELECT VALUE c.n FROM c WHERE true",
            "SELECT VALUE c.n FROM c WHERE c.n >= 4",
        ),
        (
            "SELECT DISTINCT VALUE c.score FROM c WHERE true ORDER BY c.score",
            "SELECT DISTINCT VALUE c.score FROM c WHERE c.score >= 4 ORDER BY c.score",
        ),
    ] {
        let (_, token) = page(original, &store, None, 2).unwrap_or_else(|error| panic!("{error}"));
        let token = token.unwrap_or_else(|| panic!("{original}: expected a continuation"));
        assert!(
            page(original, &store, Some(&token), 2).is_ok(),
            "{original}"
        );
        assert!(
            matches!(
                page(changed, &store, Some(&token), 2),
                Err(QueryError::InvalidContinuation(_))
            ),
            "{changed}"
        );
    }
}
