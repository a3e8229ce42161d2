//! The one clock the engine reads time from.
//!
//! Everything that needs "now" (last-modified stamps, `_ts`, expiry checks, the sweeper's
//! bounds) asks a [`Clock`]. Production uses [`SystemClock`]; tests use [`ManualClock`] and move
//! time by hand instead of sleeping. Nothing else in LetheDB calls `SystemTime::now()`.
//!
//! The monotonic timer lives here too, as [`Stopwatch`]: it times commits, paces the sweeper and
//! tracks user activity. It never decides expiry or anything a client sees as time. What paces
//! background work (the sweeper's turns and pauses) comes from the clock as a [`Pacer`]: the
//! machine's monotonic timer, or under a [`ManualClock`] the manual time, so a test runs the
//! sweeper's real loop by moving time instead of sleeping. This module is the only one reading
//! the machine's clocks (a tidy test checks it).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// A timer started at a point in time: for pacing and measuring, never for expiry. Monotonic
/// ([`Stopwatch::start`]), or on a manual clock's time ([`Pacer::stopwatch`]).
#[derive(Clone, Debug)]
pub struct Stopwatch {
    started: Started,
}

#[derive(Clone, Debug)]
enum Started {
    Machine(Instant),
    Manual { time: Arc<ManualTime>, at_ms: i64 },
}

impl Stopwatch {
    /// A stopwatch on the machine's monotonic timer, started now.
    pub fn start() -> Stopwatch {
        Stopwatch {
            started: Started::Machine(Instant::now()),
        }
    }

    /// The time since the stopwatch was started.
    pub fn elapsed(&self) -> Duration {
        match &self.started {
            Started::Machine(instant) => instant.elapsed(),
            Started::Manual { time, at_ms } => {
                Duration::from_millis(u64::try_from(time.now_ms() - at_ms).unwrap_or(0))
            }
        }
    }
}

/// What paces background work: the machine's monotonic timer, or a manual clock's time.
#[derive(Clone, Debug, Default)]
pub struct Pacer {
    /// The manual clock's time; `None` for the machine's timer.
    manual: Option<Arc<ManualTime>>,
}

impl Pacer {
    /// A stopwatch on this pacer's time, started now.
    pub fn stopwatch(&self) -> Stopwatch {
        match &self.manual {
            None => Stopwatch::start(),
            Some(time) => Stopwatch {
                started: Started::Manual {
                    time: Arc::clone(time),
                    at_ms: time.now_ms(),
                },
            },
        }
    }

    /// Waits `duration` of this pacer's time, or until `stop` is notified. Returns whether it
    /// was stopped. On a manual clock the wait ends when the test moves time far enough.
    pub async fn pause(&self, duration: Duration, stop: &Notify) -> bool {
        match &self.manual {
            None => tokio::time::timeout(duration, stop.notified())
                .await
                .is_ok(),
            Some(time) => {
                let until_ms = time
                    .now_ms()
                    .saturating_add(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX));
                tokio::select! {
                    () = stop.notified() => true,
                    () = time.reached(until_ms) => false,
                }
            }
        }
    }
}

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;

    /// What paces background work on this clock: the machine's monotonic timer, unless the
    /// clock moves only when told to.
    fn pacer(&self) -> Pacer {
        Pacer::default()
    }
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

/// A clock that moves only when told to. It paces background work too: a pause on it ends
/// when the time is moved past its end.
#[derive(Debug)]
pub struct ManualClock {
    time: Arc<ManualTime>,
}

/// A manual clock's time, shared with the pacers and stopwatches made from it.
#[derive(Debug)]
struct ManualTime {
    now_ms: AtomicI64,
    /// Wakes the pauses waiting on this time whenever it moves.
    moved: Notify,
}

impl ManualTime {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    /// Waits until the time is at least `until_ms`.
    async fn reached(&self, until_ms: i64) {
        loop {
            // Registered before the check, so a move between the two is not missed.
            let moved = self.moved.notified();
            let mut moved = std::pin::pin!(moved);
            moved.as_mut().enable();
            if self.now_ms() >= until_ms {
                return;
            }
            moved.await;
        }
    }
}

impl ManualClock {
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock {
            time: Arc::new(ManualTime {
                now_ms: AtomicI64::new(now_ms),
                moved: Notify::new(),
            }),
        }
    }

    pub fn set_ms(&self, now_ms: i64) {
        self.time.now_ms.store(now_ms, Ordering::SeqCst);
        self.time.moved.notify_waiters();
    }

    pub fn advance_ms(&self, delta_ms: i64) {
        self.time.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
        self.time.moved.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.time.now_ms()
    }

    fn pacer(&self) -> Pacer {
        Pacer {
            manual: Some(Arc::clone(&self.time)),
        }
    }
}
