//! Doors for server-side JavaScript: reading a script for the code that runs it (one point
//! get), the container's user-defined functions (a scan under the bound), and executing a
//! stored procedure (on the blocking pool under the scripts' bound).

use crate::catalog::kinds::ResourceKind;
use crate::catalog::scripts::{container, ScriptResource};
use crate::clock::Stopwatch;
use crate::container::Container;
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::partitions::partition_key::PartitionKeyValue;
use crate::scripts::execute::{run_in_view, transact, ScriptResponse, REQUEST_UNITS_PER_SCRIPT_MS};
use crate::throughput::request_units;
use lethedb_scripts::Invocation;
use serde_json::Value;
use std::sync::Arc;

impl Engine {
    /// One stored procedure, trigger or user-defined function of a container (NotFound if
    /// there is none by that id). One storage get: fit for a request worker.
    pub fn read_script(
        &self,
        kind: ResourceKind,
        database_id: &str,
        container_id: &str,
        id: &str,
    ) -> EngineResult<ScriptResource> {
        if !kind.is_script() {
            return Err(EngineError::with_message(
                ErrorCode::Internal,
                format!("{} are not scripts", kind.feed_name()),
            ));
        }
        let resource = self.read_resource(kind, &container(database_id, container_id), id)?;
        ScriptResource::from_resource(kind, &resource)
    }

    /// Every user-defined function of a container as `(id, body)`, in id order; NotFound
    /// without the container. A catalog scan, under the scan bound.
    pub async fn list_udfs(
        &self,
        database_id: &str,
        container_id: &str,
    ) -> EngineResult<Vec<(String, String)>> {
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        self.run_scan(move |engine| engine.list_udfs_blocking(&database_id, &container_id))
            .await
    }

    /// Executes a stored procedure with `arguments` in the logical partition `partition_key`.
    pub async fn execute_stored_procedure(
        &self,
        container: &Arc<Container>,
        id: &str,
        partition_key: Option<PartitionKeyValue>,
        arguments: Vec<Value>,
        logging: bool,
    ) -> EngineResult<ScriptResponse> {
        let source = self
            .read_script(
                ResourceKind::StoredProcedure,
                &container.database_id,
                &container.id,
                id,
            )?
            .body;
        let partition = container.partition_key.point_key(partition_key)?;
        let container = Arc::clone(container);
        self.run_script(move |engine| {
            let invocation = Invocation::StoredProcedure { arguments };
            let ((outcome, compute_ms), done) = transact(engine, &container, &partition, |view| {
                let started = Stopwatch::start();
                let outcome = run_in_view(engine, &source, &invocation, logging, view)?;
                Ok((outcome, started.elapsed().as_secs_f64() * 1000.0))
            })?;
            let mut body = outcome.response_body;
            done.finalize(&mut body);
            Ok(ScriptResponse {
                body,
                log: logging.then_some(outcome.log),
                request_units: request_units::round_total(
                    done.request_units + compute_ms * REQUEST_UNITS_PER_SCRIPT_MS,
                ),
                lsn: done.lsn,
            })
        })
        .await
    }
}
