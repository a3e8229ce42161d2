//! The redb store's redo log: a file beside the store (`<store>.wal`) to which every commit
//! appends its changes, whole, and syncs before it is acknowledged, so that the store itself
//! may commit without syncing and write its copy-on-write pages only at a checkpoint.
//!
//! Why: a durable redb commit writes, for every table it touches, each changed leaf and the
//! branches above it, 4 KiB apiece, and one create touches a leaf of its own in several tables
//! (its item, its change-log entry, its change-index entry: the keys of a group's writes lie in
//! different shards' runs). That was 38 to 47 KB written per create of a 1 KiB item. Appending
//! the changes costs their own bytes, and a checkpoint writes each page once however many
//! commits changed it since the last one (`bench/results/redo-log.md`).
//!
//! A record is `[payload length u32][checksum u64][generation u64][payload]`, little-endian;
//! the checksum (xxh3) covers the generation and the payload, and the payload is a run of
//! changes `[table u8][1: put, 0: delete][key length u32][key][value length u32][value]`, the
//! value absent for a delete. Records hold absolute values, so replaying them in order over the
//! state they were appended to yields the state their commits made. Each checkpoint (a durable
//! redb commit) raises the store's generation, kept in the store in the same commit, and empties
//! the file; a record of an older generation is never replayed, so a crash between the
//! checkpoint and the emptying replays nothing twice. A torn or short record ends the replay:
//! its commit never returned, so nobody was told it happened.
//!
//! A checkpoint that the store's flusher takes while writes go on cuts the log first: the file
//! is renamed to `<store>.wal.previous` and a new one begun, whose records carry the next
//! generation, the one the checkpoint will store. The checkpoint then removes the previous
//! file. Opening replays the previous file's records of the store's generation, then the
//! current file's of that generation or, after a cut, of the next one.
//!
//! A file's first MiB is rewritten rather than grown: syncing a write into blocks a file
//! already has needs no change to the file system's own records, where a write that grows the
//! file does (on ext4 here, a sync took 110 µs instead of 172, and 50 µs of system time instead
//! of 70; `bench/results/redo-log-reuse.md`). So a file is begun with its first MiB written as
//! zeros, and emptying the log starts it again at its beginning without shortening it. What
//! lies past the log's end is zeros or older records: every append writes, after its record, an
//! end marker (a header of zeros, which is never a whole record), and an older record is of an
//! older generation, never replayed. A clean close shortens the file to its first MiB.
//!
//! This module frames, appends, syncs and reads records; it knows nothing of redb, and the
//! store decides when to checkpoint.

use crate::api::{StorageError, Table};
use crate::overlay::Changes;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes before a record's payload: length, checksum, generation.
const HEADER_BYTES: usize = 4 + 8 + 8;
/// Bytes written as zeros when a log file is begun, so that the syncs of the first MiB of
/// records rewrite blocks the file has (see the module's documentation).
const BEGUN_ZEROED_BYTES: u64 = 1024 * 1024;
/// Written after every record: a header of zeros, which is never a whole record (its checksum
/// is not that of an empty payload), so a replay stops there and never reads on into what an
/// earlier use of the file left.
const END_MARKER: [u8; HEADER_BYTES] = [0; HEADER_BYTES];

/// The largest payload a record may claim; a longer claim is a torn or foreign record. One
/// commit's changes are bounded by the engine's group and item limits far below this.
const PAYLOAD_BYTES_MAX: usize = 1 << 31;

fn io(error: impl std::fmt::Display) -> StorageError {
    StorageError::Io(error.to_string())
}

/// One replayed change: its table, its key, and its value (`None`: deleted).
pub type Change = (Table, Vec<u8>, Option<Vec<u8>>);

/// The redo log's file, open for appending.
pub(crate) struct RedoLog {
    file: File,
    path: PathBuf,
    /// Where the next record goes: the bytes appended since the log was last emptied.
    bytes: u64,
    /// The file as `open` read it (to find where its records end), kept for the replay that
    /// follows, so that a log of up to the checkpoint size is read once at start-up; dropped at
    /// the first write.
    read_at_open: Option<Vec<u8>>,
}

/// The redo log's path for the store file at `store_path`.
pub(crate) fn path_for(store_path: &Path) -> PathBuf {
    let mut name = store_path.as_os_str().to_owned();
    name.push(".wal");
    PathBuf::from(name)
}

