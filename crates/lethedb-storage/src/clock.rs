//! The storage layer's one reading of the clock: elapsed time for its statistics (the redb
//! flusher's busy time and the waits for it), never for a decision.

use std::time::{Duration, Instant};

/// Time since it was started.
pub(crate) struct Stopwatch(Instant);

impl Stopwatch {
    pub(crate) fn start() -> Stopwatch {
        Stopwatch(Instant::now())
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}
