//! The stored item as clients see it: one visible version with its container, and its JSON with
//! the system properties (`_rid`, `_self`, `_etag`, `_attachments`, `_ts`) derived from the
//! container and the record, so a client can never set them. Reading and writing versions is
//! `items/mod.rs`'s business; this module only renders one.

use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::records::ItemRecord;
use crate::rids;
use serde_json::Value;
use std::sync::Arc;

/// One visible version of an item.
#[derive(Clone, Debug)]
pub struct StoredItem {
    pub container: Arc<Container>,
    pub record: ItemRecord,
}

impl StoredItem {
    pub fn etag(&self) -> String {
        rids::etag(self.container.key_number(), self.record.lsn)
    }

    /// The item's `_rid`.
    fn rid(&self) -> String {
        self.container.document_rid(self.record.document_number)
    }

    /// The item as clients see it, as JSON bytes: the stored document with the system
    /// properties spliced in, written directly (their values need no escaping but the ETag's
    /// quotes).
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let body = &self.record.body;
        let rid = self.rid();
        let etag = self.etag();
        let mut out = Vec::with_capacity(body.len() + 160);
        // Stored bodies are compact JSON objects written by `items/mod.rs`: `{` ... `}`.
        out.extend_from_slice(&body[..body.len().saturating_sub(1)]);
        if body.len() > 2 {
            out.push(b',');
        }
        out.extend_from_slice(b"\"_rid\":\"");
        out.extend_from_slice(rid.as_bytes());
        out.extend_from_slice(b"\",\"_self\":\"");
        out.extend_from_slice(self.container.documents_self_prefix.as_bytes());
        out.extend_from_slice(rid.as_bytes());
        out.extend_from_slice(b"/\",\"_etag\":\"\\\"");
        out.extend_from_slice(etag.trim_matches('"').as_bytes());
        out.extend_from_slice(b"\\\"\",\"_attachments\":\"attachments/\",\"_ts\":");
        out.extend_from_slice(
            self.record
                .last_modified_ms
                .div_euclid(1000)
                .to_string()
                .as_bytes(),
        );
        out.push(b'}');
        out
    }

    /// The item as a JSON value, system properties included (what queries see).
    pub fn to_value(&self) -> EngineResult<Value> {
        let mut document = self.record.document().ok_or_else(|| corrupted("item"))?;
        if let Value::Object(map) = &mut document {
            let rid = self.rid();
            let self_link = format!("{}{rid}/", self.container.documents_self_prefix);
            map.insert("_rid".into(), Value::String(rid));
            map.insert("_self".into(), Value::String(self_link));
            map.insert("_etag".into(), Value::String(self.etag()));
            map.insert("_attachments".into(), Value::String("attachments/".into()));
            map.insert(
                "_ts".into(),
                Value::from(self.record.last_modified_ms.div_euclid(1000)),
            );
        }
        Ok(document)
    }
}
