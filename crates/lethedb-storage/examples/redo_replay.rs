//! Where the bytes of a redb commit go: replays the commits of a redo log (copied from a
//! running server's data directory, before a clean stop empties it) into fresh redb stores, and
//! prints what each store wrote to disk (`write_bytes` of `/proc/self/io`) per write.
//!
//! Variants: every commit a synced redb commit (as the store committed before the redo log),
//! the same with only one table's changes (which table's copy-on-write pages cost what), and
//! the redo log with its default checkpoint. Writes are counted as change-log entries (one per
//! create, replace or delete). Linux only.
//!
//!   cargo run --release -p lethedb-storage --example redo_replay -- LOG SCRATCH_DIR

use lethedb_storage::{
    read_redo_log, RedbStore, Storage, StorageError, Table, CACHE_BYTES_DEFAULT,
    CHECKPOINT_LOG_BYTES_DEFAULT,
};
use std::path::Path;

type Commits = Vec<Vec<(Table, Vec<u8>, Option<Vec<u8>>)>>;

fn write_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|line| line.strip_prefix("write_bytes: "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

/// Replays `commits` (only `table`'s changes when given) into a fresh store at `path`; the
/// bytes written, from the open after creation to the close after the last commit.
fn replay(
    commits: &Commits,
    path: &Path,
    checkpoint_bytes: u64,
    table: Option<Table>,
) -> Result<u64, StorageError> {
    let store = RedbStore::open_with_checkpoint(path, CACHE_BYTES_DEFAULT, checkpoint_bytes)?;
    let before = write_bytes();
    for commit in commits {
        let mut write = store.write()?;
        for (changed, key, value) in commit {
            if table.is_some_and(|only| only != *changed) {
                continue;
            }
            match value {
                Some(value) => write.put(*changed, key, value)?,
                None => write.delete(*changed, key)?,
            }
        }
        write.commit()?;
    }
    // The closing checkpoint counts: it writes what the redo log's commits left in memory.
    drop(store);
    Ok(write_bytes() - before)
}

fn main() -> Result<(), StorageError> {
    let arguments: Vec<String> = std::env::args().collect();
    let (Some(log), Some(scratch)) = (arguments.get(1), arguments.get(2)) else {
        eprintln!("usage: redo_replay LOG SCRATCH_DIR");
        std::process::exit(2);
    };
    let commits = read_redo_log(Path::new(log))?;
    let writes = commits
        .iter()
        .flatten()
        .filter(|(table, _, value)| *table == Table::ChangeLog && value.is_some())
        .count()
        .max(1) as f64;
    println!(
        "{} commits, {} writes, {:.1} writes per commit",
        commits.len(),
        writes,
        writes / commits.len().max(1) as f64
    );
    for table in Table::ALL {
        let (mut entries, mut bytes) = (0usize, 0usize);
        for (changed, key, value) in commits.iter().flatten() {
            if *changed == table {
                entries += 1;
                bytes += key.len() + value.as_ref().map_or(0, Vec::len);
            }
        }
        println!(
            "{table:?}: {:.2} keys and {:.0} B of keys and values per write",
            entries as f64 / writes,
            bytes as f64 / writes
        );
    }
    let mut variants: Vec<(String, u64, Option<Table>)> =
        vec![("every commit synced, all tables".into(), 0, None)];
    for table in Table::ALL {
        variants.push((
            format!("every commit synced, {table:?} only"),
            0,
            Some(table),
        ));
    }
    variants.push((
        "redo log, default checkpoint, all tables".into(),
        CHECKPOINT_LOG_BYTES_DEFAULT,
        None,
    ));
    for (number, (name, checkpoint_bytes, table)) in variants.into_iter().enumerate() {
        let path = Path::new(scratch).join(format!("replay-{number}.redb"));
        let written = replay(&commits, &path, checkpoint_bytes, table)?;
        println!("{name}: {:.0} B written per write", written as f64 / writes);
    }
    Ok(())
}
