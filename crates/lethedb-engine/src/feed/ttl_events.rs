//! TTL events, shard by shard. The service logs a TTL delete when it purges the item, which can
//! be long after it expired. Here an expired item's delete entry (`timeToLiveExpired`) is in
//! the log as soon as anyone could observe the item missing: before every all-versions read,
//! every few hundred milliseconds from the sweeper's loop, and before any write or purge that
//! removes an expired version.
//!
//! Each shard keeps its own marks (`Counters::feed`): per expiry-index class, the time below
//! which its entries' events are logged. Only a job under the shard's lock moves them, and
//! every event of a shard takes that shard's next LSN, so emitting never takes more than the
//! shards it emits for. The expiry index is one per container, ordered by time, so the events
//! are found by [`plan`] in a read snapshot, one scan for every shard, and logged by
//! [`apply`], one job per shard (or several shards). A job trusts its plan only when its
//! shard's LSN and marks are what the snapshot saw: every commit that adds or removes an
//! expiry entry of the shard above its marks takes a new LSN of the shard, so the plan's
//! entries are then exactly the shard's due ones; otherwise the job looks for them again. A
//! job that removes an expired version itself (a write over it, a partition delete, the
//! sweeper's purge) logs its event first unless the shard's mark is past it
//! ([`emit_ttl_event_of`]). The marks never move back (expiry is final, so the expiry bounds do
//! not), so each expiry is emitted once; a rewrite before the expiry instant moves the item's
//! index entry, so nothing is emitted for it.
//!
//! Which jobs run, on which locks, is `feed/ttl_jobs.rs`'s business.

use crate::container::Container;
use crate::counters::{read_counters, read_shard_counters, store_counters, Counters, FeedMarks};
use crate::error::EngineResult;
use crate::feed::change_log::{
    self, append, legacy_marks, read_state, retained_from_ms, trim_due, trim_shard, LogEntry,
    Operation,
};
use crate::keys::{self, ExpiryClass};
use crate::partitions::shards::Shard;
use crate::records::{ExpiryEntry, ItemRecord};
use crate::ttl::expiry::{expired_at_ms, expiry_placement};
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// The most TTL events one plan emits. A mass expiry is emitted over several plans, each
/// ending at a millisecond boundary, so no one job runs long (on a shared store it holds its
/// shards' writers on every process).
pub(crate) const TTL_EVENTS_PER_PLAN_MAX: usize = 2_000;

/// How many already-emitted expiry entries a plan may step over before it also moves the
/// marks of shards with nothing due (when asked to): a shard with nothing due lags behind the
/// others, and every plan scans from the lowest mark.
const IDLE_MARKS_SKIPPED_MAX: usize = 256;

/// What a job does in one shard: the snapshot it was planned from, the marks it moves, the
/// events it logs, and whether its log is due for trimming.
#[derive(Debug)]
pub(crate) struct ShardPlan {
    pub(crate) shard: Shard,
    seen_lsn: u64,
    seen_marks: FeedMarks,
    /// Per class (`ExpiryClass as usize`), the time its mark moves to.
    targets: [Option<i64>; 2],
    /// The shard's due expiry entries in the snapshot, in index order.
    pub(crate) events: Vec<(Vec<u8>, ExpiryEntry)>,
    trim: bool,
    /// Its marks were the container-wide ones of an older store (read again by the job).
    pub(crate) legacy: bool,
}

impl ShardPlan {
    /// Whether its job only moves the shard's marks: it logs and trims nothing.
    pub(crate) fn only_moves_marks(&self) -> bool {
        self.events.is_empty() && !self.trim
    }
}

/// The jobs one plan asks for, and whether more is due past it.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) shards: Vec<ShardPlan>,
    pub(crate) more: bool,
}

/// What a plan's scan found: how far each class got, how many entries were due, and how many
/// below their shard's marks it stepped over.
type Scanned = ([(ExpiryClass, Reached); 2], usize, usize);

