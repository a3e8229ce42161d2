//! The synthetic data set every workload shares: deterministic ids, partition keys and values
//! from a seed, item bodies of a given size, and the few fields read back from replies.
//!
//! It knows nothing of requests or servers: the same seed always describes the same items, so
//! a workload can compute how many rows a query must return without asking the server.

use bytes::Bytes;
use std::time::{SystemTime, UNIX_EPOCH};

/// Item `value`s are uniform in `0..VALUE_RANGE`, so the filter keeps about half.
pub const VALUE_RANGE: u64 = 1000;

/// A deterministic random stream (splitmix64): every run with the same seed sends the same
/// sequence, and it costs nothing next to a request.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }
}

pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Wall-clock milliseconds since the Unix epoch, with a fraction: the clock the server's
/// `_ts` and its logs use, so client and server instants compare directly on one machine.
pub fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// The shape of the preloaded data set.
#[derive(Clone, Debug)]
pub struct DataSet {
    pub items: usize,
    pub partitions: usize,
    pub item_bytes: usize,
    pub seed: u64,
}

impl DataSet {
    pub fn id(&self, index: usize) -> String {
        format!("i{index}")
    }
    pub fn pk(&self, index: usize) -> String {
        format!("p{}", index % self.partitions.max(1))
    }
    pub fn value(&self, index: usize) -> u64 {
        mix(self.seed ^ (index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D)) % VALUE_RANGE
    }
    /// How many preloaded items the query filter keeps, in all and in partition `partition`.
    pub fn expected_rows(&self, partition: Option<usize>) -> u64 {
        (0..self.items)
            .filter(|&i| partition.is_none_or(|p| i % self.partitions.max(1) == p))
            .filter(|&i| self.value(i) > 500)
            .count() as u64
    }
}

/// One item's JSON, padded with a `payload` string so the whole body is `item_bytes` long
/// (or a little longer when the fixed fields alone exceed it).
pub fn item_body(id: &str, pk: &str, value: u64, extra: &str, item_bytes: usize) -> Bytes {
    let head = format!("{{\"id\":\"{id}\",\"pk\":\"{pk}\",\"value\":{value},{extra}\"payload\":\"");
    let tail = "\"}";
    let pad = item_bytes.saturating_sub(head.len() + tail.len());
    let mut body = String::with_capacity(head.len() + pad + tail.len());
    body.push_str(&head);
    body.extend(std::iter::repeat_n('x', pad));
    body.push_str(tail);
    Bytes::from(body)
}

/// The `_ts` of a returned resource, or 0 if absent. Scans for the field rather than parsing
/// the whole body.
pub fn json_ts(body: &[u8]) -> i64 {
    json_number_field(body, b"\"_ts\":").unwrap_or(0)
}

pub fn json_number_field(body: &[u8], key: &[u8]) -> Option<i64> {
    let at = body.windows(key.len()).rposition(|w| w == key)? + key.len();
    let digits: String = body[at..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|b| b.is_ascii_digit() || **b == b'-')
        .map(|&b| b as char)
        .collect();
    digits.parse().ok()
}

/// The rows of one query page: `_count` if the server sent it, else the length of `Documents`.
pub fn page_rows(body: &[u8]) -> Option<u64> {
    if let Some(count) = json_number_field(body, b"\"_count\":") {
        return u64::try_from(count).ok();
    }
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(value.get("Documents")?.as_array()?.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_bodies_have_the_requested_size_and_parse() {
        let body = item_body("i1", "p1", 42, "\"ttl\":2,", 1024);
        assert_eq!(body.len(), 1024);
        let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(value["ttl"], 2);
        assert_eq!(value["value"], 42);
    }

    #[test]
    fn ts_and_count_are_found_without_a_full_parse() {
        assert_eq!(json_ts(br#"{"id":"a","_ts":1700000000}"#), 1_700_000_000);
        assert_eq!(page_rows(br#"{"Documents":[{},{}],"_count":2}"#), Some(2));
        assert_eq!(page_rows(br#"{"Documents":[{},{},{}]}"#), Some(3));
    }
}
