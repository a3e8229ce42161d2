//! What an expired item is, where a version sits in the expiry index, and how the index is read.
//!
//! [`is_expired`] is the one test every read and write path asks, so an expired item is absent
//! whether or not the sweeper has deleted it yet. The expiry index has two classes (an item's own
//! `ttl` keyed by its expiry instant, the container default keyed by last modification); this
//! module knows which part of each class has expired at an instant and visits it oldest first.
//! It writes nothing: items.rs keeps the index in step with the items, and the sweeper decides
//! when to delete what this module finds.
//!
//! It also answers what a person watching a container wants to know about time to live
//! ([`TtlOverview`]): how many items expire within the next minute, hour and day, how many have
//! expired and wait for the sweeper, and how many a proposed `defaultTtl` would expire at once.
//! Each figure is a range count over the index (never a read of the items), capped at
//! [`TTL_COUNT_ENTRIES_MAX`] entries so a request does bounded work on any container.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::EngineResult;
use crate::keys::{self, ExpiryClass};
use crate::records::{ExpiryEntry, ItemRecord};
use crate::ttl::{self, ItemTtl, TtlState};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::ops::{Bound, ControlFlow};

/// Whether a stored version (known by its header) is expired at `now_ms` under the container's
/// current setting.
pub(crate) fn is_expired(
    container: &Container,
    last_modified_ms: i64,
    ttl: ItemTtl,
    now_ms: i64,
) -> bool {
    container.ttl.is_expired(last_modified_ms, ttl, now_ms)
}

/// Whether a stored version is expired at `now_ms`; [`is_expired`] for a decoded record.
pub(crate) fn record_is_expired(container: &Container, record: &ItemRecord, now_ms: i64) -> bool {
    is_expired(container, record.last_modified_ms, record.ttl, now_ms)
}

/// Where a version sits in the expiry index, if anywhere.
pub(crate) fn expiry_placement(last_modified_ms: i64, ttl: ItemTtl) -> Option<(ExpiryClass, i64)> {
    match ttl {
        ItemTtl::Never => None,
        ItemTtl::Secs(secs) => Some((
            ExpiryClass::Own,
            ttl::expiry_instant_ms(last_modified_ms, secs),
        )),
        ItemTtl::Inherit => Some((ExpiryClass::Default, last_modified_ms)),
    }
}

/// The expired part of each class of a container's index at `now_ms`: everything before the
/// class's bound. A class with nothing expired is left out.
fn expired_ranges(container: &Container, now_ms: i64) -> Vec<KeyRange> {
    let number = container.key_number();
    let bounds = [
        (ExpiryClass::Own, container.ttl.own_expiry_bound_ms(now_ms)),
        (
            ExpiryClass::Default,
            container.ttl.default_modified_bound_ms(now_ms),
        ),
    ];
    bounds
        .into_iter()
        .filter(|(_, bound_ms)| *bound_ms != i64::MIN)
        .map(|(class, bound_ms)| {
            KeyRange::between(
                keys::expiry_prefix(number, class),
                keys::expiry_bound(number, class, bound_ms),
            )
        })
        .collect()
}

/// Visits the expired entries of a container's expiry index, oldest first within each class.
pub(crate) fn visit_expired(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
    visit: &mut dyn FnMut(&[u8], ExpiryEntry) -> ControlFlow<()>,
) -> EngineResult<()> {
    visit_expired_after(reader, container, now_ms, &[], visit)
}

/// [`visit_expired`] from past `after`, the last key the sweeper chose in each class: what
/// lies before it was chosen and deleted already (`ttl/sweeper.rs`), and on a store that keeps
/// a deleted key's tombstone until it compacts, walking them again is what made each batch
/// slower than the one before.
pub(crate) fn visit_expired_after(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
    after: &[Vec<u8>],
    visit: &mut dyn FnMut(&[u8], ExpiryEntry) -> ControlFlow<()>,
) -> EngineResult<()> {
    let mut stopped = false;
    for range in expired_ranges_after(container, now_ms, after) {
        if stopped {
            break;
        }
        reader.scan(Table::Expiry, &range, &mut |key, value| {
            let flow = match ExpiryEntry::decode(value) {
                Some(entry) => visit(key, entry),
                None => ControlFlow::Continue(()),
            };
            stopped = flow.is_break();
            flow
        })?;
    }
    Ok(())
}

