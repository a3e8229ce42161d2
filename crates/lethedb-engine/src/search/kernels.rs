//! The arithmetic of a vector store's scan: single-precision dot products and squared
//! euclidean distances in sixteen independent lanes (which the compiler turns into SIMD), and
//! the bound on how far such a score may lie from the query crate's exact one (computed in
//! double precision from the documents' JSON numbers).
//!
//! A store ranks by these scores only to choose which documents to load: an interval that
//! surely holds the exact score lets it load every document that could make the top and no
//! more. It never answers a score; the page computes each loaded document's score exactly.

use lethedb_query::Distance;

/// Lanes summed independently: enough for 512-bit registers, and a fixed order of sums.
const LANES: usize = 16;
/// The largest magnitude a stored or query component may have: squares and sums of 4,096 of
/// them stay far inside single precision's range.
pub(crate) const COMPONENT_MAGNITUDE_MAX: f64 = 1e15;
/// Single precision's unit roundoff.
const UNIT_ROUNDOFF: f64 = 1.0 / 16_777_216.0;
/// What flushing a component to single precision's smallest numbers may add to any score,
/// whatever the vectors (their components are bounded by `COMPONENT_MAGNITUDE_MAX`).
const ABSOLUTE_SLACK: f64 = 1e-20;

/// The dot product of two vectors of one length, in single precision.
pub(crate) fn dot(left: &[f32], right: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut left_chunks = left.chunks_exact(LANES);
    let mut right_chunks = right.chunks_exact(LANES);
    for (a, b) in (&mut left_chunks).zip(&mut right_chunks) {
        for lane in 0..LANES {
            lanes[lane] += a[lane] * b[lane];
        }
    }
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(a, b)| a * b)
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// The squared euclidean distance of two vectors of one length, in single precision.
pub(crate) fn squared_distance(left: &[f32], right: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut left_chunks = left.chunks_exact(LANES);
    let mut right_chunks = right.chunks_exact(LANES);
    for (a, b) in (&mut left_chunks).zip(&mut right_chunks) {
        for lane in 0..LANES {
            let difference = a[lane] - b[lane];
            lanes[lane] += difference * difference;
        }
    }
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// The query side of a scan: the vector in single precision, its exact norm, and the relative
/// error bound of a score over vectors of its length.
pub(crate) struct Probe {
    pub(crate) vector: Vec<f32>,
    pub(crate) norm: f64,
    pub(crate) distance: Distance,
    /// Twice the worst case of rounding both vectors to single precision and summing their
    /// `n` products in it: `(n + 4)` unit roundoffs, doubled.
    relative_error: f64,
}

/// Where the exact score of one stored vector lies, as closeness: larger is closer whatever
/// the distance function (a euclidean distance is negated).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Closeness {
    pub(crate) low: f64,
    pub(crate) high: f64,
}

impl Probe {
    /// The probe of a query vector, or `None` when a component is out of range (the page then
    /// scans).
    pub(crate) fn new(vector: &[f64], distance: Distance) -> Option<Probe> {
        if vector
            .iter()
            .any(|x| !x.is_finite() || x.abs() > COMPONENT_MAGNITUDE_MAX)
        {
            return None;
        }
        Some(Probe {
            vector: vector.iter().map(|&x| x as f32).collect(),
            norm: vector.iter().map(|x| x * x).sum::<f64>().sqrt(),
            distance,
            relative_error: 2.0 * (vector.len() as f64 + 4.0) * UNIT_ROUNDOFF,
        })
    }

    /// The interval that holds the exact closeness of `stored` (whose exact norm is
    /// `stored_norm`); `None` where the exact score is undefined (a cosine with a zero vector).
    pub(crate) fn closeness(&self, stored: &[f32], stored_norm: f64) -> Option<Closeness> {
        match self.distance {
            Distance::DotProduct => {
                let score = f64::from(dot(&self.vector, stored));
                let error = self.relative_error * self.norm * stored_norm + ABSOLUTE_SLACK;
                Some(Closeness {
                    low: score - error,
                    high: score + error,
                })
            }
            Distance::Cosine => {
                let norms = self.norm * stored_norm;
                if norms == 0.0 {
                    return None;
                }
                let score = f64::from(dot(&self.vector, stored)) / norms;
                let error = self.relative_error + ABSOLUTE_SLACK / norms;
                Some(Closeness {
                    low: score - error,
                    high: score + error,
                })
            }
            Distance::Euclidean => {
                let squared = f64::from(squared_distance(&self.vector, stored));
                let reach = self.norm + stored_norm;
                let error = self.relative_error * reach * reach + ABSOLUTE_SLACK;
                Some(Closeness {
                    low: -(squared + error).sqrt(),
                    high: -(squared - error).max(0.0).sqrt(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query crate's definitions, in double precision.
    fn exact(distance: Distance, left: &[f64], right: &[f64]) -> f64 {
        let dot: f64 = left.iter().zip(right).map(|(a, b)| a * b).sum();
        let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        match distance {
            Distance::DotProduct => dot,
            Distance::Cosine => dot / (norm(left) * norm(right)),
            Distance::Euclidean => -left
                .iter()
                .zip(right)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt(),
        }
    }

    #[test]
    fn the_interval_holds_the_exact_score() {
        // A deterministic spread of magnitudes, signs and lengths (including near-equal
        // vectors, where the euclidean distance loses the most digits).
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 2_000_001) as f64 / 1_000_000.0 - 1.0
        };
        for dimensions in [1, 3, 16, 17, 100, 768] {
            for scale in [1e-6, 1.0, 1e6] {
                let left: Vec<f64> = (0..dimensions).map(|_| next() * scale).collect();
                let near: Vec<f64> = left.iter().map(|x| x + next() * scale * 1e-7).collect();
                let far: Vec<f64> = (0..dimensions).map(|_| next() * scale).collect();
                for right in [&near, &far] {
                    for distance in [Distance::DotProduct, Distance::Cosine, Distance::Euclidean] {
                        let probe = Probe::new(&left, distance).unwrap();
                        let stored: Vec<f32> = right.iter().map(|&x| x as f32).collect();
                        let norm = right.iter().map(|x| x * x).sum::<f64>().sqrt();
                        let interval = probe.closeness(&stored, norm).unwrap();
                        let truth = exact(distance, &left, right);
                        assert!(
                            interval.low <= truth && truth <= interval.high,
                            "{distance:?} {dimensions}-d ×{scale}: {truth} outside [{}, {}]",
                            interval.low,
                            interval.high
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn an_out_of_range_query_is_declined() {
        assert!(Probe::new(&[1.0, f64::INFINITY], Distance::Cosine).is_none());
        assert!(Probe::new(&[1e16], Distance::Cosine).is_none());
        assert!(Probe::new(&[0.0, 0.0], Distance::Cosine)
            .unwrap()
            .closeness(&[1.0, 0.0], 1.0)
            .is_none());
    }
}
