//! The arithmetic of ranking: BM25 over a container's full-text statistics, the SDKs' dense
//! ranks, and reciprocal rank fusion as both SDKs compute it (`weight / (60 + rank)` summed
//! over the components).
//!
//! Pure functions of numbers: what is scored and in which direction is decided by
//! `ranking.rs`, and where the numbers come from by the page (`paging/ranked.rs`) and the
//! internal `_FullTextScore` (`functions/text.rs`).

use std::cmp::Ordering;

/// The constant of reciprocal rank fusion, as both SDKs use it.
pub const RRF_CONSTANT: f64 = 60.0;
/// BM25's term-frequency saturation (the common default, Lucene's and Elasticsearch's).
pub const BM25_K1: f64 = 1.2;
/// BM25's document-length normalization (the common default).
pub const BM25_B: f64 = 0.75;

/// The BM25 statistics of one full-text component over the documents a query ranks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Statistics {
    pub documents: f64,
    pub total_words: f64,
    /// How many documents contain each term.
    pub hits: Vec<f64>,
}

/// BM25 of one document: `frequencies` are how often each term occurs in its text of `words`
/// words. Zero when there are no documents or no words.
pub fn bm25(frequencies: &[f64], words: f64, statistics: &Statistics) -> f64 {
    if statistics.documents <= 0.0 || statistics.total_words <= 0.0 {
        return 0.0;
    }
    let average_words = statistics.total_words / statistics.documents;
    let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * words / average_words);
    frequencies
        .iter()
        .zip(&statistics.hits)
        .filter(|(frequency, _)| **frequency > 0.0)
        .map(|(frequency, hits)| {
            let rarity = 1.0 + (statistics.documents - hits + 0.5) / (hits + 0.5);
            rarity.ln() * frequency * (BM25_K1 + 1.0) / (frequency + norm)
        })
        .sum()
}

/// The 1-based dense ranks of `scores`, best first (`descending`: larger is better): equal
/// scores share a rank and the next score takes the next rank, as the SDKs rank. An undefined
/// score ranks after every defined one.
pub fn dense_ranks(scores: &[Option<f64>], descending: bool) -> Vec<u64> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|a, b| compare_scores(scores[*a], scores[*b], descending));
    let mut ranks = vec![0; scores.len()];
    let mut rank = 0;
    let mut previous: Option<Option<f64>> = None;
    for index in order {
        if previous != Some(scores[index]) {
            rank += 1;
            previous = Some(scores[index]);
        }
        ranks[index] = rank;
    }
    ranks
}

/// Orders two scores best first; undefined last.
pub fn compare_scores(a: Option<f64>, b: Option<f64>, descending: bool) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => {
            let ascending = a.partial_cmp(&b).unwrap_or(Ordering::Equal);
            if descending {
                ascending.reverse()
            } else {
                ascending
            }
        }
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Reciprocal rank fusion: for each row, the sum over components of `weight / (60 + rank)`,
/// ranking each component's `scores` (one per row) in its direction.
pub fn fuse(scores: &[Vec<Option<f64>>], descending: &[bool], weights: &[f64]) -> Vec<f64> {
    let rows = scores.first().map_or(0, Vec::len);
    let mut fused = vec![0.0; rows];
    for ((component, descending), weight) in scores.iter().zip(descending).zip(weights) {
        for (row, rank) in dense_ranks(component, *descending).into_iter().enumerate() {
            fused[row] += weight / (RRF_CONSTANT + rank as f64);
        }
    }
    fused
}