/// The expired part of each class, begun just after that class's key in `after`, if any; a
/// class whose key lies at or past its expired part's end has nothing after it.
fn expired_ranges_after(container: &Container, now_ms: i64, after: &[Vec<u8>]) -> Vec<KeyRange> {
    expired_ranges(container, now_ms)
        .into_iter()
        .filter_map(|mut range| {
            let Bound::Included(class_prefix) = &range.start else {
                return Some(range);
            };
            let Some(cursor) = after.iter().find(|key| key.starts_with(class_prefix)) else {
                return Some(range);
            };
            if matches!(&range.end, Bound::Excluded(end) if cursor >= end) {
                return None;
            }
            range.start = Bound::Excluded(cursor.clone());
            Some(range)
        })
        .collect()
}

/// When the oldest not-yet-deleted expired item of a container expired: the first entry of
/// each class of the index is that class's oldest.
pub(crate) fn oldest_expired(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
) -> EngineResult<Option<i64>> {
    oldest_expired_after(reader, container, now_ms, &[])
}

/// [`oldest_expired`] past `after`, as [`visit_expired_after`] walks.
pub(crate) fn oldest_expired_after(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
    after: &[Vec<u8>],
) -> EngineResult<Option<i64>> {
    let mut oldest: Option<i64> = None;
    for range in expired_ranges_after(container, now_ms, after) {
        reader.scan(Table::Expiry, &range, &mut |key, _| {
            if let Some(at) = expired_at_ms(container, key) {
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
            }
            ControlFlow::Break(())
        })?;
    }
    Ok(oldest)
}

/// The instant an entry expired: own-ttl entries hold it; default entries hold the last
/// modification, to which the current default adds.
pub(crate) fn expired_at_ms(container: &Container, key: &[u8]) -> Option<i64> {
    let (time_ms, _) = keys::split_expiry_key(key)?;
    match keys::expiry_class_of(key) {
        Some(ExpiryClass::Own) => Some(time_ms),
        _ => match container.ttl.default_ttl_secs {
            Some(secs) if secs > 0 => Some(time_ms.saturating_add(secs.saturating_mul(1000))),
            // Expired under an earlier setting: at the latest when that setting ended.
            _ => Some(container.ttl.default_modified_before_ms),
        },
    }
}

/// The most index entries one count of a [`TtlOverview`] walks; a count that reaches it is a
/// lower bound, and the overview says so (`complete: false`).
pub const TTL_COUNT_ENTRIES_MAX: u64 = 100_000;

/// The windows of the "expiring soon" histogram, in milliseconds: a minute, an hour, a day.
pub const TTL_HISTOGRAM_WINDOWS_MS: [i64; 3] = [60_000, 3_600_000, 86_400_000];

/// How many items of a container expire within each of [`TTL_HISTOGRAM_WINDOWS_MS`] from now
/// (cumulative: the hour includes the minute).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpiringCounts {
    pub next_minute: u64,
    pub next_hour: u64,
    pub next_day: u64,
}

/// What a proposed `defaultTtl` would do if it were saved now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtlPreview {
    /// The proposed setting (`None`: off, `Some(-1)`: on without a default, `Some(n)`).
    pub default_ttl_secs: Option<i64>,
    /// Items visible now that would be expired the instant the change is saved.
    pub expire_at_once: u64,
    /// The histogram under the proposed setting.
    pub expiring: ExpiringCounts,
}

/// A container's time to live as the server sees it at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct TtlOverview {
    /// The engine clock when the figures were taken.
    pub now_ms: i64,
    pub default_ttl_secs: Option<i64>,
    pub expiring: ExpiringCounts,
    /// Items expired (invisible) but not yet deleted by the sweeper, counted now.
    pub expired_unswept: u64,
    /// How long ago the oldest of them expired (0 if there is none).
    pub oldest_expired_age_ms: i64,
    /// Items the sweeper deleted from this container since start-up.
    pub deleted_total: u64,
    /// The sweeper's recent deletion rate on this container.
    pub deletions_per_sec: f64,
    /// Whether every count is exact (false: one reached [`TTL_COUNT_ENTRIES_MAX`]).
    pub complete: bool,
    pub preview: Option<TtlPreview>,
}

