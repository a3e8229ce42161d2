//! The request-unit cost model: what each operation is charged, deterministically.
//!
//! Shaped like the service's published figures: a 1 KiB point read costs 1 RU; a write pays for
//! the documents it inserts and deletes by their size (the service's published table, 1 KB
//! 4.95 RU up to 1 MB 625 RU, linear between its points) and 0.2 RU per index term it adds or
//! removes, so a replace costs a delete plus an insert and a patch 0.4 RU more per operation;
//! a query page pays a base cost plus a share per index lookup, per KiB of documents it loaded
//! and per result it returned (`query_page`; a script's queries still pay per document
//! scanned, `query`). This module only computes numbers: what a write's terms are is
//! `index/maintain.rs`'s business.

/// A read or write of the catalog (databases, containers).
pub const CATALOG_READ: f64 = 1.0;
pub const CATALOG_WRITE: f64 = 5.0;

/// What each index term a write adds or removes costs (the service's "0.2 × terms").
pub const INDEX_TERM: f64 = 0.2;
/// What each operation of a patch costs beyond the replace it amounts to.
pub const PATCH_OPERATION: f64 = 0.4;

/// The service's published write charges by document size, in (KiB, RU): 1 KB 4.95, 2 KB 6.29,
/// 4 KB 6.67, 8 KB 7.04, 16 KB 9.52, 64 KB 22.67, 1 MB 625.
const WRITE_BY_SIZE: [(f64, f64); 7] = [
    (1.0, 4.95),
    (2.0, 6.29),
    (4.0, 6.67),
    (8.0, 7.04),
    (16.0, 9.52),
    (64.0, 22.67),
    (1024.0, 625.0),
];

fn kibibytes(bytes: usize) -> f64 {
    (bytes as f64 / 1024.0).max(1.0)
}

/// A point read or feed page of `bytes` of documents.
pub fn read(bytes: usize) -> f64 {
    round(kibibytes(bytes))
}

/// What inserting (or deleting) one document of `bytes` costs by its size alone, unrounded:
/// the published table, linear between its points, flat below 1 KiB and along its last slope
/// above 1 MiB.
pub fn document_write(bytes: usize) -> f64 {
    let size = kibibytes(bytes);
    let segment = WRITE_BY_SIZE
        .windows(2)
        .find(|pair| size <= pair[1].0)
        .unwrap_or(&WRITE_BY_SIZE[WRITE_BY_SIZE.len() - 2..]);
    let ((from_kib, from_ru), (to_kib, to_ru)) = (segment[0], segment[1]);
    from_ru + (size - from_kib) * (to_ru - from_ru) / (to_kib - from_kib)
}

/// A write of one item: the document it deleted (a replace's old version, a delete's item), the
/// one it inserted, and the index terms it added and removed together.
pub fn write(deleted_bytes: Option<usize>, inserted_bytes: Option<usize>, terms: u64) -> f64 {
    let documents: f64 = [deleted_bytes, inserted_bytes]
        .into_iter()
        .flatten()
        .map(document_write)
        .sum();
    round(documents + INDEX_TERM * terms as f64)
}

/// A patch of `operations` operations that amounted to a replace charged `replace`.
pub fn patch(replace: f64, operations: usize) -> f64 {
    round(replace + PATCH_OPERATION * operations as f64)
}

/// What rebuilding one stored version's index entries costs the background builder: reading
/// the document, and each term it wrote.
pub fn index_rebuild(bytes: usize, terms: u64) -> f64 {
    read(bytes) + INDEX_TERM * terms as f64
}

/// A query page that scanned `scanned` documents and returned `returned` results.
pub fn query(scanned: u64, returned: u64) -> f64 {
    round(2.31 + 0.05 * scanned as f64 + 0.01 * returned as f64)
}

/// What a query page did, in the terms it is charged by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryWork {
    /// Ranges of an index read (an equality is one seek).
    pub index_lookups: u64,
    /// Index entries read.
    pub index_entries: u64,
    /// Documents loaded, returned or not.
    pub documents_loaded: u64,
    /// Their stored bytes.
    pub retrieved_bytes: u64,
    /// Results returned.
    pub results: u64,
}

