//! Helpers shared by the engine's integration tests: partition key values and a deterministic
//! random generator.

// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use lethedb_engine::PartitionKeyValue;

/// The partition key header value for a single string key.
pub fn pk(value: &str) -> Option<PartitionKeyValue> {
    Some(PartitionKeyValue::from_header(&serde_json::json!([value]).to_string()).expect("pk"))
}

/// A tiny deterministic generator (xorshift), so a failure replays.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
