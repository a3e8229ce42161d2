//! The one clock the engine reads time from.
//!
//! Everything that needs "now" (last-modified stamps, `_ts`, expiry checks, the sweeper's
//! bounds) asks a [`Clock`]. Production uses [`SystemClock`]; tests use [`ManualClock`] and move
//! time by hand instead of sleeping. Nothing else in LetheDB calls `SystemTime::now()`.
//!
//! The monotonic timer lives here too, as [`Stopwatch`]: it times commits, paces the sweeper and
//! tracks user activity. It never decides expiry or anything a client sees as time, so it is not
//! behind the injectable [`Clock`]; it is here so that this module is the only one reading the
//! machine's clocks (a tidy test checks it).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A monotonic timer started at a point in time: for pacing and measuring, never for expiry.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    started: Instant,
}

impl Stopwatch {
    /// A stopwatch started now.
    pub fn start() -> Stopwatch {
        Stopwatch {
            started: Instant::now(),
        }
    }

    /// The time since the stopwatch was started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;
}

/// The machine's wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(elapsed) => i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX),
            // A clock set before 1970 is a broken machine; time zero keeps arithmetic sane.
            Err(_) => 0,
        }
    }
}

/// The machine's wall clock moved by a fixed offset: `lethedb serve --clock-offset-ms`, for
/// tests that give processes sharing a store clocks that disagree.
#[derive(Debug, Default)]
pub struct OffsetClock {
    pub offset_ms: i64,
}

impl Clock for OffsetClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms().saturating_add(self.offset_ms)
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    now_ms: AtomicI64,
}

impl ManualClock {
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock {
            now_ms: AtomicI64::new(now_ms),
        }
    }

    pub fn set_ms(&self, now_ms: i64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance_ms(&self, delta_ms: i64) {
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}