/// The base of every query page.
const QUERY_BASE: f64 = 2.0;
/// One range of an index read: an index seek.
const QUERY_PER_INDEX_LOOKUP: f64 = 0.1;
/// One index entry read: a range's cost grows slightly with its cardinality.
const QUERY_PER_INDEX_ENTRY: f64 = 0.000_5;
/// One document loaded, returned or not, whatever its size.
const QUERY_PER_DOCUMENT_LOADED: f64 = 0.005;
/// One KiB of documents loaded, returned or not.
const QUERY_PER_KIB_LOADED: f64 = 0.01;
/// One result returned.
const QUERY_PER_RESULT: f64 = 0.3;

/// A query page, charged as the service's published figures suggest: a base, a little per
/// index lookup and entry, about 0.005 RU per document and 0.01 RU per KiB loaded (a scan of
/// 61,000 documents of 400 MB costs about 4,000 RU), and about 0.3 RU per result (a page of
/// 2,000 results about 600). So an indexed
/// equality returning a document costs about 2.4 RU and a scan of the same container, for the
/// same document, grows with the container. Deterministic: it counts, never times.
pub fn query_page(work: &QueryWork) -> f64 {
    round(
        QUERY_BASE
            + QUERY_PER_INDEX_LOOKUP * work.index_lookups as f64
            + QUERY_PER_INDEX_ENTRY * work.index_entries as f64
            + QUERY_PER_DOCUMENT_LOADED * work.documents_loaded as f64
            + QUERY_PER_KIB_LOADED * work.retrieved_bytes as f64 / 1024.0
            + QUERY_PER_RESULT * work.results as f64,
    )
}

/// A sum of charges, rounded as every charge is.
pub fn round_total(units: f64) -> f64 {
    round(units)
}

fn round(units: f64) -> f64 {
    (units * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_shape() {
        assert_eq!(read(1024), 1.0);
        assert_eq!(read(10), 1.0);
        assert!(read(10 * 1024) > read(1024));
        assert!(query(100, 10) > query(10, 10));
    }

    #[test]
    fn writes_follow_the_published_table_and_terms() {
        for (kib, published) in WRITE_BY_SIZE {
            let bytes = (kib * 1024.0) as usize;
            assert_eq!(write(None, Some(bytes), 0), published, "{kib} KiB");
        }
        // Below 1 KiB a write costs what 1 KiB does; between points it grows with size.
        assert_eq!(write(None, Some(10), 0), 4.95);
        assert_eq!(write(None, Some(3 * 1024), 0), 6.48);
        assert!(write(None, Some(2048 * 1024), 0) > 625.0);
        // The service's worked examples: a 1 KB create with 10 terms, a replace changing two.
        assert_eq!(write(None, Some(1024), 10), 6.95);
        assert_eq!(write(Some(1024), Some(1024), 4), 10.7);
        assert_eq!(patch(write(Some(1024), Some(1024), 4), 2), 11.5);
        assert_eq!(write(Some(1024), None, 10), 6.95);
    }

    #[test]
    fn a_seek_costs_a_few_units_and_a_scan_grows_with_what_it_loads() {
        let seek = query_page(&QueryWork {
            index_lookups: 1,
            index_entries: 1,
            documents_loaded: 1,
            retrieved_bytes: 1024,
            results: 1,
        });
        assert!((2.0..3.0).contains(&seek), "{seek}");
        // The same result found by loading 20,000 documents of 1 KiB.
        let scan = query_page(&QueryWork {
            documents_loaded: 20_000,
            retrieved_bytes: 20_000 * 1024,
            results: 1,
            ..QueryWork::default()
        });
        assert!(scan > 50.0 * seek, "{scan} against {seek}");
        // The service's samples: 2,000 results of 1.1 MB cost 604 RU; 400 MB loaded for 7
        // results, 4,060 RU.
        let returned = query_page(&QueryWork {
            documents_loaded: 2_000,
            retrieved_bytes: 1_125_600,
            results: 2_000,
            ..QueryWork::default()
        });
        assert!((450.0..800.0).contains(&returned), "{returned}");
        let loaded = query_page(&QueryWork {
            documents_loaded: 60_951,
            retrieved_bytes: 400_000_000,
            results: 7,
            ..QueryWork::default()
        });
        assert!((3_000.0..5_300.0).contains(&loaded), "{loaded}");
    }
}
