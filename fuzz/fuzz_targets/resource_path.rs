//! Fuzzes request paths: any bytes as a request path give `Ok` or a Cosmos-shaped client error
//! from `lethedb_server::routes::ResourcePath::parse`, and every parsed path gives an
//! `Operation` or a client error (404/405/400, never a 5xx) from `lethedb_server::classify`
//! under each verb with the headers that pick queries, batches, query plans and upserts; never a
//! panic. Invariants: at most `PATH_SEGMENTS_MAX` segments; the shape alternates types and ids;
//! the signed link's wire form decodes to it; the id accessors stay in bounds.

#![no_main]

use http::{HeaderMap, HeaderValue, Method};
use lethedb_server::routes::{ResourcePath, PATH_SEGMENTS_MAX};
use lethedb_server::RequestHead;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn header_sets() -> &'static [HeaderMap] {
    static SETS: OnceLock<Vec<HeaderMap>> = OnceLock::new();
    SETS.get_or_init(|| {
        let one = |name: &'static str, value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_static(value));
            headers
        };
        vec![
            HeaderMap::new(),
            one("x-ms-documentdb-isquery", "True"),
            one("content-type", "application/query+json"),
            one("x-ms-cosmos-is-batch-request", "true"),
            one("x-ms-cosmos-is-query-plan-request", "true"),
            one("x-ms-documentdb-is-upsert", "true"),
            one("a-im", "Incremental feed"),
        ]
    })
}

const METHODS: [Method; 7] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::PATCH,
    Method::HEAD,
    Method::OPTIONS,
];

fuzz_target!(|data: &[u8]| {
    let path = String::from_utf8_lossy(data);
    let parsed = match ResourcePath::parse(&path) {
        Ok(parsed) => parsed,
        Err(error) => {
            assert!(error.status().is_client_error(), "{path:?}: {error:?}");
            return;
        }
    };
    assert!(parsed.segments.len() <= PATH_SEGMENTS_MAX, "{path:?}");
    let (types, names_one) = parsed.shape();
    assert_eq!(types.len(), parsed.segments.len().div_ceil(2), "{path:?}");
    assert_eq!(
        names_one,
        !parsed.segments.is_empty() && parsed.segments.len() % 2 == 0
    );
    for index in 0..PATH_SEGMENTS_MAX {
        let _ = parsed.id(index);
    }
    let _ = parsed.resource_id_link();
    // The wire form of the link decodes to the link (its own link may be shorter: a feed under
    // `.../operations/x` signs as the container).
    let again = ResourcePath::parse(&parsed.raw_link).expect("the wire link re-parses");
    assert_eq!(again.segments.join("/"), parsed.link, "{path:?}");
    assert!(parsed.link.len() <= parsed.segments.iter().map(|s| s.len() + 1).sum::<usize>());
    let mut renamed = parsed.clone();
    renamed.set_id(1, "renamed".into());
    for method in &METHODS {
        for headers in header_sets() {
            let head = RequestHead::parse(headers);
            if let Err(error) = lethedb_server::classify(method, &parsed, &head) {
                assert!(
                    error.status().is_client_error(),
                    "{method} {path:?}: {error:?}"
                );
            }
            let _ = lethedb_server::classify(method, &renamed, &head);
        }
    }
});
