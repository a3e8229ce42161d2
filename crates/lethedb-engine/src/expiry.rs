//! What an expired item is, where a version sits in the expiry index, and how the index is read.
//!
//! [`is_expired`] is the one test every read and write path asks, so an expired item is absent
//! whether or not the sweeper has deleted it yet. The expiry index has two classes (an item's own
//! `ttl` keyed by its expiry instant, the container default keyed by last modification); this
//! module knows which part of each class has expired at an instant and visits it oldest first.
//! It writes nothing: items.rs keeps the index in step with the items, and the sweeper decides
//! when to delete what this module finds.

use crate::container::Container;
use crate::error::EngineResult;
use crate::keys::{self, ExpiryClass};
use crate::records::{ExpiryEntry, ItemRecord};
use crate::ttl::{self, ItemTtl};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::ops::ControlFlow;

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
    let mut stopped = false;
    for range in expired_ranges(container, now_ms) {
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

/// When the oldest not-yet-deleted expired item of a container expired: the first entry of
/// each class of the index is that class's oldest.
pub(crate) fn oldest_expired(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
) -> EngineResult<Option<i64>> {
    let mut oldest: Option<i64> = None;
    for range in expired_ranges(container, now_ms) {
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
