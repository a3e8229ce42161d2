//! The write rules of one item, decided once for every writer: requests, batches and bulk,
//! patches, and the writes of stored procedures and triggers (in their view, and again at their
//! commit). Pure functions: given a body, its container, and the visible version(s) a write
//! meets, they decide whether the write goes ahead and what it is (a create or a replace), or
//! which failure it is. They read and write nothing: `items/mod.rs` (inside the writer) and
//! `scripts/view.rs` (over a snapshot) find the versions and apply what was decided.
//!
//! The order of the checks is part of the rules. A body is checked first: its shape, id, system
//! properties and size (`prepare_body`), then against its container, its `ttl` and partition
//! key. Then the state: a create finds its id free (409); a replace finds the item its URL names
//! (404), then meets its If-Match condition (412), and only then may a rename find its new id
//! taken (409). The service applies a replace that way too: the condition is a precondition on
//! the item the URL names, checked before the write that would collide with the other id. Last,
//! the new version's unique key values must be free in its logical partition (409).

use crate::container::Container;
use crate::error::{item_conflict, item_not_found, precondition_failed};
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::limits::{validate_item_id, ITEM_BYTES_MAX};
use crate::partitions::partition_key::{PartitionKeyValue, PARTITION_KEY_BYTES_MAX};
use crate::records::SYSTEM_PROPERTIES;
use crate::{rids, ttl};
use serde_json::{Map, Value};

/// How a write treats an existing item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Fails with a conflict if the item exists.
    Create,
    /// Creates or replaces.
    Upsert,
    /// Replaces the item with this id (the URL's); fails if it does not exist. A body with
    /// another id renames the item, unless an item of that id exists (conflict).
    Replace(String),
}

/// A body that passed the body rules, ready to store.
#[derive(Clone, Debug)]
pub(crate) struct Body {
    pub(crate) id: String,
    /// The document without system properties.
    pub(crate) document: Value,
    /// The document as compact JSON, within the item size limit.
    pub(crate) bytes: Vec<u8>,
}

/// A visible version of an item, as the rules see it: how its ETag is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version<'a> {
    /// A committed version: its ETag follows from the container and the version's LSN, and is
    /// formed only when a condition names one (every write would otherwise pay for it).
    Stored { container_number: u64, lsn: u64 },
    /// A version as a script was shown it: the `_etag` it carries (provisional for the
    /// script's own writes).
    Shown(&'a str),
}

impl Version<'_> {
    /// The version a script sees in `document`.
    pub(crate) fn shown(document: &Value) -> Version<'_> {
        Version::Shown(
            document
                .get("_etag")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )
    }

    /// Whether an If-Match value holds for this version: `*` holds for any version.
    fn meets(&self, expected: &str) -> bool {
        if expected == "*" {
            return true;
        }
        match *self {
            Version::Stored {
                container_number,
                lsn,
            } => rids::etag(container_number, lsn) == expected,
            Version::Shown(etag) => etag == expected,
        }
    }
}

/// What a write that the rules allow does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// It creates the item (201).
    Create,
    /// It replaces a visible version (200), which the new one succeeds: same `_rid`.
    Replace,
}

/// Validates and normalises a body for storage: an object with a valid id, no system
/// properties, within the size limit.
pub(crate) fn prepare_body(body: Value) -> EngineResult<Body> {
    let Value::Object(mut map) = body else {
        return Err(EngineError::new(ErrorCode::InvalidDocument));
    };
    let id = body_id(&map)?;
    validate_item_id(&id)?;
    for name in SYSTEM_PROPERTIES {
        map.shift_remove(name);
    }
    let document = Value::Object(map);
    let bytes = lethedb_query::to_json_vec(&document);
    if bytes.len() > ITEM_BYTES_MAX {
        return Err(EngineError::new(ErrorCode::ItemTooLarge));
    }
    Ok(Body {
        id,
        document,
        bytes,
    })
}

/// A body's `id`, which must be a string (the service's messages).
fn body_id(map: &Map<String, Value>) -> EngineResult<String> {
    match map.get("id") {
        Some(Value::String(id)) => Ok(id.clone()),
        Some(_) => Err(EngineError::with_message(
            ErrorCode::InvalidDocument,
            "The input content is invalid because the required properties - 'id' - must be a string.",
        )),
        None => Err(EngineError::with_message(
            ErrorCode::InvalidDocument,
            "The input content is invalid because the required properties - 'id; ' - are missing",
        )),
    }
}

