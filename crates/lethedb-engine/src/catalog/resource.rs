//! The generic catalog of child resources: users and client encryption keys under a database,
//! permissions under a user, stored procedures, triggers, user-defined functions and conflicts
//! under a container.
//!
//! Every kind shares the same rules, written once here: the id rules, the system properties
//! (`_rid`, `_self`, `_etag`, `_ts`), conflicts on an id already taken, create, read, replace
//! (with a new id where the kind allows it), upsert, delete with everything beneath, listing for
//! read feeds and queries, and finding an id by `_rid`. A kind is described in `kinds.rs`;
//! adding one means adding a variant and its descriptor lines, not copying CRUD. Databases and
//! containers keep their own rules (numbers, TTL, throughput) in `mod.rs`. What a kind's body
//! means (a script's text, a permission's mode) is not decided here: a script's body is checked
//! by `script_body.rs` before it reaches the writer, on the blocking pool since it compiles.

use super::encryption_policy::{key_ids, unknown_key};
use super::kinds::{ParentLevel, ResourceKind, ResourceParent};
use super::script_body::check_script_body;
use super::shared::{body_id, list_records};
use crate::engine::Engine;
use crate::error::{
    conflict, container_not_found, corrupted, database_not_found, precondition_failed,
    resource_not_found, EngineError, EngineResult, ErrorCode,
};
use crate::keys;
use crate::records::{
    load_container, load_database, next_sequences, store_sequences, ResourceRecord,
    SYSTEM_PROPERTIES,
};
use crate::rids::{self, catalog_etag};
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::{json, Map, Value};
use std::ops::ControlFlow;

/// Deletes every child resource (and their children) of every parent at `level` whose ids
/// start with `parent_ids`: a database's users, its users' permissions and its containers'
/// children for `[database]` at the database level.
pub(crate) fn delete_children(
    context: &mut WriteContext<'_>,
    level: ParentLevel,
    parent_ids: &[&str],
) -> EngineResult<()> {
    let reaches = |kind: ResourceKind| match level {
        // A database's prefix reaches every kind: all keys start with the database id.
        ParentLevel::Database => true,
        ParentLevel::Container => kind.parent_level() == ParentLevel::Container,
        ParentLevel::User => kind.parent_level() == ParentLevel::User,
    };
    for kind in ResourceKind::ALL.into_iter().filter(|kind| reaches(*kind)) {
        let mut doomed = Vec::new();
        context.scan(
            Table::Catalog,
            &KeyRange::prefix(&keys::resource_prefix(kind.key_marker(), parent_ids)),
            &mut |key, _| {
                doomed.push(key.to_vec());
                ControlFlow::Continue(())
            },
        )?;
        for key in doomed {
            context.delete(Table::Catalog, &key)?;
        }
    }
    Ok(())
}

pub(crate) fn load_record(
    reader: &dyn ReadTxn,
    kind: ResourceKind,
    parent_ids: &[&str],
    id: &str,
) -> EngineResult<Option<ResourceRecord>> {
    match reader.get(
        Table::Catalog,
        &keys::resource_key(kind.key_marker(), parent_ids, id),
    )? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| corrupted("resource")),
    }
}

fn store_record(
    context: &mut WriteContext<'_>,
    kind: ResourceKind,
    parent_ids: &[&str],
    id: &str,
    record: &ResourceRecord,
) -> EngineResult<()> {
    let bytes = serde_json::to_vec(record).map_err(|_| corrupted("resource"))?;
    context.put(
        Table::Catalog,
        &keys::resource_key(kind.key_marker(), parent_ids, id),
        &bytes,
    )
}

/// Checks that every client encryption key a container's resource names in its client
/// encryption policy exists in its database, as the service checks when the container is
/// created.
pub(crate) fn check_encryption_keys_exist(
    reader: &dyn ReadTxn,
    database_id: &str,
    container_resource: &Value,
) -> EngineResult<()> {
    for id in key_ids(container_resource) {
        let kind = ResourceKind::ClientEncryptionKey;
        if load_record(reader, kind, &[database_id], id)?.is_none() {
            return Err(unknown_key(id));
        }
    }
    Ok(())
}

