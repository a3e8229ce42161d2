//! The rows one item create writes in LetheDB today, rebuilt from the layouts that
//! `crates/lethedb-engine/src/keys.rs`, `records.rs`, `counters.rs` and `feed/change_log.rs`
//! document, so that each candidate store commits the same keys and values the engine would.
//!
//! A create of a document `{"id", "pk", "value", "payload"}` without its own `ttl`, in an
//! EPK-ordered container with the default indexing policy (every path, range entries) and 64
//! shards, writes: the item (record header + body), its expiry entry (class "default", keyed by
//! last-modified time, since an item without `ttl` follows the container's default), its
//! resource-id entry, its change-index entry, its change-log entry (which holds the whole record
//! again), one index entry per indexed path (`id`, `pk`, `value`, `payload`, `_ts`) and its
//! shard's counters row. The engine reads the item's key (a create must find nothing) and the
//! shard's counters first. This module only builds bytes; it decides nothing and reads nothing.

/// The tables a create touches (LetheDB's `Table`, less the catalog).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Items,
    Expiry,
    Counters,
    ResourceIds,
    ChangeIndex,
    ChangeLog,
    Index,
}

impl Table {
    /// Every table, in the order stores index their handles by.
    pub const ALL: [Table; 7] = [
        Table::Items,
        Table::Expiry,
        Table::Counters,
        Table::ResourceIds,
        Table::ChangeIndex,
        Table::ChangeLog,
        Table::Index,
    ];

    /// The table's name in a store.
    pub fn name(self) -> &'static str {
        match self {
            Table::Items => "items",
            Table::Expiry => "expiry",
            Table::Counters => "counters",
            Table::ResourceIds => "resource_ids",
            Table::ChangeIndex => "change_index",
            Table::ChangeLog => "change_log",
            Table::Index => "index",
        }
    }

    /// The table's position in [`Table::ALL`].
    pub fn position(self) -> usize {
        Table::ALL
            .iter()
            .position(|table| *table == self)
            .unwrap_or(0)
    }
}

