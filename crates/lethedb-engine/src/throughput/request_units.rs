//! The request-unit cost model: what each operation is charged, deterministically.
//!
//! Shaped like the service's published figures: a 1 KiB point read costs 1 RU, a 1 KiB write
//! about 5.7 RU, both growing with size; a query pays a base cost plus a share per document it
//! scanned and per result it returned. This module only computes numbers.

/// A read or write of the catalog (databases, containers).
pub const CATALOG_READ: f64 = 1.0;
pub const CATALOG_WRITE: f64 = 5.0;

fn kibibytes(bytes: usize) -> f64 {
    (bytes as f64 / 1024.0).max(1.0)
}

/// A point read or feed page of `bytes` of documents.
pub fn read(bytes: usize) -> f64 {
    round(kibibytes(bytes))
}

/// A create, replace, upsert or delete of a document of `bytes`.
pub fn write(bytes: usize) -> f64 {
    round(5.71 * kibibytes(bytes).powf(0.9))
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
        assert_eq!(write(1024), 5.71);
        assert!(write(100 * 1024) > write(1024));
        assert!(query(100, 10) > query(10, 10));
    }
}