/// What a child takes from its parent: the parent's rid bytes and `_self` link.
struct ParentLinks {
    rid_bytes: Vec<u8>,
    self_link: String,
}

/// The parent's links, or NotFound if it does not exist.
fn parent_links(reader: &dyn ReadTxn, parent: &ResourceParent) -> EngineResult<ParentLinks> {
    let resource = match parent {
        ResourceParent::Database { database_id } => {
            load_database(reader, database_id)?
                .ok_or_else(database_not_found)?
                .resource
        }
        ResourceParent::Container {
            database_id,
            container_id,
        } => {
            load_container(reader, database_id, container_id)?
                .ok_or_else(container_not_found)?
                .resource
        }
        ResourceParent::User {
            database_id,
            user_id,
        } => {
            load_record(reader, ResourceKind::User, &[database_id], user_id)?
                .ok_or_else(resource_not_found)?
                .resource
        }
    };
    let text = |name: &str| resource.get(name).and_then(Value::as_str);
    let rid_bytes = text("_rid")
        .and_then(rids::decode_rid)
        .ok_or_else(|| corrupted("resource"))?;
    let self_link = text("_self")
        .ok_or_else(|| corrupted("resource"))?
        .to_string();
    Ok(ParentLinks {
        rid_bytes,
        self_link,
    })
}

/// The body as stored: the client's properties, minus any system property it sent, plus the
/// resource's own.
fn resource_value(
    kind: ResourceKind,
    mut body: Map<String, Value>,
    rid: &str,
    self_link: &str,
    etag: &str,
    now_ms: i64,
) -> Value {
    for name in SYSTEM_PROPERTIES {
        body.shift_remove(name);
    }
    body.insert("_rid".into(), json!(rid));
    body.insert("_self".into(), json!(self_link));
    body.insert("_etag".into(), json!(etag));
    body.insert("_ts".into(), json!(now_ms.div_euclid(1000)));
    for (name, link) in kind.links() {
        body.insert((*name).into(), json!(link));
    }
    Value::Object(body)
}

/// Creates a child inside the writer; the id must be free.
pub(crate) fn apply_create(
    context: &mut WriteContext<'_>,
    kind: ResourceKind,
    parent: &ResourceParent,
    id: &str,
    body: Map<String, Value>,
) -> EngineResult<Value> {
    let links = parent_links(context.reader(), parent)?;
    let parent_ids = parent.ids();
    if load_record(context.reader(), kind, &parent_ids, id)?.is_some() {
        return Err(conflict());
    }
    let mut sequences = next_sequences(context)?;
    let (number, rid) = if kind == ResourceKind::User {
        sequences.users += 1;
        let number = sequences.users;
        (u64::from(number), rids::user_rid(&links.rid_bytes, number))
    } else {
        sequences.resources += 1;
        let number = sequences.resources;
        let rid = rids::marked_child_rid(&links.rid_bytes, kind.rid_marker(), number);
        (number, rid)
    };
    let self_link = format!("{}{}/{rid}/", links.self_link, kind.path_segment());
    let resource = resource_value(
        kind,
        body,
        &rid,
        &self_link,
        &catalog_etag(number, context.now_ms),
        context.now_ms,
    );
    store_sequences(context, &sequences)?;
    let record = ResourceRecord { number, resource };
    store_record(context, kind, &parent_ids, id, &record)?;
    Ok(record.resource)
}

