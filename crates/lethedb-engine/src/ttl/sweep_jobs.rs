//! The sweeper's delete jobs: a chosen batch of expired entries handed to the writer, in one
//! job that may write anything (under the store's lock on a shared store), or, on a shared
//! store, one job per shard under that shard's lock alone, so that a mass expiry never holds
//! back writes to other shards or containers on any process.
//!
//! It does not choose the batch or pace the turns (`ttl/sweeper.rs`), nor decide what a job
//! deletes (`items/purge.rs` checks every candidate again inside the transaction).

use crate::clock::Pacer;
use crate::container::Container;
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::items::purge::{apply_expire, apply_expire_in_shards};
use crate::keys;
use crate::partitions::shards::Shard;
use crate::records::ExpiryEntry;
use lethedb_storage::Table;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// What a purge job did: the items it deleted, what deleting them cost, and how long it
/// applied (the rest of its time it waited for the writer).
struct Purged {
    deleted: u64,
    spent_ru: f64,
    applying: Duration,
}

impl Purged {
    fn new(deleted: u64, spent_ru: f64, applying: Duration) -> Purged {
        Purged {
            deleted,
            spent_ru,
            applying,
        }
    }

    fn add(&mut self, other: Purged) {
        self.deleted += other.deleted;
        self.spent_ru += other.spent_ru;
        self.applying += other.applying;
    }
}

/// The item keys a purge of `candidates` reads again, with the shards they lie in added to
/// `shards`.
fn purge_reads(
    container: &Container,
    candidates: &[(Vec<u8>, ExpiryEntry)],
    shards: &mut BTreeSet<Shard>,
) -> Vec<(Table, Vec<u8>)> {
    let number = container.key_number();
    candidates
        .iter()
        .filter_map(|(expiry_key, _)| keys::split_expiry_key(expiry_key))
        .map(|(_, suffix)| {
            shards.insert(container.shard_of_suffix(suffix));
            (Table::Items, keys::item_key_from_suffix(number, suffix))
        })
        .collect()
}

/// A shard's purge job as its task ended: a panic goes on unwinding (the sweeper's loop
/// poisons the engine for it, as for any panic of a turn).
fn joined_purge(
    joined: Result<EngineResult<Purged>, tokio::task::JoinError>,
) -> EngineResult<Purged> {
    match joined {
        Ok(outcome) => outcome,
        Err(failure) if failure.is_panic() => std::panic::resume_unwind(failure.into_panic()),
        Err(failure) => Err(EngineError::with_message(
            ErrorCode::WriterStopped,
            format!("a purge did not finish: {failure}"),
        )),
    }
}

impl Engine {
    /// Deletes the chosen entries: how many it deleted and the RUs it spent. On a shared store,
    /// a container of several shards whose writes stay in their shards is purged shard by
    /// shard, each job under its shard's lock alone, so a mass expiry never holds back writes
    /// to other shards or containers on any process; any other container in one job under the
    /// store's lock.
    pub(crate) async fn expire(
        &self,
        container: &Arc<Container>,
        candidates: Vec<(Vec<u8>, ExpiryEntry)>,
    ) -> EngineResult<(u64, f64)> {
        if candidates.is_empty() {
            return Ok((0, 0.0));
        }
        // The time the jobs waited for the writer (behind other groups, for their commit) is
        // not work the sweeper took from anyone: the pacing leaves it out.
        let pacer = self.inner.clock.pacer();
        let call = pacer.stopwatch();
        let in_shards =
            self.inner.shared && container.shards > 1 && container.writes_stay_in_shards();
        let purged = if in_shards {
            self.expire_in_shards(container, candidates, &pacer).await?
        } else {
            self.expire_in_container(container, candidates, &pacer)
                .await?
        };
        self.inner
            .sweep_stats
            .note_writer_wait(call.elapsed().saturating_sub(purged.applying));
        Ok((purged.deleted, purged.spent_ru))
    }

    /// Deletes the chosen entries in one writer job that may write anything (under the store's
    /// lock on a shared store).
    async fn expire_in_container(
        &self,
        container: &Container,
        candidates: Vec<(Vec<u8>, ExpiryEntry)>,
        pacer: &Pacer,
    ) -> EngineResult<Purged> {
        let (database_id, container_id) = (container.database_id.clone(), container.id.clone());
        // The job reads each candidate's item again and the counters of its shard: on a
        // shared store they come with the transaction's start instead of a round trip each
        // under the lock.
        let reads = if self.inner.shared {
            let mut shards = BTreeSet::new();
            let mut reads = purge_reads(container, &candidates, &mut shards);
            reads.extend(
                shards
                    .into_iter()
                    .map(|shard| (Table::Counters, container.counters_key(shard))),
            );
            reads
        } else {
            Vec::new()
        };
        let pacer = pacer.clone();
        self.inner
            .writer
            .write_reading(reads, move |context| {
                let applying = pacer.stopwatch();
                let (deleted, spent_ru) =
                    apply_expire(context, &database_id, &container_id, candidates)?;
                Ok(Purged::new(deleted, spent_ru, applying.elapsed()))
            })
            .await
    }

    /// Deletes the chosen entries in one writer job per shard, each under that shard's lock
    /// alone (`Writer::write_in_shards`). The jobs are queued together, so the writer may still
    /// commit them in one group (a group locks the shards of its jobs, no others). A job that
    /// fails fails the turn, as the one job of [`Engine::expire_in_container`] would; the
    /// other shards' deletions stand, since every one of them is final anyway.
    async fn expire_in_shards(
        &self,
        container: &Arc<Container>,
        candidates: Vec<(Vec<u8>, ExpiryEntry)>,
        pacer: &Pacer,
    ) -> EngineResult<Purged> {
        let mut by_shard: BTreeMap<Shard, Vec<(Vec<u8>, ExpiryEntry)>> = BTreeMap::new();
        for candidate in candidates {
            if let Some((_, suffix)) = keys::split_expiry_key(&candidate.0) {
                let shard = container.shard_of_suffix(suffix);
                by_shard.entry(shard).or_default().push(candidate);
            }
        }
        let mut jobs = tokio::task::JoinSet::new();
        for (shard, group) in by_shard {
            // Its items, its shard's counters and the TTL-event watermarks, with the start.
            let mut reads = purge_reads(container, &group, &mut BTreeSet::new());
            reads.push((Table::Counters, container.counters_key(shard)));
            reads.push((
                Table::Counters,
                keys::change_state_key(container.key_number()),
            ));
            let lock = container.shard_lock(shard);
            let (engine, resolved, pacer) = (self.clone(), Arc::clone(container), pacer.clone());
            jobs.spawn(async move {
                let writer = &engine.inner.writer;
                writer
                    .write_in_shards(vec![lock], reads, move |context| {
                        let applying = pacer.stopwatch();
                        let (deleted, spent_ru) =
                            apply_expire_in_shards(context, &resolved, group)?;
                        Ok(Purged::new(deleted, spent_ru, applying.elapsed()))
                    })
                    .await
            });
        }
        let mut total = Purged::new(0, 0.0, Duration::ZERO);
        let mut failure = None;
        while let Some(joined) = jobs.join_next().await {
            match joined_purge(joined) {
                Ok(purged) => total.add(purged),
                Err(error) => failure = failure.or(Some(error)),
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(total),
        }
    }
}
