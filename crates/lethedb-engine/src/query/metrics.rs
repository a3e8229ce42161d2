//! Query metrics (`x-ms-documentdb-populatequerymetrics`): what one page of a query cost, timed
//! by phase with the clock module's [`Stopwatch`] and counted in documents and bytes, in the
//! service's terms (the server writes them as `x-ms-documentdb-query-metrics`).
//!
//! Only a page whose request asks is measured: timing each document costs two clock reads, and
//! counting the output's bytes serializes the page once more. The index lookup phase is the
//! planner's bounded counts and, when it chose the index, the reads of the candidates' entries
//! and resource ids (`query/seek.rs`); the documents those name are loaded as a scan loads them.
//! This module measures; it decides nothing about the query.

use crate::clock::Stopwatch;
use serde_json::Value;
use std::time::Duration;

/// What one page of a query cost. The times are disjoint parts of `total`, so `total` is at
/// least their sum.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryMetrics {
    /// The whole page on the scan thread: the snapshot, the user-defined functions, and every
    /// phase below (`totalExecutionTimeInMs`).
    pub total: Duration,
    /// Parsing, checking and planning the text (`queryCompileTimeInMs`).
    pub compile: Duration,
    /// Choosing the access and reading the index: counting entries, reading the candidates'
    /// entries and resource ids (`indexLookupTimeInMs`).
    pub index_lookup: Duration,
    /// Reading the documents: the storage scan, the visibility checks, and decoding each record
    /// or taking it from the document cache (`documentLoadTimeInMs`).
    pub document_load: Duration,
    /// Evaluating the query over the documents and ending the page: filters, projections,
    /// sorting, aggregates, built-in and user-defined functions (`VMExecutionTimeInMs`).
    pub runtime_execution: Duration,
    /// Serializing the page's results (`writeOutputTimeInMs`).
    pub output_write: Duration,
    /// Documents read and handed to the evaluator (`retrievedDocumentCount`).
    pub documents_retrieved: u64,
    /// Their stored bytes: each document as the client sent it, minus system properties, as
    /// compact JSON (`retrievedDocumentSize`).
    pub retrieved_document_bytes: u64,
    /// Documents read of which at least one row passed the WHERE clause.
    pub documents_matched: u64,
    /// Results on the page (`outputDocumentCount`).
    pub documents_output: u64,
    /// Their bytes as JSON (`outputDocumentSize`).
    pub output_document_bytes: u64,
}

impl QueryMetrics {
    /// The service's `indexUtilizationRatio`: of the documents loaded, the share that matched the
    /// filter (the service's definition; results would undercount an aggregate's). A scan loads
    /// every document in scope, so its ratio is the filter's selectivity; an index plan loads
    /// only candidates, so its ratio is near 1. 1 when nothing was loaded.
    pub fn index_utilization_ratio(&self) -> f64 {
        if self.documents_retrieved == 0 {
            return 1.0;
        }
        self.documents_matched as f64 / self.documents_retrieved as f64
    }
}

/// The page's results as JSON bytes, and the time writing them took.
pub(crate) fn measure_output(items: &[Value]) -> (u64, Duration) {
    let writing = Stopwatch::start();
    let mut counter = ByteCounter(0);
    for item in items {
        // Writing a JSON value into a counter cannot fail; a failure would only undercount.
        if serde_json::to_writer(&mut counter, item).is_err() {
            break;
        }
    }
    (counter.0, writing.elapsed())
}

/// A writer that keeps only how many bytes went through it.
struct ByteCounter(u64);

impl std::io::Write for ByteCounter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_bytes_are_the_results_as_json() {
        let items = [json!({"id": "a"}), json!(12), json!("é")];
        let expected: usize = items.iter().map(|item| item.to_string().len()).sum();
        assert_eq!(measure_output(&items).0, expected as u64);
    }

    #[test]
    fn the_ratio_is_the_share_of_loaded_documents_that_matched() {
        let mut metrics = QueryMetrics::default();
        assert_eq!(metrics.index_utilization_ratio(), 1.0);
        metrics.documents_retrieved = 4;
        metrics.documents_matched = 1;
        assert_eq!(metrics.index_utilization_ratio(), 0.25);
    }
}
