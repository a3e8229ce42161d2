//! What a script sees and does while it runs: a storage snapshot of its partition, overlaid with
//! its own writes, off the writer thread.
//!
//! Every operation is decided against that view by the rules of its single-item counterpart
//! (`items/rules.rs`: ids, ETags, TTL, sizes, unique keys), so the script's callbacks get the
//! answers the service would give. Writes are not applied: they are kept, in order, for the commit
//! (`commit.rs`), together with the version each item the script touched had in the snapshot
//! (the read set), which the commit re-checks. Items the script writes carry provisional `_rid`s (for new
//! items), `_etag`s and `_ts`s until the commit gives them their own.
//!
//! A script is confined to the partition key it was executed with: a read outside it finds
//! nothing, and a write outside it ends the execution.

use crate::container::Container;
use crate::engine::WireStatus;
use crate::error::{corrupted, invalid_continuation, item_not_found};
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::items::requests::{decode_continuation, encode_continuation};
use crate::items::rules::{self, Body, ClaimHolder, Effect, Version, WriteMode};
use crate::items::unique_keys::{claims_of, holder_of};
use crate::items::{read_record, StoredItem};
use crate::keys::{self, PartitionPlace};
use crate::limits::{PAGE_ITEMS_DEFAULT, PAGE_ITEMS_MAX};
use crate::partitions::partition_key::PartitionKeyValue;
use crate::query::ordering::ordering_rules;
use crate::records::ItemRecord;
use crate::rids;
use crate::scan_visit::try_scan;
use crate::throughput::request_units;
use crate::ttl::expiry::record_is_expired;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::{Map, Value};
use std::collections::{btree_map, BTreeMap, HashMap};
use std::iter::Peekable;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

/// Document numbers of provisional rids start here, far above any real one.
const PROVISIONAL_DOCUMENT_NUMBER_BASE: u64 = 0x00f0_0000_0000_0000;

/// One write, kept for the commit.
#[derive(Clone, Debug)]
pub(crate) enum ScriptWrite {
    Put { mode: WriteMode, body: Body },
    Delete { id: String },
}

/// The view of one execution.
pub(crate) struct ScriptView<'r> {
    pub(crate) container: Arc<Container>,
    reader: &'r dyn ReadTxn,
    now_ms: i64,
    pub(crate) partition: PartitionKeyValue,
    /// Where the partition's items lie in the container's keys.
    place: PartitionPlace,
    /// What the script wrote, by item key: the version it sees now (`None`: deleted).
    local: BTreeMap<Vec<u8>, Option<Arc<Value>>>,
    /// Provisional `_rid`s of items the script created, to their keys.
    provisional_rids: HashMap<String, Vec<u8>>,
    /// Provisional `_etag`s the script was shown, to the key of the item that carries them.
    pub(crate) provisional_etags: HashMap<String, Vec<u8>>,
    next_provisional: u64,
    /// The LSN each item the script read or wrote had in the snapshot (`None`: absent).
    pub(crate) reads: HashMap<Vec<u8>, Option<u64>>,
    /// The unique key claims the script's writes moved: the key of the item holding each now
    /// (`None`: freed). Claims it did not move are as the snapshot has them.
    claims: HashMap<Vec<u8>, Option<Vec<u8>>>,
    pub(crate) writes: Vec<ScriptWrite>,
    /// What its reads and queries cost (its writes are charged when committed).
    pub(crate) request_units: f64,
    /// What a failure is on the wire, which a script sees of a failed operation.
    pub(crate) wire_status: WireStatus,
    /// The failure that ended the execution (a failure of the store, a write outside the
    /// partition), which the sandbox reports only as the script API shows it.
    pub(crate) ended_by: Option<EngineError>,
}

