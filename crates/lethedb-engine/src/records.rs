//! The stored forms of resources: item records, expiry entries, counters, and resource ids.
//!
//! Item records are a fixed binary header (last-modified milliseconds, LSN, document sequence
//! number) followed by the document's JSON without system properties; the system properties are
//! derived on every read, so a client can never override them. Nothing here decides visibility.

use crate::ttl::ItemTtl;
use base64::Engine as _;
use serde_json::Value;

/// Version 2 added the item's own `ttl` to the header, so expiry checks never parse bodies.
const ITEM_RECORD_VERSION: u8 = 2;
const ITEM_HEADER_BYTES: usize = 33;

/// The system properties the server owns; any a client sends are dropped before storing.
pub const SYSTEM_PROPERTIES: [&str; 5] = ["_rid", "_self", "_etag", "_attachments", "_ts"];

/// One stored version of an item.
#[derive(Clone, Debug, PartialEq)]
pub struct ItemRecord {
    pub last_modified_ms: i64,
    /// The container LSN of the write that produced this version; it also makes the ETag.
    pub lsn: u64,
    /// Assigned at creation, kept by replaces: the item's `_rid` suffix.
    pub document_number: u64,
    /// The document's own `ttl`, as it affects expiry (read from the body when written).
    pub ttl: ItemTtl,
    /// The document as the client sent it, minus system properties, as compact JSON.
    pub body: Vec<u8>,
}

impl ItemRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ITEM_HEADER_BYTES + self.body.len());
        out.push(ITEM_RECORD_VERSION);
        out.extend_from_slice(&self.last_modified_ms.to_be_bytes());
        out.extend_from_slice(&self.lsn.to_be_bytes());
        out.extend_from_slice(&self.document_number.to_be_bytes());
        out.extend_from_slice(&ttl_code(self.ttl).to_be_bytes());
        out.extend_from_slice(&self.body);
        out
    }

    /// Decodes a stored record; `None` means the bytes are not a record (corruption).
    pub fn decode(bytes: &[u8]) -> Option<ItemRecord> {
        let (last_modified_ms, lsn, ttl) = ItemRecord::decode_header(bytes)?;
        Some(ItemRecord {
            last_modified_ms,
            lsn,
            document_number: u64::from_be_bytes(bytes.get(17..25)?.try_into().ok()?),
            ttl,
            body: bytes[ITEM_HEADER_BYTES..].to_vec(),
        })
    }

    /// The header fields expiry needs, without copying the body.
    pub fn decode_header(bytes: &[u8]) -> Option<(i64, u64, ItemTtl)> {
        if bytes.len() < ITEM_HEADER_BYTES || bytes[0] != ITEM_RECORD_VERSION {
            return None;
        }
        let field = |at: usize| -> Option<[u8; 8]> { bytes.get(at..at + 8)?.try_into().ok() };
        Some((
            i64::from_be_bytes(field(1)?),
            u64::from_be_bytes(field(9)?),
            ttl_from_code(i64::from_be_bytes(field(25)?)),
        ))
    }

    pub fn document(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

fn ttl_code(ttl: ItemTtl) -> i64 {
    match ttl {
        ItemTtl::Inherit => 0,
        ItemTtl::Never => -1,
        ItemTtl::Secs(secs) => secs,
    }
}

fn ttl_from_code(code: i64) -> ItemTtl {
    match code {
        0 => ItemTtl::Inherit,
        -1 => ItemTtl::Never,
        secs => ItemTtl::Secs(secs),
    }
}

/// What the expiry index remembers of an entry: which write it belongs to and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiryEntry {
    pub lsn: u64,
    pub body_bytes: u64,
}

impl ExpiryEntry {
    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0; 16];
        out[..8].copy_from_slice(&self.lsn.to_be_bytes());
        out[8..].copy_from_slice(&self.body_bytes.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<ExpiryEntry> {
        Some(ExpiryEntry {
            lsn: u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?),
            body_bytes: u64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?),
        })
    }
}

