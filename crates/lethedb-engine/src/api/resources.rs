//! Doors for the generic catalog of child resources (users, permissions, stored procedures,
//! triggers, user-defined functions, conflicts): create, read, replace, upsert, delete, list,
//! find by `_rid`. `read_resource` is the non-blocking fast path (one point get); listings and
//! `_rid` lookups are scans under the scan bound.

use crate::catalog::kinds::{ParentLevel, ResourceKind, ResourceParent};
use crate::catalog::resource::{
    apply_create, apply_replace, delete_children, load_record, replacement_id,
};
use crate::catalog::shared::{body_id, body_object, id_with_rid};
use crate::engine::Engine;
use crate::error::{precondition_failed, resource_not_found, EngineResult};
use crate::{keys, rids};
use lethedb_storage::Table;
use serde_json::Value;

impl Engine {
    /// Creates a child resource under `parent`; fails with a conflict if its id is taken.
    pub async fn create_resource(
        &self,
        kind: ResourceKind,
        parent: ResourceParent,
        body: Value,
    ) -> EngineResult<Value> {
        parent.check(kind)?;
        let body = body_object(body)?;
        let id = body_id(&body)?;
        let body = self.checked_body(kind, body).await?;
        self.inner
            .writer
            .write(move |context| apply_create(context, kind, &parent, &id, body))
            .await
    }

    /// Reads one child resource.
    pub fn read_resource(
        &self,
        kind: ResourceKind,
        parent: &ResourceParent,
        id: &str,
    ) -> EngineResult<Value> {
        parent.check(kind)?;
        let reader = self.inner.store.read()?;
        load_record(&*reader, kind, &parent.ids(), id)?
            .map(|record| record.resource)
            .ok_or_else(resource_not_found)
    }

    /// Replaces a child resource's body; with a new id in the body where the kind allows it.
    pub async fn replace_resource(
        &self,
        kind: ResourceKind,
        parent: ResourceParent,
        id: &str,
        body: Value,
        if_match: Option<String>,
    ) -> EngineResult<Value> {
        parent.check(kind)?;
        let body = body_object(body)?;
        let new_id = replacement_id(kind, id, &body)?;
        let body = self.checked_body(kind, body).await?;
        let id = id.to_string();
        self.inner
            .writer
            .write(move |context| {
                apply_replace(
                    context,
                    kind,
                    &parent,
                    &id,
                    &new_id,
                    body,
                    if_match.as_deref(),
                )
            })
            .await
    }

    /// Creates or replaces a child resource by its body's id; says whether it was created.
    pub async fn upsert_resource(
        &self,
        kind: ResourceKind,
        parent: ResourceParent,
        body: Value,
    ) -> EngineResult<(Value, bool)> {
        parent.check(kind)?;
        let body = body_object(body)?;
        let id = body_id(&body)?;
        let body = self.checked_body(kind, body).await?;
        self.inner
            .writer
            .write(move |context| {
                let exists = load_record(context.reader(), kind, &parent.ids(), &id)?.is_some();
                if exists {
                    apply_replace(context, kind, &parent, &id, &id, body, None)
                        .map(|resource| (resource, false))
                } else {
                    apply_create(context, kind, &parent, &id, body).map(|resource| (resource, true))
                }
            })
            .await
    }

    /// Deletes a child resource and everything beneath it (a user's permissions).
    pub async fn delete_resource(
        &self,
        kind: ResourceKind,
        parent: ResourceParent,
        id: &str,
        if_match: Option<String>,
    ) -> EngineResult<()> {
        parent.check(kind)?;
        let id = id.to_string();
        self.inner
            .writer
            .write(move |context| {
                let parent_ids = parent.ids();
                let existing = load_record(context.reader(), kind, &parent_ids, &id)?
                    .ok_or_else(resource_not_found)?;
                if let Some(expected) = &if_match {
                    let etag = existing.resource.get("_etag").and_then(Value::as_str);
                    if expected != "*" && Some(expected.as_str()) != etag {
                        return Err(precondition_failed());
                    }
                }
                if kind == ResourceKind::User {
                    let mut own_ids = parent_ids.clone();
                    own_ids.push(&id);
                    delete_children(context, ParentLevel::User, &own_ids)?;
                }
                context.delete(
                    Table::Catalog,
                    &keys::resource_key(kind.key_marker(), &parent_ids, &id),
                )
            })
            .await
    }

    /// Every child resource of one kind under `parent`, as clients see them, for read feeds and
    /// queries (page them with [`Engine::query_resources`]). A parent without children has an
    /// empty list; a parent that does not exist is NotFound.
    pub async fn list_resources(
        &self,
        kind: ResourceKind,
        parent: &ResourceParent,
    ) -> EngineResult<Vec<Value>> {
        let parent = parent.clone();
        self.run_scan(move |engine| engine.list_resources_blocking(kind, &parent))
            .await
    }

    /// The id of the child resource of `kind` under `parent` whose `_rid` is `rid`, if any.
    pub async fn resource_id_by_rid(
        &self,
        kind: ResourceKind,
        parent: &ResourceParent,
        rid: &str,
    ) -> EngineResult<Option<String>> {
        // What cannot be a rid of this kind is answered without the hop to the scan pool.
        if !rids::has_length(rid, kind.rid_bytes()) {
            return Ok(None);
        }
        let (parent, rid) = (parent.clone(), rid.to_string());
        self.run_scan(move |engine| {
            Ok(id_with_rid(
                engine.list_resources_blocking(kind, &parent)?,
                &rid,
            ))
        })
        .await
    }
}
