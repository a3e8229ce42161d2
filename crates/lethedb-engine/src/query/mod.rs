//! Query execution: feeds documents from storage, one at a time, into the pure query crate.
//!
//! The engine decides which keys to read (one partition when the request or the query pins the
//! partition key, otherwise the whole container), hides expired items, and stops reading as soon
//! as the query crate says the page is full. What a query means (filters, projections, ordering,
//! aggregates, paging state) is the query crate's business; this module does the I/O it must not.

pub(crate) mod index_metrics;

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{corrupted, invalid_continuation, EngineError, EngineResult, ErrorCode};
use crate::items::StoredItem;
use crate::keys;
use crate::limits::{PAGE_ITEMS_DEFAULT, PAGE_ITEMS_MAX};
use crate::partitions::epk::prefix_range;
use crate::partitions::partition_key::{PartitionKeyPart, PartitionKeyValue};
use crate::partitions::ranges::RangeMatcher;
use crate::records::{read_counters, ItemRecord};
use crate::ttl::expiry::is_expired;
use lethedb_storage::{KeyRange, Table};
use serde_json::Value;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

/// A query as the wire layer received it.
#[derive(Clone, Debug, Default)]
pub struct QueryRequest {
    pub text: String,
    pub parameters: Vec<(String, Value)>,
    /// The `x-ms-documentdb-partitionkey` header, if sent (a prefix for hierarchical keys).
    pub partition_key: Option<PartitionKeyValue>,
    /// `x-ms-max-item-count`; `None` or a negative count means the default page size.
    pub page_items_max: Option<usize>,
    pub continuation: Option<String>,
    /// `x-ms-documentdb-query-enablecrosspartition`.
    pub enable_cross_partition: bool,
    /// `x-ms-start-epk` and `x-ms-end-epk`: a range of effective partition keys the query is
    /// scoped to (clients send this for prefixes of hierarchical keys and feed ranges).
    pub effective_range: Option<(String, String)>,
    /// `x-ms-documentdb-partitionkeyrangeid`: the one physical partition the query runs on.
    pub range_id: Option<String>,
}

/// One page of results.
#[derive(Debug)]
pub struct QueryPage {
    pub items: Vec<Value>,
    pub continuation: Option<String>,
    pub documents_scanned: u64,
    pub lsn: u64,
}

fn page_size(request: &QueryRequest) -> usize {
    request
        .page_items_max
        .unwrap_or(PAGE_ITEMS_DEFAULT)
        .clamp(1, PAGE_ITEMS_MAX)
}

fn parts_from_values(values: Vec<Value>) -> PartitionKeyValue {
    PartitionKeyValue(
        values
            .into_iter()
            .map(|value| PartitionKeyPart::from_value(&value))
            .collect(),
    )
}

/// Parses a query without running it, to report syntax errors early (query plans).
pub fn validate_query(text: &str, parameters: &[(String, Value)], now_ms: i64) -> EngineResult<()> {
    lethedb_query::prepare(text, parameters, now_ms)?;
    Ok(())
}

/// The service's plan of a query over `container`: what the SDKs run on each partition key range
/// and what their client pipelines do with the answers (see `lethedb_query::ClientPlan`). A
/// WHERE clause that pins the whole partition key becomes the point range of its effective
/// partition key (`epk::prefix_range`).
pub fn client_plan(
    text: &str,
    parameters: &[(String, Value)],
    now_ms: i64,
    container: &Container,
    udfs: Option<Arc<dyn lethedb_query::UdfHost>>,
) -> EngineResult<lethedb_query::ClientPlan> {
    let prepared = lethedb_query::prepare_with_udfs(text, parameters, now_ms, udfs)?;
    let definition = &container.partition_key;
    let paths = if definition.is_system_key() {
        &[][..]
    } else {
        &definition.paths[..]
    };
    let effective_range =
        |values: &[Value]| prefix_range(definition, &parts_from_values(values.to_vec()));
    Ok(prepared.client_plan(paths, &effective_range)?)
}

