//! The writer jobs that log TTL events and trim change logs (`feed/ttl_events.rs` plans them
//! and says what each does): on a shared store, a container of several shards gets jobs that
//! each lock only their shards, one after another on each of the writer's lanes, so neither a
//! mass expiry's events nor an all-versions read ever takes the store's lock, and a write to
//! another partition waits at most for one small job of its own shard. Shards that only have
//! their marks moved get a job each, queued together: the writer groups them under the shard
//! locks free at once and leaves a busy shard's for later. Any other container gets one job for
//! all its shards.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::feed::change_log::retained_from_ms;
use crate::feed::ttl_events::{self, Plan, ShardPlan};
use crate::keys;
use crate::partitions::shards::Shard;
use crate::records::writer_container;
use crate::writer::WriteContext;
use lethedb_storage::{ReadTxn, Table};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The fewest events one job takes while its lane has more shards planned: a job of one
/// shard's few events would cost a transaction each.
const JOB_EVENTS_MIN: usize = 250;
/// The most shards one job locks, so a job of shards with few events never waits for many
/// writers at once.
const JOB_SHARDS_MAX: usize = 16;

/// Applies `plans` if `resolved` still names the container's shards; whether it did.
fn apply_all(
    context: &mut WriteContext<'_>,
    resolved: &Container,
    plans: &[ShardPlan],
) -> EngineResult<bool> {
    let container = writer_container(context, &resolved.database_id, &resolved.id)?;
    if !resolved.same_shards(&container) {
        return Ok(false);
    }
    for plan in plans {
        ttl_events::apply(context, &container, plan)?;
    }
    Ok(true)
}

/// Cuts planned shards into jobs, a chain per writer lane, as the sweeper cuts its purges.
fn chains_of(
    engine: &Engine,
    container: &Container,
    plans: Vec<ShardPlan>,
) -> Vec<Vec<Vec<ShardPlan>>> {
    let mut chains: BTreeMap<usize, Vec<Vec<ShardPlan>>> = BTreeMap::new();
    for plan in plans {
        let lane = engine
            .inner
            .writer
            .lane_of_shard(container.shard_lock(plan.shard));
        let chain = chains.entry(lane).or_default();
        match chain.last_mut() {
            Some(job)
                if job.len() < JOB_SHARDS_MAX
                    && job.iter().map(|plan| plan.events.len()).sum::<usize>() < JOB_EVENTS_MIN =>
            {
                job.push(plan);
            }
            _ => chain.push(vec![plan]),
        }
    }
    chains.into_values().collect()
}

impl Engine {
    /// Logs every TTL event due now in `scope` (shards of `container`) and trims their logs past
    /// retention, in as many plans as a mass expiry needs. With `level`, shards with nothing due
    /// have their marks moved too when they lag (the sweeper's loop asks for it, a read does
    /// not, so a read never waits for a shard it has nothing to log in). Returns whether it
    /// asked the writer for anything.
    pub(crate) async fn emit_due_ttl_events(
        &self,
        container: &Arc<Container>,
        scope: &[Shard],
        level: bool,
    ) -> EngineResult<bool> {
        let mut worked = false;
        loop {
            let plan = {
                let reader = self.inner.store.read()?;
                let now_ms = self.now_in(&*reader);
                self.plan_ttl_events(&*reader, container, scope, now_ms, level)?
            };
            if plan.shards.is_empty() {
                return Ok(worked);
            }
            worked = true;
            let applied = self.apply_ttl_plans(container, plan.shards).await?;
            // A container changed since it was resolved is left to the next call, with its new
            // definition.
            if !(applied && plan.more) {
                return Ok(worked);
            }
        }
    }

    /// What logging the TTL events due at `now_ms` in `scope` takes, read in `reader`.
    pub(crate) fn plan_ttl_events(
        &self,
        reader: &dyn ReadTxn,
        container: &Container,
        scope: &[Shard],
        now_ms: i64,
        level: bool,
    ) -> EngineResult<Plan> {
        let before_ms = retained_from_ms(container, now_ms, self.inner.change_log_retention_ms);
        ttl_events::plan(reader, container, scope, (now_ms, before_ms), level)
    }

    /// Runs the planned shards' jobs; whether every one found the container it was planned on.
    pub(crate) async fn apply_ttl_plans(
        &self,
        container: &Arc<Container>,
        plans: Vec<ShardPlan>,
    ) -> EngineResult<bool> {
        if !(self.inner.shard_writes && container.shards > 1) {
            let resolved = Arc::clone(container);
            return self
                .inner
                .writer
                .write(move |context| apply_all(context, &resolved, &plans))
                .await;
        }
        let mut chains = tokio::task::JoinSet::new();
        let (idle, busy): (Vec<ShardPlan>, Vec<ShardPlan>) =
            plans.into_iter().partition(ShardPlan::only_moves_marks);
        let singles = idle.into_iter().map(|plan| vec![vec![plan]]);
        for chain in chains_of(self, container, busy).into_iter().chain(singles) {
            let (engine, resolved) = (self.clone(), Arc::clone(container));
            chains.spawn(async move {
                let mut applied = true;
                for job in chain {
                    applied &= engine.apply_in_shards(&resolved, job).await?;
                }
                Ok::<bool, EngineError>(applied)
            });
        }
        let (mut applied, mut failure) = (true, None);
        while let Some(joined) = chains.join_next().await {
            match joined {
                Ok(Ok(done)) => applied &= done,
                Ok(Err(error)) => failure = failure.or(Some(error)),
                Err(failure) if failure.is_panic() => {
                    std::panic::resume_unwind(failure.into_panic())
                }
                Err(stopped) => {
                    failure = failure.or(Some(EngineError::with_message(
                        ErrorCode::WriterStopped,
                        format!("a TTL event job did not finish: {stopped}"),
                    )));
                }
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(applied),
        }
    }

    /// One job under the locks of its shards alone.
    async fn apply_in_shards(
        &self,
        container: &Arc<Container>,
        job: Vec<ShardPlan>,
    ) -> EngineResult<bool> {
        // Its shards' counters (and the marks they started from) come with the start.
        let mut reads: Vec<(Table, Vec<u8>)> = job
            .iter()
            .map(|plan| (Table::Counters, container.counters_key(plan.shard)))
            .collect();
        if job.iter().any(|plan| plan.legacy) {
            reads.push((
                Table::Counters,
                keys::change_state_key(container.key_number()),
            ));
        }
        let locks = job
            .iter()
            .map(|plan| container.shard_lock(plan.shard))
            .collect();
        let resolved = Arc::clone(container);
        self.inner
            .writer
            .write_in_shards(locks, reads, move |context| {
                apply_all(context, &resolved, &job)
            })
            .await
    }
}
