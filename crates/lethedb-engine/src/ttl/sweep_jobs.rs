//! The sweeper's delete jobs: a chosen batch of expired entries handed to the writer, in one
//! job that may write anything (under the store's lock on a shared store), or, on a store
//! that commits shards side by side (PostgreSQL, fjall), in jobs that each lock only the
//! shards of their items, one after another on each of
//! the writer's lanes, so that a mass expiry holds back a write to another partition for at
//! most one small job of that partition's shard, and writes to other containers not at all,
//! on any process.
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
use crate::writer::Writer;
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
    /// Deletes the chosen entries: how many it deleted and the RUs it spent. On a store that
    /// commits shards side by side, a container of several shards whose writes stay in their shards is purged shard by
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
            self.inner.shard_writes && container.shards > 1 && container.writes_stay_in_shards();
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

    /// Deletes the chosen entries in jobs that each lock only the shards of their items
    /// (`Writer::write_in_shards`; [`plan_shard_jobs`] cuts them). Each of the writer's lanes
    /// gets a chain of jobs, one after another, and the lanes' chains run side by side: queued
    /// all at once, a lane would commit its jobs in one group holding every shard of the batch.
    /// A job that fails fails the turn, as the one job of [`Engine::expire_in_container`]
    /// would; the deletions already committed stand, since every one of them is final anyway.
    async fn expire_in_shards(
        &self,
        container: &Arc<Container>,
        candidates: Vec<(Vec<u8>, ExpiryEntry)>,
        pacer: &Pacer,
    ) -> EngineResult<Purged> {
        let mut chains = tokio::task::JoinSet::new();
        for chain in plan_shard_jobs(container, candidates, &self.inner.writer) {
            let (engine, resolved, pacer) = (self.clone(), Arc::clone(container), pacer.clone());
            chains.spawn(async move {
                let mut total = Purged::new(0, 0.0, Duration::ZERO);
                for job in chain {
                    total.add(engine.purge_shards(&resolved, job, &pacer).await?);
                }
                Ok(total)
            });
        }
        let mut total = Purged::new(0, 0.0, Duration::ZERO);
        let mut failure = None;
        while let Some(joined) = chains.join_next().await {
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

    /// Runs one job of [`plan_shard_jobs`] under its shards' locks alone.
    async fn purge_shards(
        &self,
        container: &Arc<Container>,
        job: ShardJob,
        pacer: &Pacer,
    ) -> EngineResult<Purged> {
        // Its items, its shards' counters (with their TTL-event marks) and the container-wide
        // marks an older store's shards start from, with the start.
        let mut reads = purge_reads(container, &job.candidates, &mut BTreeSet::new());
        for shard in &job.shards {
            reads.push((Table::Counters, container.counters_key(*shard)));
        }
        reads.push((
            Table::Counters,
            keys::change_state_key(container.key_number()),
        ));
        let locks = job.shards.iter().map(|shard| container.shard_lock(*shard));
        let (resolved, pacer) = (Arc::clone(container), pacer.clone());
        self.inner
            .writer
            .write_in_shards(locks.collect(), reads, move |context| {
                let applying = pacer.stopwatch();
                let (deleted, spent_ru) =
                    apply_expire_in_shards(context, &resolved, job.candidates)?;
                Ok(Purged::new(deleted, spent_ru, applying.elapsed()))
            })
            .await
    }
}

/// The fewest candidates one job of a purge within shards takes while its lane has more: a
/// job of one shard alone would often hold one or two items (a batch of 100 spread over 64
/// shards), and each job costs a transaction; one of about this size keeps the transaction's
/// fixed cost small beside its deletions and holds its shards for a few milliseconds.
const SHARD_JOB_ITEMS_MIN: usize = 250;

/// One purge job within shards: its shards, in order, and their candidates.
struct ShardJob {
    shards: Vec<Shard>,
    candidates: Vec<(Vec<u8>, ExpiryEntry)>,
}

/// Cuts a batch into jobs within shards, a chain per writer lane: the candidates grouped by
/// shard, each shard's group given to the lane its lock maps to, and a lane's shards taken in
/// order into jobs of at least [`SHARD_JOB_ITEMS_MIN`] candidates (its last job may be
/// smaller). A shard is never split between jobs.
fn plan_shard_jobs(
    container: &Container,
    candidates: Vec<(Vec<u8>, ExpiryEntry)>,
    writer: &Writer,
) -> Vec<Vec<ShardJob>> {
    let mut by_shard: BTreeMap<Shard, Vec<(Vec<u8>, ExpiryEntry)>> = BTreeMap::new();
    for candidate in candidates {
        if let Some((_, suffix)) = keys::split_expiry_key(&candidate.0) {
            let shard = container.shard_of_suffix(suffix);
            by_shard.entry(shard).or_default().push(candidate);
        }
    }
    let mut chains: BTreeMap<usize, Vec<ShardJob>> = BTreeMap::new();
    for (shard, group) in by_shard {
        let chain = chains
            .entry(writer.lane_of_shard(container.shard_lock(shard)))
            .or_default();
        match chain.last_mut() {
            Some(job) if job.candidates.len() < SHARD_JOB_ITEMS_MIN => {
                job.shards.push(shard);
                job.candidates.extend(group);
            }
            _ => chain.push(ShardJob {
                shards: vec![shard],
                candidates: group,
            }),
        }
    }
    chains.into_values().collect()
}