impl Engine {
    /// Runs one page of a query over a container's items (synchronously; see `scans.rs`).
    pub(crate) fn query_items_blocking(
        &self,
        container: &Arc<Container>,
        request: &QueryRequest,
    ) -> EngineResult<QueryPage> {
        // One snapshot, and its time, for the whole page: expiry and the query's own clock
        // functions agree with every other process on a shared store.
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let prepared = lethedb_query::prepare_with_computed(
            &request.text,
            &request.parameters,
            now_ms,
            &container.computed,
            self.query_udfs(container, &request.text)?,
        )?;
        let definition = &container.partition_key;
        let scope = match &request.partition_key {
            Some(sent) if sent.0.len() > definition.paths.len() => {
                return Err(EngineError::new(ErrorCode::PartitionKeyMismatch))
            }
            Some(sent) => Some(sent.clone()),
            None => prepared
                .partition_key_equality(&definition.paths)
                .map(parts_from_values),
        };
        let filter = container.range_filter(
            request.range_id.as_deref(),
            request.effective_range.as_ref(),
        )?;
        if scope.is_none()
            && request.range_id.is_none()
            && request.effective_range.is_none()
            && !request.enable_cross_partition
            && !definition.is_system_key()
            && container.ranges.ranges.len() > 1
        {
            return Err(EngineError::new(ErrorCode::CrossPartitionQueryDisabled));
        }
        let mut matcher = RangeMatcher::new(filter, definition);
        let number = container.key_number();
        // A full key reads one contiguous range; a hierarchical prefix filters the container.
        let (range_prefix, prefix_filter) = match &scope {
            Some(value) if value.0.len() == definition.paths.len() => {
                (keys::partition_prefix(number, &value.encode()), None)
            }
            Some(value) => (keys::container_items_prefix(number), Some(value.clone())),
            None => (keys::container_items_prefix(number), None),
        };
        let mut run = prepared.start_page(request.continuation.as_deref(), page_size(request))?;
        let mut range = KeyRange::prefix(&range_prefix);
        if let Some(after) = run.resume_after() {
            let start = keys::item_key_from_suffix(number, after);
            if start < range_prefix {
                // A token from another scope cannot move the scan outside this one.
                return Err(invalid_continuation());
            }
            range.start = Bound::Excluded(start);
        }
        let mut failure: Option<EngineError> = None;
        let mut page_full = false;
        let cache = &self.inner.documents;
        reader.scan(Table::Items, &range, &mut |key, value| {
            // The header decides visibility without copying or parsing the body.
            let Some((last_modified_ms, lsn, ttl)) = ItemRecord::decode_header(value) else {
                failure = Some(corrupted("item"));
                return ControlFlow::Break(());
            };
            if is_expired(container, last_modified_ms, ttl, now_ms) || !matcher.admits(key) {
                return ControlFlow::Continue(());
            }
            let document = if let Some(document) = cache.get(key, lsn) {
                document
            } else {
                let parsed = ItemRecord::decode(value)
                    .map(|record| StoredItem {
                        container: Arc::clone(container),
                        record,
                    })
                    .ok_or_else(|| corrupted("item"))
                    .and_then(|item| item.to_value());
                match parsed {
                    Ok(document) => {
                        let document = Arc::new(document);
                        cache.insert(key, lsn, Arc::clone(&document), value.len());
                        document
                    }
                    Err(error) => {
                        failure = Some(error);
                        return ControlFlow::Break(());
                    }
                }
            };
            if let Some(prefix) = &prefix_filter {
                let full = definition.extract(&document);
                if full.0[..prefix.0.len()] != prefix.0[..] {
                    return ControlFlow::Continue(());
                }
            }
            match run.push(keys::item_key_suffix(key), &document) {
                Ok(flow) => {
                    page_full = flow.is_break();
                    flow
                }
                Err(error) => {
                    failure = Some(error.into());
                    ControlFlow::Break(())
                }
            }
        })?;
        if let Some(error) = failure {
            return Err(error);
        }
        let page = run.finish(!page_full)?;
        let lsn = read_counters(&*reader, number)?.lsn;
        Ok(QueryPage {
            items: page.items,
            continuation: page.continuation,
            documents_scanned: page.documents_scanned,
            lsn,
        })
    }

    /// Runs one page of a query over a list of resources (databases or containers).
    pub(crate) fn query_resources_blocking(
        &self,
        resources: &[Value],
        request: &QueryRequest,
    ) -> EngineResult<QueryPage> {
        let prepared = lethedb_query::prepare(&request.text, &request.parameters, self.now_ms())?;
        let mut run = prepared.start_page(request.continuation.as_deref(), page_size(request))?;
        let start = match run.resume_after() {
            None => 0,
            Some(after) => {
                let bytes: [u8; 8] = after.try_into().map_err(|_| invalid_continuation())?;
                u64::from_be_bytes(bytes).saturating_add(1)
            }
        };
        let mut page_full = false;
        for (index, resource) in resources.iter().enumerate().skip(start as usize) {
            if run
                .push(&(index as u64).to_be_bytes(), resource)?
                .is_break()
            {
                page_full = true;
                break;
            }
        }
        let page = run.finish(!page_full)?;
        Ok(QueryPage {
            items: page.items,
            continuation: page.continuation,
            documents_scanned: page.documents_scanned,
            lsn: 0,
        })
    }
}
