//! `VectorDistance(a, b [, bruteForce [, options]])`: the similarity score of two vectors, exact
//! (every call compares the whole vectors, as the service's brute-force search does), by the
//! options' `distanceFunction`, cosine when it names none (the container's policy has already
//! been written into the options by `vectors.rs` where it names the path).
//!
//! Scores follow the service's conventions: cosine similarity and dot product grow with
//! similarity, euclidean distance shrinks. Vectors that are not arrays of numbers of one
//! length, or a cosine over a zero vector, make the call `undefined`.

use serde_json::Value;

use super::args::{array, number};
use crate::context::Val;
use crate::value::number_value;
use crate::vectors::{Distance, DISTANCE_OPTION};

/// Computes `VectorDistance` over evaluated arguments.
pub fn vector_distance(args: &[Val<'_>]) -> Option<Value> {
    let left = numbers(array(args.first()?.as_deref())?)?;
    let right = numbers(array(args.get(1)?.as_deref())?)?;
    if left.len() != right.len() || left.is_empty() {
        return None;
    }
    let distance = match args.get(3).and_then(|options| options.as_deref()) {
        Some(Value::Object(options)) => options
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(DISTANCE_OPTION))
            .map_or(Some(Distance::Cosine), |(_, name)| {
                name.as_str().and_then(Distance::parse)
            })?,
        _ => Distance::Cosine,
    };
    let pairs = || left.iter().zip(&right);
    let score = match distance {
        Distance::DotProduct => pairs().map(|(a, b)| a * b).sum(),
        Distance::Euclidean => pairs().map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt(),
        Distance::Cosine => {
            let norms = norm(&left) * norm(&right);
            if norms == 0.0 {
                return None;
            }
            pairs().map(|(a, b)| a * b).sum::<f64>() / norms
        }
    };
    number_value(score)
}

fn numbers(values: &[Value]) -> Option<Vec<f64>> {
    values.iter().map(|value| number(Some(value))).collect()
}

fn norm(vector: &[f64]) -> f64 {
    vector.iter().map(|x| x * x).sum::<f64>().sqrt()
}