/// How far a class's scan got.
#[derive(Clone, Copy)]
enum Reached {
    /// Not scanned: the plan's share was used up before it, or nothing is due in it.
    Untouched,
    /// Every due entry found, up to this bound.
    Bound(i64),
    /// Stopped before the first entry of this millisecond.
    Before(i64),
}

/// The mark of `class` in `marks`.
fn mark(marks: &FeedMarks, class: ExpiryClass) -> Option<i64> {
    match class {
        ExpiryClass::Own => marks.own_emitted_ms,
        ExpiryClass::Default => marks.default_emitted_ms,
    }
}

/// The mark of `class` in `marks`, to move.
fn mark_of(marks: &mut FeedMarks, class: ExpiryClass) -> &mut Option<i64> {
    match class {
        ExpiryClass::Own => &mut marks.own_emitted_ms,
        ExpiryClass::Default => &mut marks.default_emitted_ms,
    }
}

/// Each class with the bound below which its entries are expired at `now_ms`.
fn bounds(container: &Container, now_ms: i64) -> [(ExpiryClass, i64); 2] {
    [
        (ExpiryClass::Own, container.ttl.own_expiry_bound_ms(now_ms)),
        (
            ExpiryClass::Default,
            container.ttl.default_modified_bound_ms(now_ms),
        ),
    ]
}

/// Whether an entry at `time_ms` is above a shard's `mark` (not yet emitted).
fn above(mark: Option<i64>, time_ms: i64) -> bool {
    mark.is_none_or(|mark| time_ms >= mark)
}

/// Plans the TTL events due at `now_ms` in `scope` (shards of `container`, in order), and the
/// trimming of their logs past retention (`before_ms`): one scan of the expiry index from the
/// lowest mark in scope. With `level`, shards with nothing due get their marks moved too once
/// the scan stepped over many entries below other shards' marks.
pub(crate) fn plan(
    reader: &dyn ReadTxn,
    container: &Container,
    scope: &[Shard],
    (now_ms, before_ms): (i64, i64),
    level: bool,
) -> EngineResult<Plan> {
    let stored = read_shard_counters(reader, container)?;
    let legacy = match stored.iter().any(|(_, counters)| counters.feed.is_none()) {
        true => Some(read_state(reader, container.key_number())?),
        false => None,
    };
    let mut shards: BTreeMap<Shard, ShardPlan> = BTreeMap::new();
    for (shard, counters) in stored.into_iter().filter(|(s, _)| scope.contains(s)) {
        let seen_marks = match (counters.feed, &legacy) {
            (Some(marks), _) => marks,
            (None, Some(state)) => legacy_marks(state, shard),
            (None, None) => FeedMarks::default(),
        };
        let trim = trim_due(
            reader,
            container,
            (shard, seen_marks.trimmed_lsn),
            before_ms,
        )?;
        let plan = ShardPlan {
            shard,
            seen_lsn: counters.lsn,
            seen_marks,
            targets: [None; 2],
            events: Vec::new(),
            trim,
            legacy: counters.feed.is_none() && legacy.is_some(),
        };
        shards.insert(shard, plan);
    }
    let (reached, due, skipped) = scan_due(reader, container, now_ms, &mut shards)?;
    let level = level && skipped >= IDLE_MARKS_SKIPPED_MAX;
    let mut planned = Vec::new();
    for (_, mut shard) in shards {
        for (class, reached) in reached {
            let target = match reached {
                Reached::Untouched => continue,
                Reached::Bound(time_ms) | Reached::Before(time_ms) => time_ms,
            };
            if mark(&shard.seen_marks, class).is_none_or(|mark| mark < target) {
                shard.targets[class as usize] = Some(target);
            }
        }
        let moves = shard.targets.iter().any(Option::is_some);
        if !shard.events.is_empty() || shard.trim || (level && moves) {
            planned.push(shard);
        }
    }
    Ok(Plan {
        shards: planned,
        // A class stopped short, or one left untouched because the plan was full.
        more: due >= TTL_EVENTS_PER_PLAN_MAX,
    })
}

