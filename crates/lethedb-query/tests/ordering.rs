//! ORDER BY as an index serves it, through the public paging interface: rows with equal sort
//! values come back in the order of the numbers their documents are pushed with (the service's
//! `_rid` order), in the first key's direction, on every page size and across continuations;
//! the `OrderingRules` an engine derives from the indexing policy leave out undefined values or
//! compare arrays and objects as undefined, in ORDER BY pages and in aggregates over them.
//!
//! Storage keys and document numbers are given in different orders on purpose, so that a test
//! passes only when ties follow the numbers.

use lethedb_query::{prepare, OrderingRules, QueryError};
use serde_json::{json, Value};

const NOW_MS: i64 = 0;

/// A document with its storage key and document number.
struct Stored {
    key: u64,
    number: u64,
    document: Value,
}

/// Twelve documents: `g` takes three values (ties), `x` is undefined on every third, an array
/// on one and an object on another. Document numbers run against the keys.
fn documents() -> Vec<Stored> {
    (0..12u64)
        .map(|n| {
            let mut document = json!({"id": format!("d{n}"), "g": n % 3, "x": n});
            match n {
                4 => document["x"] = json!([1]),
                7 => document["x"] = json!({"a": 1}),
                _ if n % 3 == 0 => {
                    if let Some(members) = document.as_object_mut() {
                        members.remove("x");
                    }
                }
                _ => {}
            }
            Stored {
                key: n,
                number: 100 - n * 7 % 12,
                document,
            }
        })
        .collect()
}

/// Every page of `query` at `page_size`, following continuations, pushing documents in key order
/// with their numbers.
fn all_pages(
    query: &str,
    rules: OrderingRules,
    stored: &[Stored],
    page_size: usize,
) -> Result<Vec<Value>, QueryError> {
    let prepared = prepare(query, &[], NOW_MS)?;
    let mut results = Vec::new();
    let mut continuation: Option<String> = None;
    for _ in 0..1_000 {
        let mut run = prepared.start_page_with(continuation.as_deref(), page_size, rules)?;
        let mut exhausted = true;
        for item in stored {
            let key = item.key.to_be_bytes();
            if run
                .resume_after()
                .is_some_and(|after| key.as_slice() <= after)
            {
                continue;
            }
            if run
                .push_numbered(&key, item.number, &item.document)?
                .is_break()
            {
                exhausted = false;
                break;
            }
        }
        let page = run.finish(exhausted)?;
        assert!(page.items.len() <= page_size, "{query}");
        results.extend(page.items);
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => return Ok(results),
        }
    }
    panic!("{query}: too many pages");
}

/// The results of `query` on every page size, which must agree.
fn results(query: &str, rules: OrderingRules) -> Vec<Value> {
    let stored = documents();
    let whole = all_pages(query, rules, &stored, usize::MAX)
        .unwrap_or_else(|error| panic!("{query}: {error}"));
    for page_size in [1, 2, 5] {
        let paged = all_pages(query, rules, &stored, page_size)
            .unwrap_or_else(|error| panic!("{query}: {error}"));
        assert_eq!(paged, whole, "{query}: page size {page_size}");
    }
    whole
}

/// The ids of the documents with `g` = `group`, by document number ascending.
fn ids_by_number(group: u64) -> Vec<Value> {
    let mut stored: Vec<Stored> = documents()
        .into_iter()
        .filter(|item| item.document["g"] == json!(group))
        .collect();
    stored.sort_by_key(|item| item.number);
    stored
        .into_iter()
        .map(|item| item.document["id"].clone())
        .collect()
}

#[test]
fn ties_follow_document_numbers_in_the_first_key_direction() {
    let ascending = results(
        "SELECT VALUE c.id FROM c WHERE c.g = 1 ORDER BY c.g",
        OrderingRules::default(),
    );
    assert_eq!(ascending, ids_by_number(1));
    let descending = results(
        "SELECT VALUE c.id FROM c WHERE c.g = 1 ORDER BY c.g DESC",
        OrderingRules::default(),
    );
    let mut reversed = ids_by_number(1);
    reversed.reverse();
    assert_eq!(descending, reversed);
    // The second key's direction does not turn the ties: ORDER BY g DESC, then ties on a
    // constant second key still run by number descending.
    let two_keys = results(
        "SELECT VALUE c.id FROM c WHERE c.g = 1 ORDER BY c.g DESC, c.g ASC",
        OrderingRules::default(),
    );
    assert_eq!(two_keys, reversed);
}