/// Where a cut moves the log at `log_path`, until the checkpoint after the cut removes it.
pub(crate) fn previous_path_for(log_path: &Path) -> PathBuf {
    let mut name = log_path.as_os_str().to_owned();
    name.push(".previous");
    PathBuf::from(name)
}

/// Removes the previous file of the log at `log_path`, once a checkpoint holds what it recorded.
pub(crate) fn remove_previous(log_path: &Path) -> Result<(), StorageError> {
    match std::fs::remove_file(previous_path_for(log_path)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io(error)),
        _ => Ok(()),
    }
}

/// Opens the log file at `path` for reading and writing, creating it, and writes zeros over
/// what it lacks of its first MiB, synced.
fn open_file(path: &Path) -> Result<File, StorageError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let length = file.metadata().map_err(io)?.len();
    if length < BEGUN_ZEROED_BYTES {
        let zeros = vec![0; (BEGUN_ZEROED_BYTES - length) as usize];
        write_in_pages(&file, &zeros, length)?;
        file.sync_data().map_err(io)?;
    }
    Ok(file)
}

/// The page size the log's writes are cut at (see [`write_in_pages`]).
const PAGE_BYTES: u64 = 4096;

/// Writes `bytes` at `offset` in pieces that never cross a page boundary. The kernel keeps a
/// file's cached pages in groups (folios) sized by the writes that made them, and counts a whole
/// group as written whenever a write dirties part of it; a log file rewritten in place would
/// otherwise count a MiB written for each record that lands in the MiB of zeros it began with
/// (the disk writes only the changed blocks either way). Seeks and writes (portable) rather
/// than writing at an offset, which only Unix's file API has.
fn write_in_pages(mut file: &File, bytes: &[u8], offset: u64) -> Result<(), StorageError> {
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut at = 0;
    while at < bytes.len() {
        let position = offset + at as u64;
        let piece = (PAGE_BYTES - position % PAGE_BYTES).min((bytes.len() - at) as u64) as usize;
        file.write_all(&bytes[at..at + piece]).map_err(io)?;
        at += piece;
    }
    Ok(())
}

/// The bytes of the whole records at the start of `bytes`, of any generation.
fn records_end(bytes: &[u8]) -> u64 {
    let mut rest = bytes;
    while let Some((_, _, after)) = next_record(rest) {
        rest = after;
    }
    (bytes.len() - rest.len()) as u64
}

/// The commits the previous file of the log at `log_path` holds for `generation` (none when
/// there is no such file), read as [`records_in`] reads.
pub(crate) fn previous_records(
    log_path: &Path,
    generation: u64,
) -> Result<Option<Vec<Vec<Change>>>, StorageError> {
    match std::fs::read(previous_path_for(log_path)) {
        Ok(bytes) => Ok(Some(records_in(&bytes, generation))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io(error)),
    }
}

/// Syncs the directory holding `path`: a file's name must survive a crash too, not only its
/// contents, and syncing the file does not promise that its directory entry is on disk.
fn sync_directory(path: &Path) -> Result<(), StorageError> {
    if let Some(directory) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        File::open(directory)
            .and_then(|directory| directory.sync_all())
            .map_err(io)?;
    }
    Ok(())
}