/// One key and value to store.
pub struct Row {
    pub table: Table,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// The container every write goes to (its 8-byte number starts every per-item key).
const CONTAINER_NUMBER: u64 = 7;
/// Shards per container (`partitions/shards.rs`, `SHARDS_DEFAULT`).
pub const SHARDS: u16 = 64;
/// The record format's version byte and header length (`records.rs`).
const ITEM_RECORD_VERSION: u8 = 1;
/// The most bytes of a text an index entry keeps (`lethedb_query::SORT_KEY_TEXT_BYTES_MAX`).
const SORT_KEY_TEXT_BYTES_MAX: usize = 128;

/// One create a client asks for: its partition, id and JSON body.
pub struct Create {
    pub partition: u16,
    pub id: String,
    pub value: u64,
    pub body: Vec<u8>,
}

/// The partition key value's text.
pub fn partition_name(partition: u16) -> String {
    format!("pk-{partition}")
}

/// A partition's EPK point (the engine hashes the partition key; a multiplicative hash of the
/// partition's number spreads them as well here).
fn epk_point(partition: u16) -> u64 {
    u64::from(partition).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The shard a partition's writes count in: the top bits of its EPK point.
pub fn shard_of(partition: u16) -> u16 {
    (epk_point(partition) >> (64 - SHARDS.trailing_zeros())) as u16
}

/// A shard's counters row, as `counters.rs` encodes it.
#[derive(Clone, Copy, Default)]
pub struct Counters {
    pub items: u64,
    pub bytes: u64,
    pub lsn: u64,
    pub next_document_number: u64,
}

/// Bits of an LSN below its shard's field, bits of a document number for its shard, and the
/// document numbers a shard may take per millisecond, as a power of two (`partitions/shards.rs`).
const SEQUENCE_BITS: u32 = 48;
const SHARD_BITS: u32 = 6;
const DOCUMENTS_PER_MS_BITS: u32 = 8;

impl Counters {
    /// A shard's counters before its first write: its LSNs start above its own field, so the
    /// change log's keys (container + LSN) of different shards never meet.
    pub fn empty(shard: u16) -> Counters {
        Counters {
            lsn: u64::from(shard) << SEQUENCE_BITS,
            ..Counters::default()
        }
    }

    /// Takes the next document number: above the last one and the clock, the shard in its low
    /// bits, so that numbers rise with time across shards.
    fn take_document_number(&mut self, shard: u16, now_ms: i64) -> u64 {
        let clock = (now_ms.max(0) as u64) << DOCUMENTS_PER_MS_BITS;
        let high = ((self.next_document_number >> SHARD_BITS) + 1).max(clock);
        self.next_document_number = (high << SHARD_BITS) | u64::from(shard);
        self.next_document_number
    }

    pub fn encode(&self) -> Vec<u8> {
        [self.items, self.bytes, self.lsn, self.next_document_number]
            .iter()
            .flat_map(|value| value.to_be_bytes())
            .collect()
    }

    pub fn decode(bytes: &[u8]) -> Counters {
        let field = |slot: usize| {
            bytes
                .get(slot * 8..slot * 8 + 8)
                .and_then(|part| part.try_into().ok())
                .map_or(0, u64::from_be_bytes)
        };
        Counters {
            items: field(0),
            bytes: field(1),
            lsn: field(2),
            next_document_number: field(3),
        }
    }
}

/// The counters row's key of one shard: container number, `S`, the shard.
pub fn counters_key(shard: u16) -> Vec<u8> {
    let mut key = CONTAINER_NUMBER.to_be_bytes().to_vec();
    key.push(b'S');
    key.extend_from_slice(&shard.to_be_bytes());
    key
}

fn push_length_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// An item key's part after the container number: `E`, the EPK point, the length-prefixed
/// partition key bytes (the JSON array of its parts) and the id.
fn item_suffix(partition: u16, id: &str) -> Vec<u8> {
    let partition_bytes = format!("[\"{}\"]", partition_name(partition));
    let mut suffix = vec![b'E'];
    suffix.extend_from_slice(&epk_point(partition).to_be_bytes());
    push_length_prefixed(&mut suffix, partition_bytes.as_bytes());
    suffix.extend_from_slice(id.as_bytes());
    suffix
}

/// The item's key, which the writer reads before the create.
pub fn item_key(partition: u16, id: &str) -> Vec<u8> {
    [
        CONTAINER_NUMBER.to_be_bytes().as_slice(),
        &item_suffix(partition, id),
    ]
    .concat()
}

/// A time as the expiry index sorts it (offset so negative instants sort first).
fn sortable_time(time_ms: i64) -> [u8; 8] {
    ((time_ms as u64) ^ (1 << 63)).to_be_bytes()
}

/// A number's sort key: the tag and the IEEE bits made to sort as numbers do.
fn number_sort_key(number: f64, out: &mut Vec<u8>) {
    out.push(0x05);
    let bits = number.to_bits();
    let ordered = if bits >> 63 == 0 {
        bits | (1 << 63)
    } else {
        !bits
    };
    out.extend_from_slice(&ordered.to_be_bytes());
}

/// A text's sort key: the tag, at most 128 bytes, and a 2-byte terminator.
fn text_sort_key(text: &str, out: &mut Vec<u8>) {
    out.push(0x06);
    let end = text.len().min(SORT_KEY_TEXT_BYTES_MAX);
    out.extend_from_slice(&text.as_bytes()[..end]);
    out.extend_from_slice(if end == text.len() {
        &[0x00, 0x01]
    } else {
        &[0x00, 0x02]
    });
}

/// One range index entry: container, `R`, the path (segment count, segments length-prefixed),
/// the value's sort key, the document number.
fn index_entry(segment: &str, sort_key: &[u8], document_number: u64) -> Vec<u8> {
    let mut key = CONTAINER_NUMBER.to_be_bytes().to_vec();
    key.push(b'R');
    key.extend_from_slice(&1u16.to_be_bytes());
    push_length_prefixed(&mut key, segment.as_bytes());
    key.extend_from_slice(sort_key);
    key.extend_from_slice(&document_number.to_be_bytes());
    key
}

/// Whether the container indexes every path (the default policy) or nothing
/// (`indexingMode: none`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indexing {
    Default,
    None,
}

/// The rows of one create at `now_ms`, taking its LSN and document number from `counters`
/// (which it advances). The counters row itself is left to the caller, which writes each
/// shard's row once per commit as the engine's write overlay does.
pub fn create_rows(
    create: &Create,
    payload: &str,
    counters: &mut Counters,
    now_ms: i64,
    indexing: Indexing,
) -> Vec<Row> {
    counters.lsn += 1;
    let document_number = counters.take_document_number(shard_of(create.partition), now_ms);
    counters.items += 1;
    counters.bytes += create.body.len() as u64;
    let lsn = counters.lsn;
    let container = CONTAINER_NUMBER.to_be_bytes();
    let suffix = item_suffix(create.partition, &create.id);
    let mut record = vec![ITEM_RECORD_VERSION];
    for field in [now_ms as u64, lsn, document_number, 0] {
        record.extend_from_slice(&field.to_be_bytes());
    }
    record.extend_from_slice(&create.body);
    let mut log_entry = vec![0u8, 0u8];
    log_entry.extend_from_slice(&0u64.to_be_bytes());
    log_entry.extend_from_slice(&now_ms.to_be_bytes());
    push_length_prefixed(&mut log_entry, &suffix);
    log_entry.extend_from_slice(&record);
    let expiry_value = [lsn.to_be_bytes(), (create.body.len() as u64).to_be_bytes()].concat();
    let row = |table, key: Vec<u8>, value: Vec<u8>| Row { table, key, value };
    let mut rows = vec![
        row(Table::Items, [&container[..], &suffix].concat(), record),
        row(
            Table::Expiry,
            [&container[..], b"D", &sortable_time(now_ms), &suffix].concat(),
            expiry_value,
        ),
        row(
            Table::ResourceIds,
            [container, document_number.to_be_bytes()].concat(),
            suffix.clone(),
        ),
        row(
            Table::ChangeIndex,
            [&container[..], &lsn.to_be_bytes(), &suffix].concat(),
            Vec::new(),
        ),
        row(
            Table::ChangeLog,
            [&container[..], &lsn.to_be_bytes(), &0u32.to_be_bytes()].concat(),
            log_entry,
        ),
    ];
    if indexing == Indexing::Default {
        rows.extend(
            index_entries(create, payload, document_number, now_ms)
                .into_iter()
                .map(|key| row(Table::Index, key, Vec::new())),
        );
    }
    rows
}

/// The default policy's entries of the document: `id`, `pk`, `value`, `payload` and `_ts`.
fn index_entries(
    create: &Create,
    payload: &str,
    document_number: u64,
    now_ms: i64,
) -> Vec<Vec<u8>> {
    let text = |value: &str| {
        let mut key = Vec::new();
        text_sort_key(value, &mut key);
        key
    };
    let number = |value: f64| {
        let mut key = Vec::new();
        number_sort_key(value, &mut key);
        key
    };
    vec![
        index_entry("id", &text(&create.id), document_number),
        index_entry(
            "pk",
            &text(&partition_name(create.partition)),
            document_number,
        ),
        index_entry("value", &number(create.value as f64), document_number),
        index_entry("payload", &text(payload), document_number),
        index_entry("_ts", &number((now_ms / 1000) as f64), document_number),
    ]
}

/// What fills a document's `payload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Letters and digits that do not repeat: a store that compresses gains nothing a real,
    /// varied document would not give it, and each item's `payload` index entry lands at its
    /// own place in the index.
    Random,
    /// One letter repeated, as `lethedb-bench`'s items are: every item's `payload` index entry
    /// has the same value, so they are appended in document-number order.
    Repeated,
}

/// A document of `item_bytes` bytes: the fixed fields, then a `payload` string. Returns the
/// body and the payload.
pub fn document(
    id: &str,
    partition: u16,
    value: u64,
    item_bytes: usize,
    fill: Payload,
    seed: &mut u64,
) -> (Vec<u8>, String) {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let head = format!(
        "{{\"id\":\"{id}\",\"pk\":\"{}\",\"value\":{value},\"payload\":\"",
        partition_name(partition)
    );
    let pad = item_bytes.saturating_sub(head.len() + 2);
    let mut payload = String::with_capacity(pad);
    if fill == Payload::Repeated {
        payload.extend(std::iter::repeat_n('x', pad));
    }
    while payload.len() < pad {
        let random = next_random(seed);
        for shift in 0..10 {
            if payload.len() < pad {
                payload.push(char::from(
                    ALPHABET[((random >> (shift * 6)) & 63) as usize],
                ));
            }
        }
    }
    let body = format!("{head}{payload}\"}}").into_bytes();
    (body, payload)
}

/// A xorshift step: cheap, seeded per client, good enough to spread partitions and bytes.
pub fn next_random(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}
