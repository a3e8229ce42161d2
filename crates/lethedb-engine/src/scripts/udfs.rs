//! User-defined functions in queries: the container's UDFs, loaded when a query's text names
//! `udf.`, behind the query crate's `UdfHost` hook (so `lethedb-query` stays free of any
//! JavaScript engine). One host serves one query page, with the page's time budget.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::EngineResult;
use lethedb_query::{QueryError, UdfHost};
use lethedb_scripts::{UdfError, Udfs};
use serde_json::Value;
use std::sync::Arc;

struct ScriptUdfs(Udfs);

impl UdfHost for ScriptUdfs {
    fn defines(&self, name: &str) -> bool {
        self.0.defines(name)
    }

    fn call(&self, name: &str, args: &[Option<Value>]) -> Result<Option<Value>, QueryError> {
        self.0.call(name, args).map_err(|error| match error {
            UdfError::Thrown(message) => QueryError::FunctionFailed(message),
            UdfError::Timeout => QueryError::FunctionTimeout,
            UdfError::OutOfMemory => QueryError::FunctionFailed(format!(
                "udf.{name} exceeded the memory limit of user-defined functions."
            )),
        })
    }
}

/// Whether a query's text may call a user-defined function (`udf.` in any case).
fn mentions_udfs(text: &str) -> bool {
    text.as_bytes()
        .windows(4)
        .any(|window| window.eq_ignore_ascii_case(b"udf."))
}

impl Engine {
    /// The host for `udf.name(...)` calls of a query over `container`, when its text names any.
    /// It lists the container's functions from the catalog, so only scan jobs call it.
    pub(crate) fn query_udfs(
        &self,
        container: &Container,
        text: &str,
    ) -> EngineResult<Option<Arc<dyn UdfHost>>> {
        if !mentions_udfs(text) {
            return Ok(None);
        }
        let functions = self.list_udfs_blocking(&container.database_id, &container.id)?;
        let host: Arc<dyn UdfHost> =
            Arc::new(ScriptUdfs(Udfs::new(functions, &self.inner.script_limits)));
        Ok(Some(host))
    }
}
