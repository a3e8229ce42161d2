//! The redb store file's tables: which redb table holds each [`Table`], how changes are written
//! into them (by the flusher, a checkpoint or the replay of the redo log), how a snapshot reads
//! them, and the moves from the layouts that kept item bodies under their keys or whole.
//!
//! Items are kept in two tables. `item_keys` maps an item's key to a sequence number, and
//! `items` maps sequence numbers to bodies. A new item's body gets the next number, so the
//! bodies a flush writes go past the end of `items` and fill their leaves (a replaced item's
//! body is overwritten under its number).
//! Item keys are spread at random (ids are often random), so a body kept under its key landed
//! in a leaf of its own among older ones: a 4 KiB leaf holds three bodies of 1 KiB and splits in
//! half when a fourth arrives, so leaves were half full, and each flush or checkpoint rewrote
//! one such leaf per item. `item_keys` still takes each key where it falls, but a leaf holds
//! sixty of its entries. A reader of an item looks it up in both tables. Bodies are kept in
//! pieces that fill their leaves (`redb_bodies.rs`).
//!
//! Every other table keeps the engine's keys and values as they are. redb packs only keys past a
//! table's end; new keys that arrive in order somewhere inside it (one container's change-log
//! positions among others', ids that count up) would split a leaf in half for each leaf's worth,
//! so [`write_keyed`] packs such runs through a cursor.

use crate::api::{KeyRange, StorageError, Table};
use crate::redb_bodies::{
    cut_whole_bodies, has_later_pieces, BodyTables, Piece, FIRST_PIECES, LATER_PIECES, PIECE_BYTES,
    WHOLE_BODIES,
};
use redb::{ReadableTable, TableDefinition};
use std::ops::Bound;
use std::sync::OnceLock;

/// The redb table of each [`Table`]; [`Table::Items`]' holds its keys' sequence numbers.
const DEFINITIONS: [TableDefinition<'static, &'static [u8], &'static [u8]>; 8] = [
    TableDefinition::new("catalog"),
    TableDefinition::new("item_keys"),
    TableDefinition::new("expiry"),
    TableDefinition::new("counters"),
    TableDefinition::new("resource_ids"),
    TableDefinition::new("change_index"),
    TableDefinition::new("change_log"),
    TableDefinition::new("index"),
];

/// The earlier layout's items, and the name they take while they are moved.
pub(crate) const EARLIER_ITEMS: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("items");
const MOVING_ITEMS: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("items_being_moved");

/// One change: a key and its new value, or `None` for a deletion.
pub(crate) type Change<'a> = (&'a [u8], Option<&'a [u8]>);

/// A redb failure as the storage layer reports it (every redb module's).
pub(crate) fn io(error: impl std::fmt::Display) -> StorageError {
    StorageError::Io(error.to_string())
}

fn definition(table: Table) -> TableDefinition<'static, &'static [u8], &'static [u8]> {
    DEFINITIONS[table.index()]
}

fn sequence_bytes(sequence: u64) -> [u8; 8] {
    sequence.to_be_bytes()
}

fn sequence(value: &[u8]) -> Result<u64, StorageError> {
    let bytes = <[u8; 8]>::try_from(value)
        .map_err(|_| StorageError::Corrupted("an item key without a sequence number".into()))?;
    Ok(u64::from_be_bytes(bytes))
}

/// Makes sure every table exists, bringing the items of a file written by an earlier release
/// into this layout first (in `transaction`, so a crash leaves the file as it was): bodies kept
/// whole are cut into pieces, and items kept under their keys are numbered and cut.
pub(crate) fn prepare(transaction: &redb::WriteTransaction) -> Result<(), StorageError> {
    match transaction.open_table(FIRST_PIECES) {
        Ok(_) => {}
        Err(redb::TableError::TableTypeMismatch { .. }) => {
            match transaction.open_table(WHOLE_BODIES) {
                Ok(whole) => {
                    drop(whole);
                    cut_whole_bodies(transaction).map_err(io)?;
                }
                Err(redb::TableError::TableTypeMismatch { .. }) => move_earlier_items(transaction)?,
                Err(error) => return Err(io(error)),
            }
        }
        Err(error) => return Err(io(error)),
    }
    transaction.open_table(LATER_PIECES).map_err(io)?;
    for table in Table::ALL {
        transaction.open_table(definition(table)).map_err(io)?;
    }
    Ok(())
}

/// Moves the earlier layout's items, in key order, into `item_keys` and the body tables, each
/// appended through a cursor (which builds each leaf once), and drops the earlier table.
fn move_earlier_items(transaction: &redb::WriteTransaction) -> Result<(), StorageError> {
    transaction
        .rename_table(EARLIER_ITEMS, MOVING_ITEMS)
        .map_err(io)?;
    let moved = {
        let earlier = transaction.open_table(MOVING_ITEMS).map_err(io)?;
        let mut keys = transaction
            .open_table(definition(Table::Items))
            .map_err(io)?;
        let mut bodies = BodyTables::open(transaction).map_err(io)?;
        let mut key_cursor = keys
            .upper_bound_mut(Bound::<&[u8]>::Unbounded)
            .map_err(io)?;
        let mut appender = bodies.appender().map_err(io)?;
        let mut moved = 0u64;
        for entry in earlier.iter().map_err(io)? {
            let (key, body) = entry.map_err(io)?;
            key_cursor
                .insert_before(key.value(), sequence_bytes(moved).as_slice())
                .map_err(io)?;
            appender.append(moved, body.value()).map_err(io)?;
            moved += 1;
        }
        key_cursor.close().map_err(io)?;
        appender.close().map_err(io)?;
        moved
    };
    transaction.delete_table(MOVING_ITEMS).map_err(io)?;
    tracing::info!(
        items = moved,
        "moved the items into the layout that keeps their bodies in arrival order"
    );
    Ok(())
}