/// Scans each class's expired entries from the lowest mark in `shards`, adding each one above
/// its shard's mark to that shard's events, at most [`TTL_EVENTS_PER_PLAN_MAX`] (then up to a
/// millisecond boundary). Returns how far each class got, how many entries it found due and how
/// many below their shard's marks it stepped over.
fn scan_due(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
    shards: &mut BTreeMap<Shard, ShardPlan>,
) -> EngineResult<Scanned> {
    let number = container.key_number();
    let mut reached = [(ExpiryClass::Own, Reached::Untouched); 2];
    let (mut due, mut skipped) = (0usize, 0usize);
    for (slot, (class, bound)) in bounds(container, now_ms).into_iter().enumerate() {
        reached[slot].0 = class;
        let lowest = shards
            .values_mut()
            .map(|shard| mark(&shard.seen_marks, class))
            .filter(|mark| above(*mark, bound.saturating_sub(1)))
            .min();
        // No shard in scope has anything of this class due, or the plan is full.
        let Some(from) = lowest.filter(|_| bound != i64::MIN && due < TTL_EVENTS_PER_PLAN_MAX)
        else {
            continue;
        };
        let start = match from {
            Some(from) => keys::expiry_bound(number, class, from),
            None => keys::expiry_prefix(number, class),
        };
        let range = KeyRange::between(start, keys::expiry_bound(number, class, bound));
        let mut class_reached = Reached::Bound(bound);
        let mut last_ms = None;
        reader.scan(Table::Expiry, &range, &mut |key, value| {
            let Some((time_ms, suffix)) = keys::split_expiry_key(key) else {
                return ControlFlow::Continue(());
            };
            if due >= TTL_EVENTS_PER_PLAN_MAX && last_ms != Some(time_ms) {
                class_reached = Reached::Before(time_ms);
                return ControlFlow::Break(());
            }
            last_ms = Some(time_ms);
            let Some(shard) = shards.get_mut(&container.shard_of_suffix(suffix)) else {
                return ControlFlow::Continue(());
            };
            match ExpiryEntry::decode(value) {
                Some(entry) if above(mark(&shard.seen_marks, class), time_ms) => {
                    shard.events.push((key.to_vec(), entry));
                    due += 1;
                }
                _ => skipped += 1,
            }
            ControlFlow::Continue(())
        })?;
        reached[slot].1 = class_reached;
    }
    Ok((reached, due, skipped))
}

/// Logs one planned shard's TTL events under its lock, moves its marks and trims its log past
/// retention. Returns how many events it logged.
pub(crate) fn apply(
    context: &mut WriteContext<'_>,
    container: &Container,
    plan: &ShardPlan,
) -> EngineResult<u64> {
    let shard = plan.shard;
    let mut counters = read_counters(context.reader(), container, shard)?;
    let mut marks = change_log::shard_marks(context.reader(), container, shard, &counters)?;
    let fresh = counters.lsn == plan.seen_lsn && marks == plan.seen_marks;
    let found;
    let due = if fresh || plan.events.is_empty() {
        &plan.events
    } else {
        // The shard changed since the snapshot: its due entries are looked for again.
        found = due_again(context, container, shard, &marks, &plan.targets)?;
        &found
    };
    // A plan with no events for a shard that changed since moves no marks: it was only to
    // spare later plans a scan, and looking again could cost a scan of the whole backlog.
    let moves_marks = fresh || !plan.events.is_empty();
    let (lsn_before, marks_before) = (counters.lsn, marks);
    for (expiry_key, entry) in due {
        let Some((_, suffix)) = keys::split_expiry_key(expiry_key) else {
            continue;
        };
        counters.lsn += 1;
        let event = LogEntry {
            operation: Operation::Delete,
            ttl_expired: true,
            previous_lsn: entry.lsn,
            at_ms: expired_at_ms(container, expiry_key).unwrap_or(context.now_ms),
            item_suffix: suffix.to_vec(),
            record: None,
        };
        append(context, container.key_number(), counters.lsn, &event)?;
    }
    for class in [ExpiryClass::Own, ExpiryClass::Default]
        .into_iter()
        .filter(|_| moves_marks)
    {
        if let Some(target) = plan.targets[class as usize] {
            let moved = mark_of(&mut marks, class);
            if moved.is_none_or(|mark| mark < target) {
                *moved = Some(target);
            }
        }
    }
    if plan.trim {
        let before_ms = retained_from_ms(
            container,
            context.now_ms,
            context.change_log_retention_default_ms,
        );
        trim_shard(context, container, shard, &mut marks, before_ms)?;
    }
    if counters.lsn != lsn_before || marks != marks_before {
        counters.feed = Some(marks);
        store_counters(context, container, shard, &counters)?;
    }
    Ok(due.len() as u64)
}