/// Replaces a child inside the writer, keeping its number, rid and `_self`; a new id moves it
/// (and its own children) to the new key.
pub(crate) fn apply_replace(
    context: &mut WriteContext<'_>,
    kind: ResourceKind,
    parent: &ResourceParent,
    id: &str,
    new_id: &str,
    body: Map<String, Value>,
    if_match: Option<&str>,
) -> EngineResult<Value> {
    let parent_ids = parent.ids();
    let existing =
        load_record(context.reader(), kind, &parent_ids, id)?.ok_or_else(resource_not_found)?;
    let text = |name: &str| {
        existing
            .resource
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if let Some(expected) = if_match {
        if expected != "*" && expected != text("_etag") {
            return Err(precondition_failed());
        }
    }
    if new_id != id {
        if load_record(context.reader(), kind, &parent_ids, new_id)?.is_some() {
            return Err(conflict());
        }
        move_children(context, kind, &parent_ids, id, new_id)?;
        context.delete(
            Table::Catalog,
            &keys::resource_key(kind.key_marker(), &parent_ids, id),
        )?;
    }
    let resource = resource_value(
        kind,
        body,
        &text("_rid"),
        &text("_self"),
        &catalog_etag(existing.number, context.now_ms),
        context.now_ms,
    );
    let record = ResourceRecord {
        number: existing.number,
        resource,
    };
    store_record(context, kind, &parent_ids, new_id, &record)?;
    Ok(record.resource)
}

/// Re-keys the children of a renamed resource under its new id (their rids and links do not
/// name the id, so only the keys change).
fn move_children(
    context: &mut WriteContext<'_>,
    kind: ResourceKind,
    parent_ids: &[&str],
    id: &str,
    new_id: &str,
) -> EngineResult<()> {
    for child_kind in kind.child_kinds() {
        let mut old_ids = parent_ids.to_vec();
        old_ids.push(id);
        let mut new_ids = parent_ids.to_vec();
        new_ids.push(new_id);
        let old_prefix = keys::resource_prefix(child_kind.key_marker(), &old_ids);
        let new_prefix = keys::resource_prefix(child_kind.key_marker(), &new_ids);
        let mut moving = Vec::new();
        context.scan(
            Table::Catalog,
            &KeyRange::prefix(&old_prefix),
            &mut |key, value| {
                moving.push((key.to_vec(), value.to_vec()));
                ControlFlow::Continue(())
            },
        )?;
        for (key, value) in moving {
            let mut moved = new_prefix.clone();
            moved.extend_from_slice(key.get(old_prefix.len()..).unwrap_or_default());
            context.delete(Table::Catalog, &key)?;
            context.put(Table::Catalog, &moved, &value)?;
        }
    }
    Ok(())
}

/// A replace's new id: the body's, which must be the addressed one unless the kind allows
/// renaming.
pub(crate) fn replacement_id(
    kind: ResourceKind,
    id: &str,
    body: &Map<String, Value>,
) -> EngineResult<String> {
    let new_id = body_id(body)?;
    if new_id != id && !kind.renames_allowed() {
        return Err(EngineError::new(ErrorCode::IdMismatch));
    }
    Ok(new_id)
}

impl Engine {
    /// The body, checked against its kind's body rules (after the id rules). A script's body
    /// is compiled, which is CPU work, so it is checked on the blocking pool.
    pub(crate) async fn checked_body(
        &self,
        kind: ResourceKind,
        body: Map<String, Value>,
    ) -> EngineResult<Map<String, Value>> {
        if !kind.is_script() {
            return Ok(body);
        }
        self.run_scan(move |_| check_script_body(kind, &body).map(|()| body))
            .await
    }

    /// Every child resource of one kind under `parent`, as clients see them, for read feeds and
    /// queries (page them with [`Engine::query_resources`]). A parent without children has an
    /// empty list; a parent that does not exist is NotFound.
    pub(crate) fn list_resources_blocking(
        &self,
        kind: ResourceKind,
        parent: &ResourceParent,
    ) -> EngineResult<Vec<Value>> {
        parent.check(kind)?;
        let reader = self.inner.store.read()?;
        parent_links(&*reader, parent)?;
        list_records(
            &*reader,
            &keys::resource_prefix(kind.key_marker(), &parent.ids()),
            "resource",
            |record: ResourceRecord| record.resource,
        )
    }
}
