//! Fuzzes the query language end to end: any bytes as query text must give `Ok` or `Err` from
//! `prepare`, never a panic; a query that prepares is also displayed and re-parsed (the
//! round-trip must hold) and run over a few documents.
//!
//! Run with `RUSTC_BOOTSTRAP=1 cargo fuzz run parse_query` from `fuzz/` (see README.md).

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(query) = lethedb_query::parse(text) {
        let displayed = query.to_string();
        assert_eq!(
            lethedb_query::parse(&displayed).ok(),
            Some(query),
            "round trip of {displayed}"
        );
    }
    let parameters = vec![("@p".to_string(), json!(1))];
    let Ok(prepared) = lethedb_query::prepare(text, &parameters, 0) else {
        return;
    };
    let documents = [
        json!({"a": 1, "b": "x", "tags": ["a", "b"], "n": null}),
        json!({"c": {"d": [1, 2]}}),
    ];
    let Ok(mut run) = prepared.start_page(None, 2) else {
        return;
    };
    let mut exhausted = true;
    for (number, document) in documents.iter().enumerate() {
        match run.push(&[number as u8], document) {
            Ok(flow) if flow.is_continue() => {}
            _ => {
                exhausted = false;
                break;
            }
        }
    }
    if let Ok(page) = run.finish(exhausted) {
        if let Some(token) = page.continuation {
            let _ = prepared.start_page(Some(&token), 2);
        }
    }
});
