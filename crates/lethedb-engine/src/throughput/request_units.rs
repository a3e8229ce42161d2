//! The request-unit cost model: what each operation is charged, deterministically.
//!
//! Shaped like the service's published figures: a 1 KiB point read costs 1 RU; a write pays for
//! the documents it inserts and deletes by their size (the service's published table, 1 KB
//! 4.95 RU up to 1 MB 625 RU, linear between its points) and 0.2 RU per index term it adds or
//! removes, so a replace costs a delete plus an insert and a patch 0.4 RU more per operation;
//! a query pays a base cost plus a share per document it scanned and per result it returned.
//! This module only computes numbers: what a write's terms are is `index/maintain.rs`'s
//! business.

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
}