impl RedoLog {
    /// Opens (or creates) the log at `path`, to append after the whole records it holds; the
    /// store replays them first.
    pub(crate) fn open(path: &Path) -> Result<RedoLog, StorageError> {
        let file = open_file(path)?;
        sync_directory(path)?;
        let mut log = RedoLog {
            file,
            path: path.to_path_buf(),
            bytes: 0,
            read_at_open: None,
        };
        let contents = log.read_all()?;
        log.bytes = records_end(&contents);
        log.read_at_open = Some(contents);
        Ok(log)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Moves this file aside as the previous one and begins an empty one, both names durable
    /// before it returns. Every record appended before it is in the previous file.
    /// The new one is begun with its MiB of zeros.
    pub(crate) fn cut(&mut self) -> Result<(), StorageError> {
        std::fs::rename(&self.path, previous_path_for(&self.path)).map_err(io)?;
        let file = open_file(&self.path)?;
        sync_directory(&self.path)?;
        self.file = file;
        self.bytes = 0;
        self.read_at_open = None;
        Ok(())
    }

    /// The commits the log holds for `generation` or, when `cut` (a cut whose checkpoint never
    /// committed left a previous file), for the generation after it if its records carry that
    /// one; and the generation read. The first call reads what `open` read; a later one reads
    /// the file again.
    pub(crate) fn records_from(
        &mut self,
        generation: u64,
        cut: bool,
    ) -> Result<(Vec<Vec<Change>>, u64), StorageError> {
        let bytes = match self.read_at_open.take() {
            Some(bytes) => bytes,
            None => self.read_all()?,
        };
        let read = match next_record(&bytes) {
            Some((first, _, _)) if cut && first == generation + 1 => first,
            _ => generation,
        };
        Ok((records_in(&bytes, read), read))
    }

    fn read_all(&mut self) -> Result<Vec<u8>, StorageError> {
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut bytes = Vec::new();
        self.file.read_to_end(&mut bytes).map_err(io)?;
        Ok(bytes)
    }

    /// Bytes appended since the log was last emptied.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends one commit's changes as a record of `generation` and syncs it: when this returns
    /// `Ok`, a crash cannot lose the record. Returns the bytes written (the record and the end
    /// marker after it).
    pub(crate) fn append(
        &mut self,
        generation: u64,
        tables: &[(Table, &Changes)],
    ) -> Result<u64, StorageError> {
        self.read_at_open = None;
        let mut record = encode(generation, tables)?;
        let length = record.len() as u64;
        record.extend_from_slice(&END_MARKER);
        write_in_pages(&self.file, &record, self.bytes)?;
        self.file.sync_data().map_err(io)?;
        self.bytes += length;
        Ok(record.len() as u64)
    }

    /// Empties the log, and removes a previous file a cut left, after a checkpoint made
    /// everything in them durable in the store. The file keeps its length, for the next
    /// records to rewrite; its end marker goes first (unsynced: what it hides is of an older
    /// generation now).
    pub(crate) fn empty(&mut self) -> Result<(), StorageError> {
        self.read_at_open = None;
        write_in_pages(&self.file, &END_MARKER, 0)?;
        self.bytes = 0;
        remove_previous(&self.path)
    }

    /// After a closing checkpoint: shortens the (empty) log to the zeros it is begun with, so
    /// a closed store keeps a MiB of log beside it.
    pub(crate) fn trim(&mut self) -> Result<(), StorageError> {
        if self.file.metadata().map_err(io)?.len() > BEGUN_ZEROED_BYTES {
            self.file.set_len(BEGUN_ZEROED_BYTES).map_err(io)?;
        }
        Ok(())
    }
}

/// The commits `bytes` hold for `generation`, oldest first, up to the first record that is
/// torn, short, or of another generation.
fn records_in(bytes: &[u8], generation: u64) -> Vec<Vec<Change>> {
    let mut commits = Vec::new();
    let mut rest = bytes;
    while let Some((record_generation, payload, after)) = next_record(rest) {
        if record_generation != generation {
            break;
        }
        let Some(changes) = decode_payload(payload) else {
            break;
        };
        commits.push(changes);
        rest = after;
    }
    commits
}

/// Every whole record of the redo log at `path`, whatever its generation, oldest first: for
/// looking at what commits wrote (`examples/redo_replay.rs`), never for recovery, which replays
/// only the store's generation.
pub fn read_redo_log(path: &Path) -> Result<Vec<Vec<Change>>, StorageError> {
    let bytes = std::fs::read(path).map_err(io)?;
    let mut commits = Vec::new();
    let mut rest = bytes.as_slice();
    while let Some((_, payload, after)) = next_record(rest) {
        let Some(changes) = decode_payload(payload) else {
            break;
        };
        commits.push(changes);
        rest = after;
    }
    Ok(commits)
}

fn table_code(table: Table) -> u8 {
    // Eight tables: the index always fits.
    table.index() as u8
}

fn encode(generation: u64, tables: &[(Table, &Changes)]) -> Result<Vec<u8>, StorageError> {
    let mut payload = Vec::new();
    for (table, changes) in tables {
        for (key, change) in *changes {
            payload.push(table_code(*table));
            payload.push(u8::from(change.is_some()));
            push_length_prefixed(&mut payload, key)?;
            if let Some(value) = change {
                push_length_prefixed(&mut payload, value)?;
            }
        }
    }
    let length = u32::try_from(payload.len())
        .ok()
        .filter(|length| (*length as usize) < PAYLOAD_BYTES_MAX)
        .ok_or_else(|| StorageError::Io("a commit too large for the redo log".into()))?;
    let mut record = Vec::with_capacity(HEADER_BYTES + payload.len());
    record.extend_from_slice(&length.to_le_bytes());
    record.extend_from_slice(&checksum(generation, &payload).to_le_bytes());
    record.extend_from_slice(&generation.to_le_bytes());
    record.extend_from_slice(&payload);
    Ok(record)
}

fn push_length_prefixed(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), StorageError> {
    let length = u32::try_from(bytes.len())
        .map_err(|_| StorageError::Io("a key or value too large for the redo log".into()))?;
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

fn checksum(generation: u64, payload: &[u8]) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&generation.to_le_bytes());
    hasher.update(payload);
    hasher.digest()
}

