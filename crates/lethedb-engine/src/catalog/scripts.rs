//! Looking up a container's stored scripts by what they are, for the code that runs them: a
//! stored procedure, trigger or user-defined function as a [`ScriptResource`] (its id, its
//! source, and a trigger's type and operation parsed), and every user-defined function of a
//! container for a query's `udf.` calls.
//!
//! The resources themselves are the generic catalog's (`resource.rs`), and their bodies were
//! checked when they were stored (`script_body.rs`); this module only reads. It runs nothing.

use super::kinds::{ResourceKind, ResourceParent};
use super::script_body::{TriggerOperation, TriggerType};
use crate::engine::Engine;
use crate::error::{corrupted, EngineResult};
use serde_json::Value;

/// A stored procedure, trigger or user-defined function as its runner needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptResource {
    pub id: String,
    /// The JavaScript source, a function expression.
    pub body: String,
    /// A trigger's `triggerType`; `None` for the other kinds.
    pub trigger_type: Option<TriggerType>,
    /// A trigger's `triggerOperation`; `None` for the other kinds.
    pub trigger_operation: Option<TriggerOperation>,
}

fn text<'a>(resource: &'a Value, name: &str) -> Option<&'a str> {
    resource.get(name).and_then(Value::as_str)
}

impl ScriptResource {
    /// The script a stored resource of `kind` holds. Its body was checked when it was stored,
    /// so a missing or unknown field means the record is damaged.
    pub(crate) fn from_resource(
        kind: ResourceKind,
        resource: &Value,
    ) -> EngineResult<ScriptResource> {
        let damaged = || corrupted("script");
        let (trigger_type, trigger_operation) = if kind == ResourceKind::Trigger {
            (
                Some(
                    text(resource, "triggerType")
                        .and_then(TriggerType::parse)
                        .ok_or_else(damaged)?,
                ),
                Some(
                    text(resource, "triggerOperation")
                        .and_then(TriggerOperation::parse)
                        .ok_or_else(damaged)?,
                ),
            )
        } else {
            (None, None)
        };
        Ok(ScriptResource {
            id: text(resource, "id").ok_or_else(damaged)?.to_string(),
            body: text(resource, "body").ok_or_else(damaged)?.to_string(),
            trigger_type,
            trigger_operation,
        })
    }
}

pub(crate) fn container(database_id: &str, container_id: &str) -> ResourceParent {
    ResourceParent::Container {
        database_id: database_id.to_string(),
        container_id: container_id.to_string(),
    }
}

impl Engine {
    /// Every user-defined function of a container as `(id, body)`, in id order; NotFound
    /// without the container. A catalog scan: the
    /// caller runs it where scans run (`Engine::list_udfs`, a query's preparation).
    pub(crate) fn list_udfs_blocking(
        &self,
        database_id: &str,
        container_id: &str,
    ) -> EngineResult<Vec<(String, String)>> {
        let kind = ResourceKind::UserDefinedFunction;
        self.list_resources_blocking(kind, &container(database_id, container_id))?
            .iter()
            .map(|resource| {
                ScriptResource::from_resource(kind, resource).map(|script| (script.id, script.body))
            })
            .collect()
    }
}