#[test]
fn ties_in_an_ordered_distinct_follow_document_numbers() {
    let rows = results(
        "SELECT DISTINCT VALUE [c.g, c.id] FROM c WHERE c.g = 2 ORDER BY c.g DESC",
        OrderingRules::default(),
    );
    let mut expected: Vec<Value> = ids_by_number(2)
        .into_iter()
        .map(|id| json!([2, id]))
        .collect();
    expected.reverse();
    assert_eq!(rows, expected);
}

#[test]
fn a_wildcard_path_leaves_out_undefined_sort_values() {
    let wildcard = OrderingRules {
        omit_undefined: true,
        ..OrderingRules::default()
    };
    let kept = results(
        "SELECT VALUE c.id FROM c ORDER BY c.x",
        OrderingRules::default(),
    );
    let omitted = results("SELECT VALUE c.id FROM c ORDER BY c.x", wildcard);
    assert_eq!(kept.len(), 12);
    assert_eq!(
        &kept[..4],
        &[json!("d3"), json!("d6"), json!("d9"), json!("d0")],
        "undefined first, ties by number"
    );
    assert_eq!(omitted, kept[4..].to_vec());
    // Arrays and objects are defined: they stay, after the numbers.
    assert_eq!(&omitted[omitted.len() - 2..], &[json!("d4"), json!("d7")]);
    let descending = results("SELECT VALUE c.id FROM c ORDER BY c.x DESC", wildcard);
    assert_eq!(descending.len(), 8);
    assert_eq!(descending[0], json!("d7"));
    // An aggregate over the ORDER BY counts the rows the index returns.
    assert_eq!(
        results("SELECT VALUE COUNT(1) FROM c ORDER BY c.x", wildcard),
        [json!(8)]
    );
    assert_eq!(
        results(
            "SELECT VALUE COUNT(1) FROM c ORDER BY c.x",
            OrderingRules::default()
        ),
        [json!(12)]
    );
}

#[test]
fn a_composite_compares_arrays_and_objects_as_undefined() {
    let composite = OrderingRules {
        non_scalars_as_undefined: true,
        ..OrderingRules::default()
    };
    let rows = results(
        "SELECT VALUE c.id FROM c WHERE c.g = 1 ORDER BY c.x, c.g",
        composite,
    );
    // d4 ([1]) and d7 ({"a": 1}) sort with the undefined values, first, by number.
    let mut first = vec![json!("d4"), json!("d7")];
    first.sort_by_key(|id| {
        documents()
            .into_iter()
            .find(|item| &item.document["id"] == id)
            .map(|item| item.number)
    });
    assert_eq!(&rows[..2], first.as_slice());
    assert_eq!(&rows[2..], &[json!("d1"), json!("d10")]);
    let plain = results(
        "SELECT VALUE c.id FROM c WHERE c.g = 1 ORDER BY c.x, c.g",
        OrderingRules::default(),
    );
    assert_eq!(plain, [json!("d1"), json!("d10"), json!("d4"), json!("d7")]);
}

#[test]
fn a_token_resumes_at_its_tie() {
    // Page size 1 over four tied rows: every token points inside the tie, and each page must
    // pick up exactly the next document by number.
    let query = "SELECT VALUE c.id FROM c WHERE c.g = 0 ORDER BY c.g DESC";
    let stored = documents();
    let paged = all_pages(query, OrderingRules::default(), &stored, 1)
        .unwrap_or_else(|error| panic!("{error}"));
    let mut expected = ids_by_number(0);
    expected.reverse();
    assert_eq!(paged, expected);
    // Pushed without numbers (as resource lists are), ties run by storage key.
    let prepared = prepare(query, &[], NOW_MS).unwrap_or_else(|error| panic!("{error}"));
    let mut run = prepared
        .start_page(None, 1)
        .unwrap_or_else(|error| panic!("{error}"));
    for item in &stored {
        let flow = run
            .push(&item.key.to_be_bytes(), &item.document)
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(flow.is_continue());
    }
    let page = run.finish(true).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(page.items, [json!("d9")], "ties by key, descending");
}