/// Writes `changes` of `table`, in ascending key order with each key once, into `transaction`.
pub(crate) fn write_sorted<'c>(
    transaction: &redb::WriteTransaction,
    table: Table,
    changes: impl IntoIterator<Item = Change<'c>>,
) -> Result<(), StorageError> {
    let mut opened = transaction.open_table(definition(table)).map_err(io)?;
    if table == Table::Items {
        write_items(transaction, &mut opened, changes)
    } else {
        write_keyed(&mut opened, changes)
    }
}

/// Writes item changes: a replaced item's body is overwritten under its number, a deleted
/// item's removed with its key, and new items numbered in order, their bodies appended.
fn write_items<'c>(
    transaction: &redb::WriteTransaction,
    keys: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    changes: impl IntoIterator<Item = Change<'c>>,
) -> Result<(), StorageError> {
    let mut bodies = BodyTables::open(transaction).map_err(io)?;
    let first = bodies.next_number().map_err(io)?;
    let mut new_keys = Vec::new();
    let mut new_bodies = Vec::new();
    for (key, body) in changes {
        let Some(body) = body else {
            if let Some(number) = keys.remove(key).map_err(io)? {
                bodies.remove(sequence(number.value())?).map_err(io)?;
            }
            continue;
        };
        let held = keys.get(key).map_err(io)?;
        let held = held.map(|number| sequence(number.value())).transpose()?;
        if let Some(number) = held {
            bodies.overwrite(number, body).map_err(io)?;
        } else {
            new_keys.push((key, sequence_bytes(first + new_bodies.len() as u64)));
            new_bodies.push(body);
        }
    }
    write_keyed(
        keys,
        new_keys
            .iter()
            .map(|(key, number)| (*key, Some(number.as_slice()))),
    )?;
    let mut appender = bodies.appender().map_err(io)?;
    for (number, body) in (first..).zip(new_bodies) {
        appender.append(number, body).map_err(io)?;
    }
    appender.close().map_err(io)
}

/// Writes `changes` into `table`, each where it falls, except runs of new keys: after a new key,
/// the new keys that follow it in the same gap of the table (the change log's positions, ids
/// that count up) are buffered by a cursor and packed into full leaves, where inserting them one
/// by one would split a leaf in half for each leaf's worth. Where runs do not happen (keys
/// spread at random) the attempts stop, since each costs a descent of the tree.
fn write_keyed<'c>(
    table: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    changes: impl IntoIterator<Item = Change<'c>>,
) -> Result<(), StorageError> {
    let mut changes = changes.into_iter().peekable();
    let mut runs = Runs::default();
    while let Some((key, value)) = changes.next() {
        let Some(value) = value else {
            table.remove(key).map_err(io)?;
            continue;
        };
        let replaced = table.insert(key, value).map_err(io)?.is_some();
        if replaced || !runs.worth_trying() || !matches!(changes.peek(), Some((_, Some(_)))) {
            continue;
        }
        let mut cursor = table.lower_bound_mut(Bound::Excluded(key)).map_err(io)?;
        let mut packed = 0;
        while let Some(&(next, Some(value))) = changes.peek() {
            if !inserted_in_gap(&mut cursor, next, value)? {
                break;
            }
            changes.next();
            packed += 1;
        }
        cursor.close().map_err(io)?;
        runs.tried(packed);
    }
    Ok(())
}

/// How the attempts to pack runs of new keys went in one write.
#[derive(Default)]
struct Runs {
    tries: u64,
    packed: u64,
}

impl Runs {
    /// Packing two keys or more per attempt pays for the attempts; the first few are free.
    fn worth_trying(&self) -> bool {
        self.tries < 16 || self.packed >= 2 * self.tries
    }

    fn tried(&mut self, packed: u64) {
        self.tries += 1;
        self.packed += packed;
    }
}

/// Inserts `key` into the cursor's gap; false when it does not sort inside the gap.
fn inserted_in_gap(
    cursor: &mut redb::CursorMut<'_, &'static [u8], &'static [u8]>,
    key: &[u8],
    value: &[u8],
) -> Result<bool, StorageError> {
    match cursor.insert_before(key, value) {
        Ok(()) => Ok(true),
        Err(redb::CursorError::UnorderedKey) => Ok(false),
        Err(error) => Err(io(error)),
    }
}

type ReadTable = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;
type FirstPieces = redb::ReadOnlyTable<u64, Piece>;
type LaterPieces = redb::ReadOnlyTable<(u64, u32), Piece>;

