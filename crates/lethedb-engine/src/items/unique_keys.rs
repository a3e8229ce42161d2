//! Unique keys of items: the claims an item version makes, who holds a claim, and keeping the
//! claims in step with the stored versions inside the writer, in the item's transaction.
//!
//! A claim is an index-table key (`keys::unique_claim_key`: the unique key, the logical
//! partition, the value of each of its paths) whose value names the item holding it. A write
//! looks up each claim of its new version and asks the item rules (`rules::decide_unique_claim`)
//! whether it may take it; storing the version writes the claims it takes, and removing a
//! version (a delete, a replace, a purge, a partition delete) removes its claims only where they
//! still name it, so a value an expired item held and a newer item took stays the newer one's.
//! A container without unique keys costs nothing here: no body is parsed. This module decides
//! no rule and knows no key layout (`keys.rs` does).

use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::items::rules::{decide_unique_claim, ClaimHolder};
use crate::keys;
use crate::records::ItemRecord;
use crate::ttl::expiry::record_is_expired;
use crate::writer::WriteContext;
use lethedb_query::canonical_key;
use lethedb_storage::{ReadTxn, Table};
use serde_json::Value;

/// The claims of a write's new version: all of them, and those it must store (the others
/// already name the key it is stored under).
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteClaims {
    pub(crate) all: Vec<Vec<u8>>,
    pub(crate) to_store: Vec<Vec<u8>>,
}

/// The claims a document makes in a logical partition: one per unique key of its container,
/// in the policy's order.
pub(crate) fn claims_of(
    container: &Container,
    partition_bytes: &[u8],
    document: &Value,
) -> Vec<Vec<u8>> {
    let number = container.key_number();
    let mut claims = Vec::with_capacity(container.unique_keys.keys().len());
    for (position, unique_key) in container.unique_keys.keys().iter().enumerate() {
        let values: Vec<Vec<u8>> = unique_key
            .paths
            .iter()
            .map(|path| value_key(document, path))
            .collect();
        // A policy holds at most `UNIQUE_KEYS_MAX` keys, so the position fits.
        let position = u16::try_from(position).unwrap_or(u16::MAX);
        claims.push(keys::unique_claim_key(
            number,
            position,
            partition_bytes,
            &values,
        ));
    }
    claims
}

/// The key of a document's value at `path`: equal exactly when the query language's equality
/// says equal (numbers by value, objects whatever their member order). A missing value, or a
/// path through something that is not an object, counts as `null`, as on the service.
fn value_key(document: &Value, path: &[String]) -> Vec<u8> {
    let mut node = Some(document);
    for name in path {
        node = node.and_then(|value| value.get(name.as_str()));
    }
    canonical_key(Some(node.unwrap_or(&Value::Null))).into_bytes()
}

/// The item key a claim names, if it is held.
pub(crate) fn holder_of(
    reader: &dyn ReadTxn,
    container_number: u64,
    claim: &[u8],
) -> EngineResult<Option<Vec<u8>>> {
    Ok(reader
        .get(Table::Index, claim)?
        .map(|suffix| keys::item_key_from_suffix(container_number, &suffix)))
}

/// Checks the claims of a write's new version, stored under `key` (`renamed` is the key of the
/// item a rename replaces, whose claims count as its own), and returns them: a claim another
/// visible item holds fails the write, before anything is written.
pub(crate) fn check_write(
    context: &WriteContext<'_>,
    container: &Container,
    partition_bytes: &[u8],
    document: &Value,
    key: &[u8],
    renamed: Option<&[u8]>,
) -> EngineResult<WriteClaims> {
    let all = claims_of(container, partition_bytes, document);
    let mut to_store = Vec::new();
    for claim in &all {
        let holder = holder_of(context.reader(), container.key_number(), claim)?;
        let state = match holder.as_deref() {
            None => ClaimHolder::Free,
            Some(held) if held == key || Some(held) == renamed => ClaimHolder::Free,
            Some(held) => holder_state(context, container, held)?,
        };
        decide_unique_claim(state)?;
        if holder.as_deref() != Some(key) {
            to_store.push(claim.clone());
        }
    }
    Ok(WriteClaims { all, to_store })
}

/// Whether another item holding a claim is visible, expired, or gone (a claim whose holder is
/// gone names nothing, and is free).
fn holder_state(
    context: &WriteContext<'_>,
    container: &Container,
    holder: &[u8],
) -> EngineResult<ClaimHolder> {
    let Some(bytes) = context.reader().get(Table::Items, holder)? else {
        return Ok(ClaimHolder::Free);
    };
    let record = ItemRecord::decode(&bytes).ok_or_else(|| corrupted("item"))?;
    if record_is_expired(container, &record, context.now_ms) {
        Ok(ClaimHolder::Expired)
    } else {
        Ok(ClaimHolder::Visible)
    }
}

/// Stores the claims a new version takes, naming the item stored under `item_key`.
pub(crate) fn store_claims(
    context: &mut WriteContext<'_>,
    claims: &[Vec<u8>],
    item_key: &[u8],
) -> EngineResult<()> {
    for claim in claims {
        context.put(Table::Index, claim, keys::item_key_suffix(item_key))?;
    }
    Ok(())
}

/// Removes the claims of a stored version (visible or expired) that still name it, except
/// those in `kept`: the claims of the version that replaces it under the same key.
pub(crate) fn release_claims(
    context: &mut WriteContext<'_>,
    container: &Container,
    item_key: &[u8],
    record: &ItemRecord,
    kept: &[Vec<u8>],
) -> EngineResult<()> {
    if container.unique_keys.is_empty() {
        return Ok(());
    }
    let document = record.document().ok_or_else(|| corrupted("item"))?;
    let partition_bytes = keys::partition_bytes(item_key).ok_or_else(|| corrupted("item key"))?;
    for claim in claims_of(container, partition_bytes, &document) {
        if kept.contains(&claim) {
            continue;
        }
        let holder = holder_of(context.reader(), container.key_number(), &claim)?;
        if holder.as_deref() == Some(item_key) {
            context.delete(Table::Index, &claim)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
