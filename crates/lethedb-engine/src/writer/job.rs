//! What the writer's lanes carry (`Job`, an operation on the store, the `Message` of either)
//! and how a group of jobs is shaped by the shards they write: which shard locks the group
//! needs, and which jobs wait for a later group because another process holds their shards.
//!
//! It runs no job and opens no transaction; `mod.rs` does. It only sends a job's answer
//! (`answer_once`), whichever of the job's two ways of answering runs last.

use super::context::ApplyJob;
use crate::error::{EngineError, EngineResult};
use lethedb_storage::{Storage, Table};
use std::sync::Mutex;

/// One queued mutation.
pub(super) struct Job {
    pub(super) apply: ApplyJob,
    /// Answers the request when `apply` never ran to its end (a panic, a poisoned engine); it
    /// shares the reply with `apply`, so the answer survives a panic inside `apply`.
    pub(super) abandon: Box<dyn FnOnce(EngineError) + Send>,
    /// Keys the operation will read, fetched for the whole group with its start (a hint: see
    /// [`lethedb_storage::Storage::write_reading`]).
    pub(super) prefetch: Vec<(Table, Vec<u8>)>,
    /// The lock keys of the shards the operation writes within (`Container::shard_lock`),
    /// when it writes nothing outside them; `None`: it may write anything.
    pub(super) shards: Option<Vec<u64>>,
}

/// An operation on the whole store (a snapshot taken or restored), run between groups with no
/// transaction open; it drops the catalog's cached definitions (the callback) before it
/// answers.
pub(super) type StoreJob = Box<dyn FnOnce(&dyn Storage, &dyn Fn()) + Send>;

/// What the writer thread receives.
pub(super) enum Message {
    Write(Job),
    Store(StoreJob),
}

/// The shard locks of a group whose jobs each write only within their shards (all of them);
/// `None` when a job may write anywhere, and the group takes the store-wide lock.
pub(super) fn group_shards(batch: &[Job]) -> Option<Vec<u64>> {
    batch.iter().try_fold(Vec::new(), |mut all, job| {
        all.extend(job.shards.as_ref()?);
        Some(all)
    })
}

/// Whether each job writes in one shard: then a group may take only the free shards, since
/// every shard it takes lets a job run, so a group always commits a job or waits, never spins.
pub(super) fn each_in_one_shard(batch: &[Job]) -> bool {
    batch
        .iter()
        .all(|job| job.shards.as_ref().is_some_and(|shards| shards.len() == 1))
}

/// Moves the jobs of `batch` that write in a shard outside `acquired` (sorted) to the end of
/// `deferred`, keeping the order of both.
pub(super) fn defer_unheld(batch: &mut Vec<Job>, deferred: &mut Vec<Job>, acquired: &[u64]) {
    let held = |job: &Job| {
        job.shards
            .iter()
            .flatten()
            .all(|shard| acquired.binary_search(shard).is_ok())
    };
    if batch.iter().all(held) {
        return;
    }
    let (kept, left): (Vec<Job>, Vec<Job>) = batch.drain(..).partition(held);
    *batch = kept;
    deferred.extend(left);
}

/// Sends a request's answer unless it was already sent.
pub(super) fn answer_once<T>(
    reply: &Mutex<Option<tokio::sync::oneshot::Sender<EngineResult<T>>>>,
    outcome: EngineResult<T>,
) {
    let sender = reply
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(sender) = sender {
        // The requester may have gone away; then nobody needs the answer.
        let _ = sender.send(outcome);
    }
}
