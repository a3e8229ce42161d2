//! Paths addressed by resource ids (`dbs/{rid}/colls/{rid}/docs/{rid}`,
//! `dbs/{rid}/users/{rid}/permissions/{rid}`, `dbs/{rid}/clientencryptionkeys/{rid}`,
//! `dbs/{rid}/colls/{rid}/sprocs/{rid}` and the container's other children, as clients build
//! them from `_self`) turned into
//! paths addressed by ids, which is what the engine and the handlers take.
//!
//! Resolution reads the catalog, so it runs only after the request is authenticated: a caller
//! without the key must not learn which resource ids exist. The catalog lookups are the
//! engine's async doors (scans under its bound), so no request worker walks the catalog.

use crate::error::{ApiError, ApiResult, Code};
use crate::routes::ResourcePath;
use lethedb_engine::{Engine, ErrorCode, ResourceKind, ResourceParent};

/// Rewrites `path` in place. A path is taken as id-addressed only when its database segment is
/// a database's `_rid`; then an unknown container or item rid is a 404.
pub async fn resolve_resource_ids(engine: &Engine, path: &mut ResourcePath) -> ApiResult<()> {
    let types: Vec<String> = path.shape().0.into_iter().map(str::to_string).collect();
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    if types.first() != Some(&"dbs") || path.segments.len() < 2 {
        return Ok(());
    }
    let Some(database_id) = engine.database_id_by_rid(path.id(0)).await? else {
        return Ok(());
    };
    path.set_id(0, database_id.clone());
    if types.get(1) == Some(&"users") && path.segments.len() >= 4 {
        return resolve_user_ids(engine, path, database_id, &types).await;
    }
    let keys = ResourceKind::ClientEncryptionKey;
    if types.get(1) == Some(&keys.path_segment()) && path.segments.len() >= 4 {
        let parent = ResourceParent::Database { database_id };
        let key_id = engine
            .resource_id_by_rid(keys, &parent, path.id(1))
            .await?
            .ok_or_else(|| ApiError::from_code(Code::Engine(ErrorCode::ResourceNotFound)))?;
        path.set_id(1, key_id);
        return Ok(());
    }
    if types.get(1) == Some(&"colls") && path.segments.len() >= 4 {
        let container_id = engine
            .container_id_by_rid(&database_id, path.id(1))
            .await?
            .ok_or_else(|| ApiError::from_code(Code::Engine(ErrorCode::ContainerNotFound)))?;
        path.set_id(1, container_id.clone());
        if types.get(2) == Some(&"docs") && path.segments.len() >= 6 {
            let container = engine.read_container(&database_id, &container_id)?;
            let item_id = engine
                .item_id_by_rid(&container, path.id(2))?
                .ok_or_else(|| ApiError::from_code(Code::Engine(ErrorCode::ItemNotFound)))?;
            path.set_id(2, item_id);
        }
        let child = [
            ResourceKind::StoredProcedure,
            ResourceKind::Trigger,
            ResourceKind::UserDefinedFunction,
            ResourceKind::Conflict,
        ]
        .into_iter()
        .find(|kind| types.get(2) == Some(&kind.path_segment()));
        if let Some(kind) = child.filter(|_| path.segments.len() >= 6) {
            let parent = ResourceParent::Container {
                database_id,
                container_id,
            };
            let child_id = engine
                .resource_id_by_rid(kind, &parent, path.id(2))
                .await?
                .ok_or_else(|| ApiError::from_code(Code::Engine(ErrorCode::ResourceNotFound)))?;
            path.set_id(2, child_id);
        }
    }
    Ok(())
}

/// A user's and its permission's rids (`dbs/{rid}/users/{rid}/permissions/{rid}`, from their
/// `_self` links) turned into ids; an unknown rid is a 404.
async fn resolve_user_ids(
    engine: &Engine,
    path: &mut ResourcePath,
    database_id: String,
    types: &[&str],
) -> ApiResult<()> {
    let not_found = || ApiError::from_code(Code::Engine(ErrorCode::ResourceNotFound));
    let users = ResourceParent::Database {
        database_id: database_id.clone(),
    };
    let user_id = engine
        .resource_id_by_rid(ResourceKind::User, &users, path.id(1))
        .await?
        .ok_or_else(not_found)?;
    path.set_id(1, user_id.clone());
    if types.get(2) == Some(&"permissions") && path.segments.len() >= 6 {
        let permissions = ResourceParent::User {
            database_id,
            user_id,
        };
        let permission_id = engine
            .resource_id_by_rid(ResourceKind::Permission, &permissions, path.id(2))
            .await?
            .ok_or_else(not_found)?;
        path.set_id(2, permission_id);
    }
    Ok(())
}
