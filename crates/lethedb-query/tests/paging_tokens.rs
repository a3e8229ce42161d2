//! Continuation tokens of streamed and ordered pages depend only on the documents that match
//! the filter: an engine that loads only the documents an index names (and never the others)
//! hands out the very tokens a scan hands out, page by page.

use std::collections::BTreeMap;
use std::ops::Bound;

use lethedb_query::prepare;
use serde_json::{json, Value};

type Store = BTreeMap<Vec<u8>, Value>;

/// 40 documents keyed by big-endian numbers, with fan-out arrays of 0 to 2 tags.
fn store() -> Store {
    (0..40u64)
        .map(|n| {
            let document = json!({
                "n": n,
                "score": (n * 7) % 10,
                "tags": (0..(n % 3)).map(|t| format!("t{t}")).collect::<Vec<_>>(),
            });
            (n.to_be_bytes().to_vec(), document)
        })
        .collect()
}

/// Every token of every page of `query` over `store`, page by page.
fn tokens(query: &str, store: &Store, page_size: usize) -> Vec<Option<String>> {
    let prepared = prepare(query, &[], 0).unwrap_or_else(|error| panic!("{query}: {error}"));
    let mut out = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let mut run = prepared
            .start_page(continuation.as_deref(), page_size)
            .unwrap_or_else(|error| panic!("{query}: {error}"));
        let lower = run
            .resume_after()
            .map_or(Bound::Unbounded, |after| Bound::Excluded(after.to_vec()));
        let mut exhausted = true;
        for (key, document) in store.range((lower, Bound::Unbounded)) {
            if run
                .push(key, document)
                .unwrap_or_else(|error| panic!("{query}: {error}"))
                .is_break()
            {
                exhausted = false;
                break;
            }
        }
        let page = run
            .finish(exhausted)
            .unwrap_or_else(|error| panic!("{query}: {error}"));
        out.push(page.continuation.clone());
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => return out,
        }
    }
}

#[test]
fn tokens_depend_only_on_the_matching_documents() {
    // A plan that loads only the documents an index names must write the tokens a scan writes:
    // documents the filter rejects, even between a fanned-out document and the one before it,
    // leave every token unchanged.
    let store = store();
    let queries = [
        "SELECT VALUE [c.n, t] FROM c JOIN t IN c.tags WHERE c.n % 3 = 2",
        "SELECT VALUE c.n FROM c WHERE c.n % 3 = 2",
        "SELECT VALUE c.n FROM c WHERE c.n % 3 = 2 ORDER BY c.score",
        "SELECT TOP 5 VALUE [c.n, t] FROM c JOIN t IN c.tags WHERE c.n % 3 = 2",
    ];
    let matching: Store = store
        .iter()
        .filter(|(_, document)| document["n"].as_u64().is_some_and(|n| n % 3 == 2))
        .map(|(key, document)| (key.clone(), document.clone()))
        .collect();
    for query in queries {
        for page_size in [1, 2, 3] {
            let all = tokens(query, &store, page_size);
            assert!(all.len() > 1, "{query}");
            assert_eq!(
                all,
                tokens(query, &matching, page_size),
                "{query} with page size {page_size}"
            );
        }
    }
}

/// The key space a page is pushed in travels with its token: the next page resumes in it, and
/// refuses to be pushed in another; a page of another strategy refuses any other space.
#[test]
fn a_token_remembers_the_key_space_its_page_was_pushed_in() {
    let store = store();
    let prepared = prepare("SELECT VALUE c.n FROM c", &[], 0).expect("prepare");
    let mut run = prepared.start_page(None, 3).expect("start");
    assert_eq!(run.key_space(), 0);
    run.use_key_space(2).expect("a fresh page picks its space");
    for (key, document) in &store {
        if run.push(key, document).expect("push").is_break() {
            break;
        }
    }
    let token = run
        .finish(false)
        .expect("finish")
        .continuation
        .expect("a next page");
    let mut resumed = prepared.start_page(Some(&token), 3).expect("resume");
    assert_eq!(resumed.key_space(), 2);
    assert_eq!(resumed.resume_after(), Some(&2u64.to_be_bytes()[..]));
    assert!(
        resumed.use_key_space(0).is_err(),
        "another space is refused"
    );
    resumed.use_key_space(2).expect("the same space is kept");
    // Pages pushed in the default space write the tokens they always wrote.
    assert!(tokens("SELECT VALUE c.n FROM c", &store, 3)
        .iter()
        .flatten()
        .all(|token| prepare("SELECT VALUE c.n FROM c", &[], 0)
            .expect("prepare")
            .start_page(Some(token), 3)
            .expect("resume")
            .key_space()
            == 0));
    let ordered = prepare("SELECT * FROM c ORDER BY c.n", &[], 0).expect("prepare");
    let mut run = ordered.start_page(None, 3).expect("start");
    assert!(
        run.use_key_space(1).is_err(),
        "only a streamed page has key spaces"
    );
}
