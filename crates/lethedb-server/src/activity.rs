//! Activity ids: the UUID every response carries in `x-ms-activity-id`, which clients log and
//! which a 5xx names in place of internal detail.
//!
//! Its own module because both error bodies and ordinary responses need it, and neither should
//! import the other for it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A fresh activity id in the UUID format the SDKs log: a random per-process prefix and a
/// counter, so making one costs no system call (a v4 UUID per request would ask the OS for
/// randomness every time).
pub fn activity_id() -> String {
    static PREFIX: OnceLock<u128> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| uuid::Uuid::new_v4().as_u128());
    let id = prefix ^ u128::from(COUNTER.fetch_add(1, Ordering::Relaxed));
    uuid::Uuid::from_u128(id).hyphenated().to_string()
}