/// A redb value or key, readable as bytes while its guard lives, or a body put together from
/// its pieces.
pub(crate) enum Guarded<'a> {
    Stored(redb::AccessGuard<'a, &'static [u8]>),
    Piece(redb::AccessGuard<'a, Piece>),
    Joined(Vec<u8>),
}

impl AsRef<[u8]> for Guarded<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Guarded::Stored(guard) => guard.value(),
            Guarded::Piece(guard) => guard.value(),
            Guarded::Joined(bytes) => bytes,
        }
    }
}

impl Guarded<'_> {
    fn into_vec(self) -> Vec<u8> {
        match self {
            Guarded::Joined(bytes) => bytes,
            guarded => guarded.as_ref().to_vec(),
        }
    }
}

/// A snapshot's entries of one range, in scan order.
pub(crate) type Entries<'a> = Box<dyn Iterator<Item = FileEntry<'a>> + 'a>;

/// One entry of a snapshot's scan (the overlay's `BaseEntry` of guarded bytes).
pub(crate) type FileEntry<'a> = Result<(Guarded<'a>, Guarded<'a>), StorageError>;

/// A read transaction of the store file, its tables opened on first use, since most requests
/// touch one or two of them, and kept (redb finds a table by name in its table tree, which cost
/// a point read about 5 % of its instructions when done on every call). Readers share one until
/// the file changes (`Shared::snapshot`), so most reads neither begin a transaction nor open a
/// table.
pub(crate) struct FileSnapshot {
    transaction: redb::ReadTransaction,
    tables: [OnceLock<ReadTable>; Table::ALL.len()],
    first_pieces: OnceLock<FirstPieces>,
    later_pieces: OnceLock<LaterPieces>,
}

/// `cell`'s table, opened by `open` on first use.
fn opened<T>(
    cell: &OnceLock<T>,
    open: impl FnOnce() -> Result<T, redb::TableError>,
) -> Result<&T, StorageError> {
    if let Some(opened) = cell.get() {
        return Ok(opened);
    }
    let opened = open().map_err(io)?;
    Ok(cell.get_or_init(|| opened))
}

impl FileSnapshot {
    pub(crate) fn new(transaction: redb::ReadTransaction) -> FileSnapshot {
        FileSnapshot {
            transaction,
            tables: Default::default(),
            first_pieces: OnceLock::new(),
            later_pieces: OnceLock::new(),
        }
    }

    fn table(&self, table: Table) -> Result<&ReadTable, StorageError> {
        opened(&self.tables[table.index()], || {
            self.transaction.open_table(definition(table))
        })
    }

    /// The body an item key's entry numbers: its first piece, joined to the others if it has
    /// any.
    fn body(&self, number: &[u8]) -> Result<Guarded<'static>, StorageError> {
        let number = sequence(number)?;
        let first = opened(&self.first_pieces, || {
            self.transaction.open_table(FIRST_PIECES)
        })?;
        let first = first
            .get(number)
            .map_err(io)?
            .ok_or_else(|| StorageError::Corrupted("an item key whose body is missing".into()))?;
        if !has_later_pieces(first.value()) {
            return Ok(Guarded::Piece(first));
        }
        let later = opened(&self.later_pieces, || {
            self.transaction.open_table(LATER_PIECES)
        })?;
        let mut body = Vec::with_capacity(2 * PIECE_BYTES);
        body.extend_from_slice(first.value());
        // One lookup per piece: cheaper than a range for the one or two most bodies have.
        for place in 1.. {
            let Some(piece) = later.get((number, place)).map_err(io)? else {
                break;
            };
            body.extend_from_slice(piece.value());
            if !has_later_pieces(piece.value()) {
                break;
            }
        }
        Ok(Guarded::Joined(body))
    }

    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let Some(found) = self.table(table)?.get(key).map_err(io)? else {
            return Ok(None);
        };
        if table != Table::Items {
            return Ok(Some(found.value().to_vec()));
        }
        Ok(Some(self.body(found.value())?.into_vec()))
    }

    /// The entries of `range`, in scan order.
    pub(crate) fn entries(
        &self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
    ) -> Result<Entries<'_>, StorageError> {
        let entries = self
            .table(table)?
            .range::<&[u8]>(range.as_slices())
            .map_err(io)?;
        let entries: Entries<'_> = if reverse {
            Box::new(entries.rev().map(guarded))
        } else {
            Box::new(entries.map(guarded))
        };
        if table != Table::Items {
            return Ok(entries);
        }
        Ok(Box::new(entries.map(|entry| {
            let (key, number) = entry?;
            Ok((key, self.body(number.as_ref())?))
        })))
    }
}

type RedbEntry<'a> = Result<
    (
        redb::AccessGuard<'a, &'static [u8]>,
        redb::AccessGuard<'a, &'static [u8]>,
    ),
    redb::StorageError,
>;

fn guarded(entry: RedbEntry<'_>) -> FileEntry<'_> {
    entry
        .map(|(key, value)| (Guarded::Stored(key), Guarded::Stored(value)))
        .map_err(io)
}