/// The body rules that depend on the container: a `ttl` it accepts (checked only while TTL is
/// on). Returns the partition key the document holds.
pub(crate) fn document_partition_key(
    container: &Container,
    document: &Value,
) -> EngineResult<PartitionKeyValue> {
    ttl::validate_item_ttl(document, container.ttl.is_on())?;
    Ok(container.partition_key.extract(document))
}

/// A request's partition key (its header), when sent, must be whole and name the document's.
pub(crate) fn check_sent_partition_key(
    container: &Container,
    sent: Option<PartitionKeyValue>,
    document_key: &PartitionKeyValue,
) -> EngineResult<()> {
    let Some(sent) = sent else {
        return Ok(());
    };
    let sent = container.partition_key.require_full(sent)?;
    if sent.encode() != document_key.encode() {
        return Err(EngineError::with_message(
            ErrorCode::PartitionKeyMismatch,
            "PartitionKey extracted from document doesn't match the one specified in the header.",
        ));
    }
    Ok(())
}

/// A written item's partition key, in its stored form, must be within the size limit.
pub(crate) fn check_partition_key_size(encoded: &[u8]) -> EngineResult<()> {
    if encoded.len() > PARTITION_KEY_BYTES_MAX {
        return Err(EngineError::with_message(
            ErrorCode::InvalidPartitionKey,
            "The partition key value is too large.",
        ));
    }
    Ok(())
}

/// Decides a create, upsert or replace against what it meets. `current` is the visible version
/// the write would replace: the item of the body's id, or for a replace the item its URL
/// names. `target_taken` says, for a replace that renames (its body names another id than its
/// URL), whether an item of the body's id is visible; it is false otherwise.
///
/// A create ignores an If-Match condition; an upsert that finds nothing creates the item,
/// condition or not (the service's upsert: replace semantics when the item exists, create when
/// not); a replace checks the condition against the item its URL names.
pub(crate) fn decide_write(
    mode: &WriteMode,
    if_match: Option<&str>,
    current: Option<Version<'_>>,
    target_taken: bool,
) -> EngineResult<Effect> {
    match (mode, current) {
        (WriteMode::Create, Some(_)) => Err(item_conflict()),
        (WriteMode::Create | WriteMode::Upsert, None) => Ok(Effect::Create),
        (WriteMode::Upsert, Some(version)) => {
            check_condition(if_match, version)?;
            Ok(Effect::Replace)
        }
        (WriteMode::Replace(_), current) => {
            decide_existing(if_match, current.map(|version| (version, ())))?;
            if target_taken {
                return Err(item_conflict());
            }
            Ok(Effect::Replace)
        }
    }
}

/// Decides a write on an item that must exist: a delete, or a patch (which replaces the item
/// its URL names by a patched copy with the same id, decided as [`decide_write`] decides such a
/// replace, before the patch's own condition and operations apply). The item is visible (404),
/// then it meets the If-Match condition (412). `current` pairs the visible version with what the
/// caller keeps of it, which it gets back.
pub(crate) fn decide_existing<T>(
    if_match: Option<&str>,
    current: Option<(Version<'_>, T)>,
) -> EngineResult<T> {
    let (version, kept) = current.ok_or_else(item_not_found)?;
    check_condition(if_match, version)?;
    Ok(kept)
}

/// Who holds a unique key value that a write claims, as the write finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClaimHolder {
    /// Nobody, or the very item the write replaces (under its id or the one it renames).
    Free,
    /// Another item, visible.
    Visible,
    /// Another item that has expired and is not yet purged.
    Expired,
}

/// Decides one unique key claim of a write: the values of a unique key's paths in one logical
/// partition, a missing value counting as `null` (the service does not support sparse unique
/// keys). A claim another visible item holds refuses the write with the service's 409, whose
/// body is an id conflict's. A value freed by a delete, a replace or an expiry is free at once:
/// an item past its expiry instant holds nothing, purged or not.
pub(crate) fn decide_unique_claim(holder: ClaimHolder) -> EngineResult<()> {
    match holder {
        ClaimHolder::Visible => Err(item_conflict()),
        ClaimHolder::Free | ClaimHolder::Expired => Ok(()),
    }
}

/// An If-Match condition, when given, must hold for the version met.
fn check_condition(if_match: Option<&str>, version: Version<'_>) -> EngineResult<()> {
    match if_match {
        Some(expected) if !version.meets(expected) => Err(precondition_failed()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