/// Counts the index entries of one class whose time lies in `[from_ms, to_ms)`, up to
/// [`TTL_COUNT_ENTRIES_MAX`]; `None` for the class's start. Returns the count and whether it
/// is exact.
fn count_class(
    reader: &dyn ReadTxn,
    number: u64,
    class: ExpiryClass,
    from_ms: Option<i64>,
    to_ms: i64,
) -> EngineResult<(u64, bool)> {
    if to_ms == i64::MIN || from_ms.is_some_and(|from| from >= to_ms) {
        return Ok((0, true));
    }
    let start = match from_ms {
        Some(from) => keys::expiry_bound(number, class, from),
        None => keys::expiry_prefix(number, class),
    };
    let range = KeyRange::between(start, keys::expiry_bound(number, class, to_ms));
    let mut counted = 0u64;
    let mut complete = true;
    reader.scan(Table::Expiry, &range, &mut |_, _| {
        counted += 1;
        if counted >= TTL_COUNT_ENTRIES_MAX {
            complete = false;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    Ok((counted, complete))
}

/// A class's bound at an instant under a setting: entries below it are expired then.
fn class_bound_ms(state: &TtlState, class: ExpiryClass, at_ms: i64) -> i64 {
    match class {
        ExpiryClass::Own => state.own_expiry_bound_ms(at_ms),
        ExpiryClass::Default => state.default_modified_bound_ms(at_ms),
    }
}

const CLASSES: [ExpiryClass; 2] = [ExpiryClass::Own, ExpiryClass::Default];

/// Items not expired at `now_ms` that expire within each histogram window under `state`.
fn expiring_counts(
    reader: &dyn ReadTxn,
    number: u64,
    state: &TtlState,
    now_ms: i64,
) -> EngineResult<(ExpiringCounts, bool)> {
    let mut totals = [0u64; 3];
    let mut complete = true;
    for class in CLASSES {
        let from = class_bound_ms(state, class, now_ms);
        for (total, window_ms) in totals.iter_mut().zip(TTL_HISTOGRAM_WINDOWS_MS) {
            let to = class_bound_ms(state, class, now_ms.saturating_add(window_ms));
            let (count, exact) = count_class(reader, number, class, Some(from), to)?;
            *total += count;
            complete &= exact;
        }
    }
    let [next_minute, next_hour, next_day] = totals;
    Ok((
        ExpiringCounts {
            next_minute,
            next_hour,
            next_day,
        },
        complete,
    ))
}

impl Engine {
    /// The figures of [`TtlOverview`] for a container, from its expiry index and the sweeper's
    /// statistics; `proposed` asks for a preview of another `defaultTtl` as well.
    pub(crate) fn ttl_overview_blocking(
        &self,
        container: &Container,
        proposed: Option<Option<i64>>,
    ) -> EngineResult<TtlOverview> {
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let reader = &*reader;
        let number = container.key_number();
        let current = container.ttl;
        let (expiring, mut complete) = expiring_counts(reader, number, &current, now_ms)?;
        let mut expired_unswept = 0;
        for class in CLASSES {
            let bound = class_bound_ms(&current, class, now_ms);
            let (count, exact) = count_class(reader, number, class, None, bound)?;
            expired_unswept += count;
            complete &= exact;
        }
        let oldest_expired_age_ms = oldest_expired(reader, container, now_ms)?
            .map_or(0, |at| now_ms.saturating_sub(at).max(0));
        let preview = match proposed {
            None => None,
            Some(default_ttl_secs) => {
                // The state the change would leave, exactly as saving it would fold it.
                let changed = current.changed(default_ttl_secs, now_ms);
                let mut expire_at_once = 0;
                for class in CLASSES {
                    let from = class_bound_ms(&current, class, now_ms);
                    let to = class_bound_ms(&changed, class, now_ms);
                    let (count, exact) = count_class(reader, number, class, Some(from), to)?;
                    expire_at_once += count;
                    complete &= exact;
                }
                let (expiring, exact) = expiring_counts(reader, number, &changed, now_ms)?;
                complete &= exact;
                Some(TtlPreview {
                    default_ttl_secs,
                    expire_at_once,
                    expiring,
                })
            }
        };
        let (deleted_total, deletions_per_sec) =
            self.inner.sweep_stats.deletions(container.number, now_ms);
        Ok(TtlOverview {
            now_ms,
            default_ttl_secs: current.default_ttl_secs,
            expiring,
            expired_unswept,
            oldest_expired_age_ms,
            deleted_total,
            deletions_per_sec,
            complete,
            preview,
        })
    }
}
