//! The TTL sweeper: physically deletes expired items, later, in the background.
//!
//! It never decides visibility (reads already hide expired items); it only reclaims space. It
//! works from the ordered expiry index, whose smallest keys are the oldest expired entries, so
//! the index itself is the resume cursor: each pass starts where the last one stopped because
//! what it deleted is gone. It deletes in bounded batches, one batch per container per turn, and
//! each batch is a writer job that re-checks every entry inside the write transaction: an item
//! rewritten after the sweeper found it expired has a new LSN and a new index entry, so the stale
//! candidate no longer matches and the live item is never deleted.
//!
//! This module is policy only: which entries to take on a turn (pacing by batch size, pause and
//! the RU allowance), and the statistics it reports. Its loop also paces the index builder that
//! follows a policy change (`index/builder.rs`), one batch per turn after the deletions. What
//! an expired entry is and how the index is walked are in `ttl/expiry.rs`; the writer jobs that
//! delete a batch are in `ttl/sweep_jobs.rs`, and the delete step itself in `items/purge.rs`.
//!
//! On a container with provisioned throughput (its own or its database's) each deletion costs
//! what a user delete of that item would, and a turn spends at most what users left unspent in
//! the previous second; deletions are never charged to users and never throttle them. Containers
//! without throughput are paced by the batch size and the pause between batches.

use crate::clock::{Pacer, Stopwatch};
use crate::container::Container;
use crate::engine::Engine;
use crate::error::{EngineResult, ErrorCode};
use crate::keys;
use crate::poison::panic_message;
use crate::records::ExpiryEntry;
use crate::throughput::request_units;
use crate::ttl::expiry::{oldest_expired_after, visit_expired_after};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

use crate::ttl::sweep_stats::SweeperConfig;

/// What one walk of the expiry index chose for a batch.
struct Candidates {
    candidates: Vec<(Vec<u8>, ExpiryEntry)>,
    visited: u64,
    walked_everything: bool,
    oldest_expired_ms: Option<i64>,
}