impl<'r> ScriptView<'r> {
    pub(crate) fn new(
        container: Arc<Container>,
        reader: &'r dyn ReadTxn,
        now_ms: i64,
        partition: PartitionKeyValue,
        wire_status: WireStatus,
    ) -> ScriptView<'r> {
        let place = container.partition_place(&partition);
        ScriptView {
            container,
            reader,
            now_ms,
            partition,
            place,
            local: BTreeMap::new(),
            provisional_rids: HashMap::new(),
            provisional_etags: HashMap::new(),
            next_provisional: 0,
            reads: HashMap::new(),
            claims: HashMap::new(),
            writes: Vec::new(),
            request_units: 0.0,
            wire_status,
            ended_by: None,
        }
    }

    pub(crate) fn self_link(&self) -> String {
        format!(
            "dbs/{}/colls/{}/",
            rids::database_rid(self.container.database_number),
            rids::container_rid(self.container.database_number, self.container.number)
        )
    }

    pub(crate) fn alt_link(&self) -> String {
        format!(
            "dbs/{}/colls/{}",
            self.container.database_id, self.container.id
        )
    }

    pub(crate) fn key_of(&self, id: &str) -> Vec<u8> {
        keys::item_key(self.container.key_number(), &self.place, id)
    }

    /// The visible version of an item in the view, recording a snapshot read.
    pub(crate) fn current(&mut self, key: &[u8]) -> EngineResult<Option<Arc<Value>>> {
        if let Some(local) = self.local.get(key) {
            return Ok(local.clone());
        }
        let record = read_record(self.reader, key)?
            .filter(|record| !record_is_expired(&self.container, record, self.now_ms));
        self.reads
            .entry(key.to_vec())
            .or_insert(record.as_ref().map(|record| record.lsn));
        match record {
            None => Ok(None),
            Some(record) => {
                self.request_units += request_units::read(record.body.len());
                let item = StoredItem {
                    container: Arc::clone(&self.container),
                    record,
                };
                Ok(Some(Arc::new(item.to_value()?)))
            }
        }
    }

    /// The collection part of a link, checked to be this collection's (by rid or by name).
    pub(crate) fn check_collection_link(&self, link: &str) -> EngineResult<()> {
        let link = link.trim_matches('/');
        let own = [self.self_link(), self.alt_link()];
        if own.iter().any(|mine| link == mine.trim_matches('/')) {
            return Ok(());
        }
        Err(outside_collection())
    }

    /// The key a document link names: `<collection link>/docs/<id or rid>`.
    pub(crate) fn resolve_document_link(&mut self, link: &str) -> EngineResult<Vec<u8>> {
        let link = link.trim_matches('/');
        let by_name = format!("{}/docs/", self.alt_link().trim_matches('/'));
        let by_rid = format!("{}/docs/", self.self_link().trim_matches('/'));
        if let Some(id) = link.strip_prefix(&by_name) {
            return Ok(self.key_of(id));
        }
        let Some(rid) = link.strip_prefix(&by_rid) else {
            return Err(outside_collection());
        };
        if let Some(key) = self.provisional_rids.get(rid) {
            return Ok(key.clone());
        }
        let Some(number) = rids::document_number_of(rid) else {
            return Err(item_not_found());
        };
        let suffix = self.reader.get(
            Table::ResourceIds,
            &keys::resource_id_key(self.container.key_number(), number),
        )?;
        let Some(suffix) = suffix else {
            return Err(item_not_found());
        };
        match keys::split_item_suffix(&suffix) {
            Some((partition, id)) if partition == self.place.partition_key() => Ok(self.key_of(id)),
            _ => Err(item_not_found()),
        }
    }

    /// Checks a body for a write: the id (generated unless turned off), the item rules, and
    /// the partition (a write outside it ends the execution).
    fn prepare(
        &self,
        mut body: Map<String, Value>,
        generate_id: bool,
    ) -> Result<Body, ScriptWriteError> {
        if !body.contains_key("id") && generate_id {
            body.insert("id".into(), Value::String(uuid::Uuid::new_v4().to_string()));
        }
        let body = rules::prepare_body(Value::Object(body))?;
        let key = rules::document_partition_key(&self.container, &body.document)?;
        if key.encode() != self.place.partition_key() {
            return Err(ScriptWriteError::OutsidePartition);
        }
        rules::check_partition_key_size(self.place.partition_key())?;
        Ok(body)
    }

    /// The document as the script sees it after writing it: its body, the system properties
    /// it keeps (`_rid` of a replaced item) or provisional ones.
    fn written(&mut self, key: &[u8], document: &Value, rid: Option<String>) -> Arc<Value> {
        self.next_provisional += 1;
        let rid = rid.unwrap_or_else(|| {
            let rid = self
                .container
                .document_rid(PROVISIONAL_DOCUMENT_NUMBER_BASE + self.next_provisional);
            self.provisional_rids.insert(rid.clone(), key.to_vec());
            rid
        });
        let etag = format!("\"lethedb-provisional-{:x}\"", self.next_provisional);
        self.provisional_etags.insert(etag.clone(), key.to_vec());
        let mut map = match document {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let self_link = format!("{}{rid}/", self.container.documents_self_prefix);
        map.insert("_rid".into(), Value::String(rid));
        map.insert("_self".into(), Value::String(self_link));
        map.insert("_etag".into(), Value::String(etag));
        map.insert("_attachments".into(), Value::String("attachments/".into()));
        map.insert("_ts".into(), Value::from(self.now_ms.div_euclid(1000)));
        Arc::new(Value::Object(map))
    }

    /// A create, upsert or replace (`replaced`: the key the link names, for a replace).
    /// Returns the document as the script sees it now, and whether the write created it.
    pub(crate) fn put(
        &mut self,
        mode: WriteMode,
        replaced: Option<Vec<u8>>,
        body: Map<String, Value>,
        generate_id: bool,
        if_match: Option<&str>,
    ) -> Result<(Arc<Value>, Effect), ScriptWriteError> {
        let body = self.prepare(body, generate_id)?;
        let key = self.key_of(&body.id);
        let target = replaced.unwrap_or_else(|| key.clone());
        let existing = self.current(&target)?;
        // A rename's new id is read too: it must be free, and the commit re-checks it.
        let taken = target != key && self.current(&key)?.is_some();
        let current = existing.as_deref().map(Version::shown);
        let effect = rules::decide_write(&mode, if_match, current, taken)?;
        let claims = claims_of(&self.container, self.place.partition_key(), &body.document);
        self.check_claims(&claims, &key, &target)?;
        let mode = match mode {
            WriteMode::Replace(_) => {
                let (_, old_id) = keys::split_item_suffix(keys::item_key_suffix(&target))
                    .ok_or_else(|| corrupted("item key"))?;
                WriteMode::Replace(old_id.to_string())
            }
            other => other,
        };
        let kept_rid = existing
            .as_ref()
            .and_then(|doc| doc.get("_rid"))
            .and_then(Value::as_str)
            .map(str::to_string);
        self.release_claims(existing.as_deref());
        for claim in claims {
            self.claims.insert(claim, Some(key.clone()));
        }
        if target != key {
            self.local.insert(target, None);
        }
        let seen = self.written(&key, &body.document, kept_rid);
        self.local.insert(key, Some(Arc::clone(&seen)));
        // Writes are charged when the commit applies them (`commit.rs`).
        self.writes.push(ScriptWrite::Put { mode, body });
        Ok((seen, effect))
    }

    /// Checks the unique key claims of a write's new version, stored under `key` and replacing
    /// the item under `target`, against the view: a claim another item visible in the view
    /// holds fails the write, as it fails the same request. A holder read here joins the read
    /// set, so the commit runs the script again if it changed meanwhile.
    fn check_claims(&mut self, claims: &[Vec<u8>], key: &[u8], target: &[u8]) -> EngineResult<()> {
        for claim in claims {
            let holder = match self.claims.get(claim) {
                Some(moved) => moved.clone(),
                None => holder_of(self.reader, self.container.key_number(), claim)?,
            };
            let state = match holder {
                None => ClaimHolder::Free,
                Some(held) if held == key || held == target => ClaimHolder::Free,
                Some(held) if self.current(&held)?.is_some() => ClaimHolder::Visible,
                Some(_) => ClaimHolder::Expired,
            };
            rules::decide_unique_claim(state)?;
        }
        Ok(())
    }

    /// Frees, in the view, the claims of a visible version the script replaces or deletes (a
    /// visible version's claims all name it).
    fn release_claims(&mut self, document: Option<&Value>) {
        if let Some(document) = document {
            for claim in claims_of(&self.container, self.place.partition_key(), document) {
                self.claims.insert(claim, None);
            }
        }
    }

    pub(crate) fn delete(&mut self, key: Vec<u8>, if_match: Option<&str>) -> EngineResult<()> {
        let existing = self.current(&key)?;
        let current = existing.as_deref().map(|doc| (Version::shown(doc), ()));
        rules::decide_existing(if_match, current)?;
        self.release_claims(existing.as_deref());
        let (_, id) = keys::split_item_suffix(keys::item_key_suffix(&key))
            .ok_or_else(|| corrupted("item key"))?;
        self.writes.push(ScriptWrite::Delete { id: id.to_string() });
        self.local.insert(key, None);
        Ok(())
    }

    /// Visits the partition's visible documents in key order after `after` (a key suffix),
    /// the script's own writes included, until `visit` breaks or fails.
    pub(crate) fn scan(
        &mut self,
        after: Option<&[u8]>,
        visit: DocumentVisit<'_>,
    ) -> EngineResult<()> {
        let range = self.scan_range(after)?;
        let local_range = (range.start.clone(), range.end.clone());
        let mut merge = Merge {
            container: Arc::clone(&self.container),
            now_ms: self.now_ms,
            pending: self.local.range(local_range).peekable(),
            reads: &mut self.reads,
            stopped: false,
            scanned_bytes: 0,
        };
        try_scan(self.reader, Table::Items, &range, &mut |key, value| {
            merge.snapshot_entry(key, value, visit)
        })?;
        if !merge.stopped {
            for (local_key, local) in merge.pending {
                if let Some(document) = local {
                    if visit(local_key, document)?.is_break() {
                        break;
                    }
                }
            }
        }
        self.request_units += request_units::read(merge.scanned_bytes);
        Ok(())
    }

    /// The keys of the partition after `after` (a key suffix, which must be in the partition).
    fn scan_range(&self, after: Option<&[u8]>) -> EngineResult<KeyRange> {
        let number = self.container.key_number();
        let prefix = keys::partition_prefix(number, &self.place);
        let mut range = KeyRange::prefix(&prefix);
        if let Some(after) = after {
            let start = keys::item_key_from_suffix(number, after);
            if !start.starts_with(&prefix) {
                return Err(invalid_continuation());
            }
            range.start = Bound::Excluded(start);
        }
        Ok(range)
    }

    /// One page of the partition's documents.
    pub(crate) fn read_feed(
        &mut self,
        page_size: Option<i64>,
        continuation: Option<&str>,
    ) -> EngineResult<(Vec<Value>, Option<String>)> {
        let size = page_items(page_size);
        let after = continuation.map(decode_continuation).transpose()?;
        let mut documents = Vec::new();
        let mut last = Vec::new();
        let mut more = false;
        self.scan(after.as_deref(), &mut |key, document| {
            if documents.len() == size {
                more = true;
                return Ok(ControlFlow::Break(()));
            }
            documents.push(document.clone());
            last = keys::item_key_suffix(key).to_vec();
            Ok(ControlFlow::Continue(()))
        })?;
        let continuation = more.then(|| encode_continuation(&last));
        Ok((documents, continuation))
    }

    /// One page of a query over the partition's documents.
    pub(crate) fn query(
        &mut self,
        text: &str,
        parameters: &[(String, Value)],
        page_size: Option<i64>,
        continuation: Option<&str>,
    ) -> EngineResult<(Vec<Value>, Option<String>)> {
        let prepared = lethedb_query::prepare_with_computed(
            text,
            parameters,
            self.now_ms,
            &self.container.computed,
            &self.container.vectors,
            None,
        )?
        .with_full_text(Arc::clone(&self.container.full_text));
        // The service answers a script's query from the same index as any other.
        let rules = ordering_rules(&prepared, &self.container)?;
        let mut run = prepared.start_page_with(continuation, page_items(page_size), rules)?;
        let after = run.resume_after().map(<[u8]>::to_vec);
        let mut full = false;
        self.scan(after.as_deref(), &mut |key, document| {
            let flow = run.push(keys::item_key_suffix(key), document)?;
            full = flow.is_break();
            Ok(flow)
        })?;
        let page = run.finish(!full)?;
        self.request_units += request_units::query(page.documents_scanned, page.items.len() as u64);
        Ok((page.items, page.continuation))
    }
}

