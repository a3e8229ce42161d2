//! What the container's indexing policy makes of a query's ORDER BY: the service's refusals
//! when no index can serve it, and otherwise the `OrderingRules` its index imposes on the rows
//! (see `docs/indexing.md`).
//!
//! Decided from the compiled policy alone (`index/policy.rs`), never from how the page is read,
//! so the rules hold whether the engine scans or walks an index. It is asked for every page of
//! a query that reads items (per partition, per range and across the container, the SDKs'
//! rewritten ORDER BY queries included), never for the query-plan endpoint, whose gateway plan
//! does not look at the index.

use crate::container::Container;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::index::policy::{Coverage, OrderByServing};
use lethedb_query::{OrderingRules, Prepared};

/// The service's refusal of an ORDER BY on a path the indexing policy excludes (the refusal of
/// several keys without a composite index is `ErrorCode::OrderByWithoutIndex`'s own message).
pub(crate) const EXCLUDED_ORDER_BY_PATH: &str =
    "The index path corresponding to the specified order-by item is excluded.";

/// The rules a query's ORDER BY follows on `container`, or the service's 400 when the policy
/// cannot serve it.
pub(crate) fn ordering_rules(
    prepared: &Prepared,
    container: &Container,
) -> EngineResult<OrderingRules> {
    match container.index_policy.order_by(&prepared.order_paths()) {
        OrderByServing::Unchecked => Ok(OrderingRules::default()),
        // Only an explicitly indexed path has an entry for items where it is undefined.
        OrderByServing::Single(coverage) => Ok(OrderingRules {
            omit_undefined: coverage != Coverage::Explicit,
            ..OrderingRules::default()
        }),
        // A composite index has an undefined entry for a missing or non-scalar component.
        OrderByServing::Composite => Ok(OrderingRules {
            non_scalars_as_undefined: true,
            ..OrderingRules::default()
        }),
        OrderByServing::Excluded => Err(EngineError::with_message(
            ErrorCode::OrderByWithoutIndex,
            EXCLUDED_ORDER_BY_PATH,
        )),
        // The service serves an aggregate without GROUP BY over several keys without a
        // composite: its one row needs no order (the JavaScript SDK's `SELECT VALUE AVG(r.key)
        // ... ORDER BY r.key, r.field` test), and it aggregates every matching document.
        OrderByServing::NoComposite if prepared.is_whole_aggregate() => {
            Ok(OrderingRules::default())
        }
        OrderByServing::NoComposite => Err(EngineError::new(ErrorCode::OrderByWithoutIndex)),
    }
}
