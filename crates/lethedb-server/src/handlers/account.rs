//! `GET /`: the database account, which tells the SDKs where to send requests and which
//! consistency and query features the service has.
//!
//! LetheDB is one region with session consistency; the account is fixed but for the endpoint,
//! which comes from configuration (`--advertise-url`, else the bound address), and from the
//! request's `Host` only with `--advertise-url auto`: the SDKs route every later request to it.

use super::context::Context;
use crate::respond::Reply;
use axum::http::StatusCode;
use serde_json::json;

pub fn read(context: &Context<'_>) -> Reply {
    let endpoint = context.state.endpoint.for_request(context.headers);
    let location = json!([{"name": "LetheDB", "databaseAccountEndpoint": endpoint}]);
    let query_engine = json!({
        "maxSqlQueryInputLength": 262144, "maxJoinsPerSqlQuery": 5, "maxLogicalAndPerSqlQuery": 500,
        "maxLogicalOrPerSqlQuery": 500, "maxUdfRefPerSqlQuery": 10, "maxInExpressionItemsCount": 16000,
        "queryMaxInMemorySortDocumentCount": 500, "maxQueryRequestTimeoutFraction": 0.9,
        "sqlAllowNonFiniteNumbers": false, "sqlAllowAggregateFunctions": true, "sqlAllowSubQuery": true,
        "sqlAllowScalarSubQuery": true, "allowNewKeywords": true, "sqlAllowLike": true,
        "sqlAllowGroupByClause": true, "maxSpatialQueryCells": 12, "spatialMaxGeometryPointCount": 256,
        "sqlDisableOptimizationFlags": 0, "enableSpatialIndexing": true
    });
    let body = json!({
        "_self": "",
        "id": "lethedb",
        "_rid": "lethedb",
        "media": "//media/",
        "addresses": "//addresses/",
        "_dbs": "//dbs/",
        "writableLocations": location,
        "readableLocations": location,
        "enableMultipleWriteLocations": false,
        "continuousBackupEnabled": false,
        "enableNRegionSynchronousCommit": false,
        "userReplicationPolicy": {"asyncReplication": false, "minReplicaSetSize": 1, "maxReplicasetSize": 4},
        "userConsistencyPolicy": {"defaultConsistencyLevel": "Session"},
        "systemReplicationPolicy": {"minReplicaSetSize": 1, "maxReplicasetSize": 4},
        "readPolicy": {"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
        "queryEngineConfiguration": query_engine.to_string(),
    });
    Reply::value(StatusCode::OK, &body)
}
