//! Throughput buckets: up to five per container, each capping the share of the container's
//! throughput that requests naming it (`x-ms-cosmos-throughput-bucket`) may spend in a second.
//!
//! On the service they are set in the container's throughput settings through the control
//! plane (`throughputBuckets: [{id, maxThroughputPercentage}]`), which LetheDB does not have:
//! here they are set through `/_lethedb/throughput-buckets` or a seed file, and kept on the
//! container's record. This module validates them and names their budgets; admitting and
//! charging happen in `api/engine.rs`. It knows nothing of HTTP.

use crate::error::{EngineError, EngineResult, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The bucket ids a request may name, as on the service.
pub const BUCKET_IDS: std::ops::RangeInclusive<u8> = 1..=5;

/// One bucket: requests naming `id` may spend `max_throughput_percentage` of the container's
/// RU/s in a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThroughputBucket {
    pub id: u8,
    pub max_throughput_percentage: u8,
}

fn invalid(message: &str) -> EngineError {
    EngineError::with_message(ErrorCode::InvalidThroughput, message)
}

/// Reads `{"throughputBuckets": [{"id": 1, "maxThroughputPercentage": 50}, ...]}` (or the bare
/// array): ids 1 to 5, each at most once, percentages 1 to 100. An empty list removes them.
pub fn parse_buckets(body: &Value) -> EngineResult<Vec<ThroughputBucket>> {
    let list = body.get("throughputBuckets").unwrap_or(body);
    let entries = list
        .as_array()
        .ok_or_else(|| invalid("'throughputBuckets' must be an array."))?;
    let mut buckets: Vec<ThroughputBucket> = Vec::with_capacity(entries.len());
    for entry in entries {
        let bucket = parse_bucket(entry)?;
        if buckets.iter().any(|seen| seen.id == bucket.id) {
            return Err(invalid("Each throughput bucket id may appear once."));
        }
        buckets.push(bucket);
    }
    buckets.sort_by_key(|bucket| bucket.id);
    Ok(buckets)
}

fn parse_bucket(entry: &Value) -> EngineResult<ThroughputBucket> {
    let id = entry
        .get("id")
        .and_then(Value::as_u64)
        .and_then(|id| u8::try_from(id).ok())
        .filter(|id| BUCKET_IDS.contains(id))
        .ok_or_else(|| invalid("A throughput bucket's 'id' must be an integer from 1 to 5."))?;
    let max_throughput_percentage = entry
        .get("maxThroughputPercentage")
        .and_then(Value::as_u64)
        .and_then(|percent| u8::try_from(percent).ok())
        .filter(|percent| (1..=100).contains(percent))
        .ok_or_else(|| {
            invalid(
                "A throughput bucket's 'maxThroughputPercentage' must be an integer from 1 to 100.",
            )
        })?;
    Ok(ThroughputBucket {
        id,
        max_throughput_percentage,
    })
}

/// The buckets as the service's throughput settings spell them.
pub fn buckets_json(buckets: &[ThroughputBucket]) -> Value {
    let list: Vec<Value> = buckets
        .iter()
        .map(|bucket| json!({"id": bucket.id, "maxThroughputPercentage": bucket.max_throughput_percentage}))
        .collect();
    json!({ "throughputBuckets": list })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_read_sorted_and_checked() {
        let read = parse_buckets(&json!({"throughputBuckets": [
            {"id": 3, "maxThroughputPercentage": 20},
            {"id": 1, "maxThroughputPercentage": 100}
        ]}))
        .unwrap();
        assert_eq!(
            read,
            vec![
                ThroughputBucket {
                    id: 1,
                    max_throughput_percentage: 100
                },
                ThroughputBucket {
                    id: 3,
                    max_throughput_percentage: 20
                },
            ]
        );
        assert_eq!(buckets_json(&read)["throughputBuckets"][1]["id"], 3);
        assert_eq!(parse_buckets(&json!([])).unwrap(), Vec::new());
        for bad in [
            json!({"throughputBuckets": {}}),
            json!([{"id": 0, "maxThroughputPercentage": 50}]),
            json!([{"id": 6, "maxThroughputPercentage": 50}]),
            json!([{"id": 2, "maxThroughputPercentage": 0}]),
            json!([{"id": 2, "maxThroughputPercentage": 101}]),
            json!([{"id": 2}]),
            json!([{"id": 2, "maxThroughputPercentage": 10}, {"id": 2, "maxThroughputPercentage": 20}]),
        ] {
            assert!(parse_buckets(&bad).is_err(), "{bad}");
        }
    }
}