/// The first record of `bytes` (its generation and payload) and what follows it, if the record
/// is whole and its checksum holds.
fn next_record(bytes: &[u8]) -> Option<(u64, &[u8], &[u8])> {
    let header = bytes.get(..HEADER_BYTES)?;
    let length = u32::from_le_bytes(header.get(0..4)?.try_into().ok()?) as usize;
    let stored = u64::from_le_bytes(header.get(4..12)?.try_into().ok()?);
    let generation = u64::from_le_bytes(header.get(12..20)?.try_into().ok()?);
    let end = HEADER_BYTES.checked_add(length)?;
    let payload = bytes.get(HEADER_BYTES..end)?;
    (checksum(generation, payload) == stored).then(|| (generation, payload, &bytes[end..]))
}

fn take<'a>(bytes: &mut &'a [u8], count: usize) -> Option<&'a [u8]> {
    let (taken, rest) = (bytes.get(..count)?, bytes.get(count..)?);
    *bytes = rest;
    Some(taken)
}

fn take_length_prefixed(bytes: &mut &[u8]) -> Option<Vec<u8>> {
    let length = u32::from_le_bytes(take(bytes, 4)?.try_into().ok()?) as usize;
    Some(take(bytes, length)?.to_vec())
}

fn decode_payload(mut payload: &[u8]) -> Option<Vec<Change>> {
    let mut changes = Vec::new();
    while !payload.is_empty() {
        let code = take(&mut payload, 2)?;
        let table = *Table::ALL.get(usize::from(code[0]))?;
        let key = take_length_prefixed(&mut payload)?;
        let value = match code[1] {
            0 => None,
            1 => Some(take_length_prefixed(&mut payload)?),
            _ => return None,
        };
        changes.push((table, key, value));
    }
    Some(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(pairs: &[(&[u8], Option<&[u8]>)]) -> Changes {
        pairs
            .iter()
            .map(|(key, value)| (key.to_vec(), value.map(bytes::Bytes::copy_from_slice)))
            .collect()
    }

    #[test]
    fn records_come_back_in_order_until_a_torn_one() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = directory.path().join("store.redb.wal");
        let mut log = RedoLog::open(&path).expect("open");
        let first = changes(&[(b"a", Some(b"1")), (b"b", None)]);
        let second = changes(&[(b"c", Some(b""))]);
        log.append(7, &[(Table::Items, &first), (Table::Counters, &second)])
            .expect("append");
        log.append(7, &[(Table::ChangeLog, &second)])
            .expect("append");
        let whole = log.bytes();
        log.append(7, &[(Table::Index, &first)]).expect("append");
        // A crash in the middle of the third record's write: it is dropped, the first two stay.
        let file = OpenOptions::new().write(true).open(&path).expect("reopen");
        file.set_len(whole + 9).expect("tear");
        let mut reopened = RedoLog::open(&path).expect("reopen");
        let commits = reopened
            .records_from(7, false)
            .map(|(commits, _)| commits)
            .expect("records");
        assert_eq!(
            commits,
            vec![
                vec![
                    (Table::Items, b"a".to_vec(), Some(b"1".to_vec())),
                    (Table::Items, b"b".to_vec(), None),
                    (Table::Counters, b"c".to_vec(), Some(Vec::new())),
                ],
                vec![(Table::ChangeLog, b"c".to_vec(), Some(Vec::new()))],
            ]
        );
        // Another generation's records are never replayed.
        assert!(reopened
            .records_from(8, false)
            .map(|(commits, _)| commits)
            .expect("records")
            .is_empty());
        reopened.empty().expect("empty");
        assert!(reopened
            .records_from(7, false)
            .map(|(commits, _)| commits)
            .expect("records")
            .is_empty());
    }

    fn length(path: &Path) -> u64 {
        std::fs::metadata(path).expect("metadata").len()
    }

    #[test]
    fn the_end_marker_is_never_a_whole_record() {
        assert!(next_record(&END_MARKER).is_none());
        assert!(next_record(&[0; 4096]).is_none());
    }

    #[test]
    fn an_emptied_log_is_rewritten_in_place_and_replays_only_what_follows() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = directory.path().join("store.redb.wal");
        let mut log = RedoLog::open(&path).expect("open");
        assert_eq!(length(&path), BEGUN_ZEROED_BYTES);
        let old = changes(&[(b"old", Some(&[1; 300]))]);
        for _ in 0..5 {
            log.append(3, &[(Table::Items, &old)]).expect("append");
        }
        log.empty().expect("empty");
        let new = changes(&[(b"new", Some(b"2"))]);
        log.append(3, &[(Table::Items, &new)]).expect("append");
        // Records within the first MiB rewrite zeros: the file never grew.
        assert_eq!(length(&path), BEGUN_ZEROED_BYTES);
        // The older records past the new one are still in the file, even of the same
        // generation, and the end marker keeps a replay from reading on into them.
        let commits = RedoLog::open(&path)
            .expect("reopen")
            .records_from(3, false)
            .map(|(commits, _)| commits)
            .expect("records");
        assert_eq!(
            commits,
            vec![vec![(Table::Items, b"new".to_vec(), Some(b"2".to_vec()))]]
        );
        assert_eq!(read_redo_log(&path).expect("read").len(), 1);
    }

    #[test]
    fn a_cut_begins_a_file_of_zeros_and_a_close_trims_the_log() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = directory.path().join("store.redb.wal");
        let mut log = RedoLog::open(&path).expect("open");
        let big = changes(&[(b"big", Some(&[7; 700_000]))]);
        log.append(1, &[(Table::Items, &big)]).expect("append");
        log.append(1, &[(Table::Items, &big)]).expect("append");
        let grown = length(&path);
        assert!(grown > BEGUN_ZEROED_BYTES);
        log.cut().expect("cut");
        assert_eq!(length(&previous_path_for(&path)), grown);
        assert_eq!(length(&path), BEGUN_ZEROED_BYTES);
        let small = changes(&[(b"small", Some(b"s"))]);
        log.append(2, &[(Table::Items, &small)]).expect("append");
        let (commits, generation) = RedoLog::open(&path)
            .expect("reopen")
            .records_from(1, true)
            .expect("records");
        assert_eq!((commits.len(), generation), (1, 2));
        remove_previous(&path).expect("remove");
        assert!(!previous_path_for(&path).exists());
        // Emptied in place after a checkpoint that grew the file, then a clean close: a MiB of
        // log, holding no record.
        log.append(2, &[(Table::Items, &big)]).expect("append");
        log.append(2, &[(Table::Items, &big)]).expect("append");
        assert!(length(&path) > BEGUN_ZEROED_BYTES);
        log.empty().expect("empty");
        log.trim().expect("trim");
        assert_eq!(length(&path), BEGUN_ZEROED_BYTES);
        assert!(read_redo_log(&path).expect("read").is_empty());
    }

    #[test]
    fn a_flipped_byte_ends_the_replay_there() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = directory.path().join("store.redb.wal");
        let mut log = RedoLog::open(&path).expect("open");
        let one = changes(&[(b"k", Some(b"v"))]);
        log.append(1, &[(Table::Items, &one)]).expect("append");
        log.append(1, &[(Table::Items, &one)]).expect("append");
        let mut bytes = std::fs::read(&path).expect("read");
        let last = log.bytes() as usize - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).expect("write");
        let commits = RedoLog::open(&path)
            .expect("reopen")
            .records_from(1, false)
            .map(|(commits, _)| commits)
            .expect("records");
        assert_eq!(commits.len(), 1);
    }
}