/// Walks a container's expired entries after `after` (the keys the last batch chose, one per
/// class) and picks a batch within the item and RU allowances.
/// What has expired is judged at the snapshot's instant (the store's clock on a shared store).
fn choose_candidates(
    engine: &Engine,
    container: &Container,
    (batch_items_max, mut allowance_ru): (usize, f64),
    count_everything: bool,
    after: &[Vec<u8>],
) -> EngineResult<Candidates> {
    let reader = engine.inner.store.read()?;
    let now_ms = engine.now_in(&*reader);
    let oldest_expired_ms = oldest_expired_after(&*reader, container, now_ms, after)?;
    let mut candidates = Vec::new();
    let mut visited = 0u64;
    let mut walked_everything = true;
    let mut choosing = true;
    visit_expired_after(&*reader, container, now_ms, after, &mut |key, entry| {
        visited += 1;
        if !choosing {
            // Only counting now: nothing more to price or copy.
            return ControlFlow::Continue(());
        }
        // What deleting it costs by size; its index terms are charged when it goes.
        let cost_ru = request_units::write(Some(entry.body_bytes as usize), None, 0);
        if candidates.len() < batch_items_max && cost_ru <= allowance_ru {
            allowance_ru -= cost_ru;
            candidates.push((key.to_vec(), entry));
        } else {
            // Later entries are not cheaper in general: stop reserving for this turn.
            choosing = false;
            if !count_everything {
                walked_everything = false;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    Ok(Candidates {
        candidates,
        visited,
        walked_everything,
        oldest_expired_ms,
    })
}

/// Where the walk after a batch of `candidates` begins: after the batch's last key in each
/// class, else (a class it took nothing of) where this walk began; from the start when the
/// batch is empty.
fn cursor_after(before: Vec<Vec<u8>>, candidates: &[(Vec<u8>, ExpiryEntry)]) -> Vec<Vec<u8>> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let mut cursor = before;
    for (key, _) in candidates {
        let class = keys::expiry_class_of(key);
        match cursor
            .iter_mut()
            .find(|kept| keys::expiry_class_of(kept) == class)
        {
            Some(kept) => kept.clone_from(key),
            None => cursor.push(key.clone()),
        }
    }
    cursor
}

impl Engine {
    /// Sweeps one batch of a container: chooses it within the allowances, deletes it in one
    /// writer job, charges it and records the turn. Returns what it deleted and whether more
    /// may be waiting.
    pub(crate) async fn sweep_container(
        &self,
        container: &Arc<Container>,
        batch_items_max: usize,
    ) -> EngineResult<(u64, bool)> {
        let now_ms = self.now_ms();
        // With provisioned throughput, the sweeper spends only what users left over last second.
        let budget = self.budget_of(container);
        let allowance_ru = match budget {
            Some((key, budget_ru)) => self.inner.budgets.sweeper_allowance(key, budget_ru, now_ms),
            None => f64::INFINITY,
        };
        // Counting the whole backlog costs a walk over it, so it is done only now and then;
        // otherwise the walk stops as soon as the batch is chosen.
        let count_everything = self
            .inner
            .sweep_stats
            .full_count_due(container.number, now_ms);
        // The walk begins after what the last batch chose, which is deleted. A turn that counts
        // the whole backlog walks from the start, and so finds an entry that came in behind
        // the cursor (a version whose commit took longer than its ttl) or that a batch left.
        let after = if count_everything {
            Vec::new()
        } else {
            self.inner.sweep_stats.cursor(container.number)
        };
        // The walk reads storage synchronously, so it runs on the blocking pool under the same
        // bound as user scans, not on the workers that serve requests.
        let mut scan = {
            let (container, after) = (Arc::clone(container), after.clone());
            self.run_scan(move |engine| {
                choose_candidates(
                    engine,
                    &container,
                    (batch_items_max, allowance_ru),
                    count_everything,
                    &after,
                )
            })
            .await?
        };
        let found = scan.candidates.len() as u64;
        let cursor = cursor_after(after, &scan.candidates);
        let (deleted, spent_ru) = self
            .expire(container, std::mem::take(&mut scan.candidates))
            .await?;
        // Deleted: the next walk begins after them. A walk that found nothing begins the next
        // from the start.
        self.inner.sweep_stats.set_cursor(container.number, cursor);
        if let Some((key, budget_ru)) = budget {
            if spent_ru > 0.0 {
                self.inner
                    .budgets
                    .charge_sweeper(key, budget_ru, spent_ru, self.now_ms());
            }
        }
        self.record_turn(container, now_ms, &scan, deleted);
        // More may be waiting when this turn took everything it was allowed.
        Ok((
            deleted,
            found > 0 && deleted > 0 && (found as usize == batch_items_max || scan.visited > found),
        ))
    }

    /// Notes a turn in the container's statistics: its backlog, the age of its oldest expired
    /// item, and what the sweeper has deleted.
    fn record_turn(&self, container: &Container, now_ms: i64, scan: &Candidates, deleted: u64) {
        let Ok(mut stats) = self.inner.sweep_stats.stats.lock() else {
            return;
        };
        let entry = stats.entry(container.number).or_default();
        let backlog_after = if scan.walked_everything {
            scan.visited.saturating_sub(deleted)
        } else {
            // A partial walk: what it saw bounds the backlog from below.
            entry
                .backlog_items
                .saturating_sub(deleted)
                .max(scan.visited.saturating_sub(deleted))
        };
        entry.database_id = container.database_id.clone();
        entry.container_id = container.id.clone();
        entry.backlog_items = backlog_after;
        entry.oldest_expired_age_ms = if backlog_after > 0 {
            scan.oldest_expired_ms.map_or(0, |at| (now_ms - at).max(0))
        } else {
            0
        };
        entry.deleted_total += deleted;
        self.inner
            .sweep_stats
            .sample_deletions(container.number, now_ms, entry.deleted_total);
        if deleted > 0 {
            tracing::debug!(database = %container.database_id, container = %container.id, deleted, backlog = backlog_after, "swept expired items");
        }
    }
}

/// Owns the running sweeper: [`SweeperHandle::stop`] (or dropping it) wakes and ends the loop.
pub struct SweeperHandle {
    pub(crate) stop: Arc<Notify>,
    pub(crate) task: Option<tokio::task::JoinHandle<()>>,
}

impl SweeperHandle {
    /// Ends the loop after the turn in progress and waits for it.
    pub async fn stop(mut self) {
        self.stop.notify_one();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SweeperHandle {
    fn drop(&mut self) {
        // A stored permit: the loop sees it at its next pause even if it is mid-turn now.
        self.stop.notify_one();
    }
}

/// The longest rest after a turn while users are busy.
const BUSY_PAUSE_MAX: Duration = Duration::from_secs(1);
/// The longest pause after failed turns, and how many failures in a row are logged once.
const FAILURE_PAUSE_MAX: Duration = Duration::from_secs(5);
const FAILURE_LOG_EVERY: u32 = 20;

/// How often the sweeper's loop emits due TTL events and trims change logs.
const CHANGE_FEED_MAINTENANCE_INTERVAL: Duration = Duration::from_millis(200);

/// The sweeper's loop: one turn, then a pause that a stop request cuts short. Its pacing
/// (turns, pauses, the rate window) runs on the engine clock's [`Pacer`].
pub(crate) async fn run(engine: Engine, config: SweeperConfig, stop: Arc<Notify>) {
    let pacer = engine.inner.clock.pacer();
    let mut pacing = Pacing::new(&pacer);
    loop {
        if pacing
            .maintain_change_feeds(&engine, &pacer)
            .await
            .is_break()
        {
            return;
        }
        pacing.roll_window(&pacer);
        // While users are active the sweeper takes small batches and a small share of the
        // writer and the CPU; when they are idle it runs at full speed.
        let busy = engine.users_active_within(config.busy_window);
        let batch_items_max = pacing.batch_items_max(&config, busy);
        if batch_items_max == 0 {
            let rest = Duration::from_secs(1).saturating_sub(pacing.window.elapsed());
            if pacer.pause(rest, &stop).await {
                return;
            }
            continue;
        }
        let batch = pacer.stopwatch();
        // The turn runs as a task of its own so that a panic in it is caught here, visibly,
        // instead of silently ending the loop.
        let turn = {
            let engine = engine.clone();
            tokio::spawn(async move { background_turn(&engine, batch_items_max).await }).await
        };
        // The turn's own work: its wall time less what its jobs waited for the writer.
        let worked = batch
            .elapsed()
            .saturating_sub(engine.inner.sweep_stats.take_writer_wait());
        let Some(pause) = pacing.pause_after(&engine, &config, turn, busy, worked) else {
            return;
        };
        pacing.report(&engine, &pacer);
        if pacer.pause(pause, &stop).await {
            return;
        }
    }
}

/// One turn of background work: a batch of expired items per container, then a batch of each
/// index rebuild a policy change started, on what the deletions left of the allowance. Returns
/// the items deleted and whether either has more to do.
async fn background_turn(engine: &Engine, batch_items_max: usize) -> EngineResult<(u64, bool)> {
    let (deleted, backlog_left) = engine.sweep_once(batch_items_max).await?;
    let (_, rebuilding) = engine.build_indexes_once(batch_items_max).await?;
    Ok((deleted, backlog_left || rebuilding))
}

/// What a turn of the sweeper's task returned: its outcome, or how the task failed.
type Turn = Result<EngineResult<(u64, bool)>, tokio::task::JoinError>;

/// The loop's state between turns, measured on its pacer.
struct Pacing {
    last_report: Stopwatch,
    /// The current second of the rate cap, and what was deleted in it.
    window: Stopwatch,
    deleted_in_window: u64,
    change_feeds: Stopwatch,
    /// Turns failed in a row (a store that cannot be reached): the pause doubles with each, and
    /// only the first of a run and then every `FAILURE_LOG_EVERY`th is logged.
    failures: u32,
}

impl Pacing {
    fn new(pacer: &Pacer) -> Pacing {
        Pacing {
            last_report: pacer.stopwatch(),
            window: pacer.stopwatch(),
            deleted_in_window: 0,
            change_feeds: pacer.stopwatch(),
            failures: 0,
        }
    }

    /// Emits due TTL events and trims change logs when the interval has passed, without
    /// waiting for a reader (see change_feed.rs). Breaks when the engine is poisoned.
    async fn maintain_change_feeds(&mut self, engine: &Engine, pacer: &Pacer) -> ControlFlow<()> {
        if self.change_feeds.elapsed() < CHANGE_FEED_MAINTENANCE_INTERVAL {
            return ControlFlow::Continue(());
        }
        self.change_feeds = pacer.stopwatch();
        if let Err(error) = engine.maintain_change_feeds().await {
            if error.code == ErrorCode::StorePoisoned {
                return ControlFlow::Break(());
            }
            if self.failures.is_multiple_of(FAILURE_LOG_EVERY) {
                tracing::warn!(%error, "change feed maintenance failed; retrying later");
            }
        }
        ControlFlow::Continue(())
    }

    /// Starts a new second of the rate cap once the current one is over.
    fn roll_window(&mut self, pacer: &Pacer) {
        // The rate cap is measured on the pacer: it paces work, it is not wall time.
        if self.window.elapsed() >= Duration::from_secs(1) {
            self.window = pacer.stopwatch();
            self.deleted_in_window = 0;
        }
    }

    /// The most items the next turn may delete: the batch size, within the rate cap.
    fn batch_items_max(&self, config: &SweeperConfig, busy: bool) -> usize {
        let full_batch = if busy {
            config.busy_batch_items_max
        } else {
            config.batch_items_max
        };
        match config.unlimited_deletions_per_sec_max {
            Some(max) => (max.saturating_sub(self.deleted_in_window) as usize).min(full_batch),
            None => full_batch,
        }
    }

    /// How long to pause after a turn, or `None` when the loop must end (a poisoned engine, or
    /// a turn that panicked, which poisons it).
    fn pause_after(
        &mut self,
        engine: &Engine,
        config: &SweeperConfig,
        turn: Turn,
        busy: bool,
        worked: Duration,
    ) -> Option<Duration> {
        let pause = match turn {
            Ok(Ok((deleted, more))) if more => {
                self.failures = 0;
                self.deleted_in_window += deleted;
                if busy {
                    // Work one part in `busy_duty_divisor`: rest that many times as long as
                    // the turn worked (its waits for the writer's other groups, a shared
                    // store's lock and round trips, and commits are not work it took from
                    // users). The rest is capped all the same.
                    (worked * config.busy_duty_divisor.saturating_sub(1))
                        .max(config.batch_pause)
                        .min(BUSY_PAUSE_MAX)
                } else {
                    config.batch_pause
                }
            }
            Ok(Ok((deleted, _))) => {
                self.failures = 0;
                self.deleted_in_window += deleted;
                config.idle_interval
            }
            // The engine refuses writes until a restart; the poisoning was logged once.
            Ok(Err(error)) if error.code == ErrorCode::StorePoisoned => return None,
            Ok(Err(error)) => {
                if self.failures.is_multiple_of(FAILURE_LOG_EVERY) {
                    tracing::warn!(%error, failures_in_a_row = self.failures + 1, "sweep pass failed; retrying later");
                }
                self.failures = self.failures.saturating_add(1);
                (config.idle_interval * 2u32.saturating_pow(self.failures.min(8)))
                    .min(FAILURE_PAUSE_MAX)
            }
            Err(failure) => {
                poison_after_panic(engine, failure);
                return None;
            }
        };
        Some(pause)
    }

    /// Logs each container's backlog and deletions once a minute.
    fn report(&mut self, engine: &Engine, pacer: &Pacer) {
        if self.last_report.elapsed() < Duration::from_secs(60) {
            return;
        }
        self.last_report = pacer.stopwatch();
        for stats in engine
            .sweep_stats()
            .into_iter()
            .filter(|s| s.backlog_items > 0 || s.deleted_total > 0)
        {
            tracing::info!(database = %stats.database_id, container = %stats.container_id, backlog = stats.backlog_items, oldest_expired_age_ms = stats.oldest_expired_age_ms, deleted_total = stats.deleted_total, "ttl sweeper");
        }
    }
}

/// Poisons the engine after a sweeper turn panicked, like a writer panic: the log,
/// `poisoned()`, the metric and the stats say why, and the sweeper stops.
fn poison_after_panic(engine: &Engine, failure: tokio::task::JoinError) {
    let message = if failure.is_panic() {
        panic_message(&*failure.into_panic())
    } else {
        failure.to_string()
    };
    engine
        .inner
        .writer
        .poison
        .set(format!("the sweeper panicked: {message}"));
}