/// A visitor of the view's documents (key, document) that may fail: `Ok(Break)` stops the
/// scan, `Err` stops it and becomes its error.
pub(crate) type DocumentVisit<'a> =
    &'a mut dyn FnMut(&[u8], &Value) -> EngineResult<ControlFlow<()>>;

/// The script's own writes, in key order, not yet merged into a scan.
type Pending<'v> = Peekable<btree_map::Range<'v, Vec<u8>, Option<Arc<Value>>>>;

/// A scan of the snapshot merged with the script's own writes: a written key replaces the
/// snapshot's version of it (a deleted one hides it), and the snapshot's visible versions join
/// the read set.
struct Merge<'v> {
    container: Arc<Container>,
    now_ms: i64,
    pending: Pending<'v>,
    reads: &'v mut HashMap<Vec<u8>, Option<u64>>,
    /// Whether the visitor broke.
    stopped: bool,
    scanned_bytes: usize,
}

impl Merge<'_> {
    /// One stored entry: the script's writes before it (or at its key, which replace it) are
    /// visited first, then its own version if visible.
    fn snapshot_entry(
        &mut self,
        key: &[u8],
        value: &[u8],
        visit: DocumentVisit<'_>,
    ) -> EngineResult<ControlFlow<()>> {
        while let Some((local_key, local)) = self.pending.peek() {
            if local_key.as_slice() > key {
                break;
            }
            let overrides = local_key.as_slice() == key;
            if let Some(document) = local {
                if visit(local_key, document)?.is_break() {
                    self.stopped = true;
                    return Ok(ControlFlow::Break(()));
                }
            }
            self.pending.next();
            if overrides {
                return Ok(ControlFlow::Continue(()));
            }
        }
        self.stored_version(key, value, visit)
    }

    /// The snapshot's version at `key`, visited when visible.
    fn stored_version(
        &mut self,
        key: &[u8],
        value: &[u8],
        visit: DocumentVisit<'_>,
    ) -> EngineResult<ControlFlow<()>> {
        let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
        if record_is_expired(&self.container, &record, self.now_ms) {
            return Ok(ControlFlow::Continue(()));
        }
        self.reads.entry(key.to_vec()).or_insert(Some(record.lsn));
        self.scanned_bytes += record.body.len();
        let item = StoredItem {
            container: Arc::clone(&self.container),
            record,
        };
        if visit(key, &item.to_value()?)?.is_break() {
            self.stopped = true;
            return Ok(ControlFlow::Break(()));
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// Why a write failed: an ordinary failure (the script's callback gets it), or a write outside
/// the script's partition (the execution ends).
#[derive(Debug)]
pub(crate) enum ScriptWriteError {
    Failed(EngineError),
    OutsidePartition,
}

impl From<EngineError> for ScriptWriteError {
    fn from(error: EngineError) -> Self {
        ScriptWriteError::Failed(error)
    }
}

fn outside_collection() -> EngineError {
    EngineError::with_message(
        ErrorCode::InvalidResourcePath,
        "Function is not allowed to operate on resources outside current collection. Make sure that the link provided starts with the link of the current collection.",
    )
}

/// A script's page size: the service's default of 100, -1 for as many as allowed.
fn page_items(page_size: Option<i64>) -> usize {
    match page_size {
        None | Some(0) => PAGE_ITEMS_DEFAULT,
        Some(size) if size < 0 => PAGE_ITEMS_MAX,
        Some(size) => (size as usize).min(PAGE_ITEMS_MAX),
    }
}