/// A container's counters, changed in the same transaction as its items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Stored items, including expired ones the sweeper has not deleted yet.
    pub items: u64,
    /// Stored document bytes, likewise.
    pub bytes: u64,
    /// The container's log sequence number: one more for every write.
    pub lsn: u64,
    /// The next document number for `_rid`s.
    pub next_document_number: u64,
}

impl Counters {
    pub fn encode(&self) -> [u8; 32] {
        let mut out = [0; 32];
        for (slot, value) in [self.items, self.bytes, self.lsn, self.next_document_number]
            .into_iter()
            .enumerate()
        {
            out[slot * 8..slot * 8 + 8].copy_from_slice(&value.to_be_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Counters> {
        let field = |slot: usize| -> Option<u64> {
            Some(u64::from_be_bytes(
                bytes.get(slot * 8..slot * 8 + 8)?.try_into().ok()?,
            ))
        };
        Some(Counters {
            items: field(0)?,
            bytes: field(1)?,
            lsn: field(2)?,
            next_document_number: field(3)?,
        })
    }
}

/// Resource ids in the service's encoding: base64 with `/` written as `-`.
fn encode_rid(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD
        .encode(bytes)
        .replace('/', "-")
}

/// Decodes a resource id; `None` if it is not one.
pub fn decode_rid(rid: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(rid.replace('-', "/"))
        .ok()
}

pub fn database_rid(database_number: u32) -> String {
    encode_rid(&database_number.to_le_bytes())
}

pub fn container_rid(database_number: u32, container_number: u32) -> String {
    let mut bytes = database_number.to_le_bytes().to_vec();
    // The service sets the top bit of a collection's part of the id.
    bytes.extend_from_slice(&(container_number | 0x8000_0000).to_be_bytes());
    encode_rid(&bytes)
}

pub fn document_rid(database_number: u32, container_number: u32, document_number: u64) -> String {
    let mut bytes = database_number.to_le_bytes().to_vec();
    bytes.extend_from_slice(&(container_number | 0x8000_0000).to_be_bytes());
    bytes.extend_from_slice(&document_number.to_le_bytes());
    encode_rid(&bytes)
}

/// The quoted ETag of a write: unique per container LSN.
pub fn etag(container_number: u64, lsn: u64) -> String {
    format!(
        "\"{:08x}-{:04x}-0000-0000-{:012x}\"",
        container_number as u32,
        (lsn >> 48) as u16,
        lsn & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let record = ItemRecord {
            last_modified_ms: -3,
            lsn: 9,
            document_number: 4,
            ttl: ItemTtl::Secs(7),
            body: b"{\"id\":\"a\"}".to_vec(),
        };
        assert_eq!(ItemRecord::decode(&record.encode()), Some(record.clone()));
        assert_eq!(
            ItemRecord::decode_header(&record.encode()),
            Some((-3, 9, ItemTtl::Secs(7)))
        );
        assert_eq!(ItemRecord::decode(b"short"), None);
        let counters = Counters {
            items: 1,
            bytes: 2,
            lsn: 3,
            next_document_number: 4,
        };
        assert_eq!(Counters::decode(&counters.encode()), Some(counters));
        let entry = ExpiryEntry {
            lsn: 7,
            body_bytes: 8,
        };
        assert_eq!(ExpiryEntry::decode(&entry.encode()), Some(entry));
    }

    #[test]
    fn rids_have_the_services_lengths() {
        assert_eq!(database_rid(1).len(), 8);
        assert_eq!(container_rid(1, 1).len(), 12);
        assert_eq!(document_rid(1, 1, 1).len(), 24);
        assert!(!document_rid(u32::MAX, u32::MAX, u64::MAX).contains('/'));
        assert_ne!(etag(1, 1), etag(1, 2));
    }
}