/// The expiry entries of `shard` between its `marks` and the plan's `targets`, found under the
/// shard's lock (a scan of the container's index in that time span).
fn due_again(
    context: &mut WriteContext<'_>,
    container: &Container,
    shard: Shard,
    marks: &FeedMarks,
    targets: &[Option<i64>; 2],
) -> EngineResult<Vec<(Vec<u8>, ExpiryEntry)>> {
    let number = container.key_number();
    let mut due = Vec::new();
    for class in [ExpiryClass::Own, ExpiryClass::Default] {
        let Some(target) = targets[class as usize] else {
            continue;
        };
        let from = mark(marks, class);
        if from.is_some_and(|from| from >= target) {
            continue;
        }
        let start = match from {
            Some(from) => keys::expiry_bound(number, class, from),
            None => keys::expiry_prefix(number, class),
        };
        let range = KeyRange::between(start, keys::expiry_bound(number, class, target));
        context.scan(Table::Expiry, &range, &mut |key, value| {
            let ours = keys::split_expiry_key(key)
                .is_some_and(|(_, suffix)| container.shard_of_suffix(suffix) == shard);
            if let Some(entry) = ExpiryEntry::decode(value).filter(|_| ours) {
                due.push((key.to_vec(), entry));
            }
            ControlFlow::Continue(())
        })?;
    }
    Ok(due)
}

/// Logs the TTL delete event of one expired version that a job is about to remove, unless its
/// shard's mark is past it (its event is logged): what [`apply`] would log for it, under the
/// next LSN of its shard (`counters`, the shard's, read in this transaction). The version's
/// expiry-index entry goes with it, so no plan logs it again. It reads and writes nothing
/// outside the version's shard but, for a store written before per-shard marks, the
/// container-wide marks its shard started from.
pub(crate) fn emit_ttl_event_of(
    context: &mut WriteContext<'_>,
    container: &Container,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
) -> EngineResult<()> {
    let Some((class, time_ms)) = expiry_placement(record.last_modified_ms, record.ttl) else {
        return Ok(());
    };
    let shard = container.shard_of_key(item_key);
    let marks = change_log::shard_marks(context.reader(), container, shard, counters)?;
    if !above(mark(&marks, class), time_ms) {
        return Ok(());
    }
    let suffix = keys::item_key_suffix(item_key);
    let expiry_key = keys::expiry_key(container.key_number(), class, time_ms, suffix);
    counters.lsn += 1;
    let event = LogEntry {
        operation: Operation::Delete,
        ttl_expired: true,
        previous_lsn: record.lsn,
        at_ms: expired_at_ms(container, &expiry_key).unwrap_or(context.now_ms),
        item_suffix: suffix.to_vec(),
        record: None,
    };
    append(context, container.key_number(), counters.lsn, &event)
}

#[cfg(test)]
mod tests;
