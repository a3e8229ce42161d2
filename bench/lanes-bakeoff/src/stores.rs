//! The candidate stores and how one lane commits a group of creates in each: one redb file
//! shared by every lane (today's shape when there is one lane), a redb file per lane, and one
//! fjall database (a keyspace per table, one journal) whose lanes each commit their own batch.
//!
//! Durability is the engine's: a lane acknowledges its group only after the sync that covers it
//! returned. redb commits with `Durability::Immediate` (its default; `commit` returns after the
//! fsync). fjall appends a batch to its journal under the journal's lock and syncs with
//! `PersistMode::SyncAll`, also under that lock, so lanes never sync side by side there; the
//! `fjall` candidate therefore shares one sync among the lanes whose batches are already in the
//! journal ([`SyncGate`]), `fjall-own-sync` lets each lane sync for itself, and `fjall-blobs`
//! is `fjall` with the tables of whole records key-value separated. Nothing here measures;
//! `load.rs` does.

use crate::shape::{
    counters_key, create_rows, item_key, shard_of, Counters, Create, Indexing, Table,
};
use redb::ReadableTable;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

/// Which store the lanes write to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// One redb file; with several lanes their writers take turns at its one write transaction.
    RedbOne,
    /// A redb file per lane.
    RedbFiles,
    /// One fjall database; each lane commits its batch, then waits for a sync that began after
    /// it (one sync serves every lane waiting).
    Fjall,
    /// One fjall database; each lane commits its batch and syncs the journal itself.
    FjallOwnSync,
    /// As `Fjall`, with the items and the change log (the tables whose values are whole
    /// records) in key-value separated keyspaces: their values go to blob files once, and
    /// compaction rewrites only keys and pointers.
    FjallBlobs,
}

impl Engine {
    pub const ALL: [Engine; 5] = [
        Engine::RedbOne,
        Engine::RedbFiles,
        Engine::Fjall,
        Engine::FjallOwnSync,
        Engine::FjallBlobs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Engine::RedbOne => "redb-one",
            Engine::RedbFiles => "redb-files",
            Engine::Fjall => "fjall",
            Engine::FjallOwnSync => "fjall-own-sync",
            Engine::FjallBlobs => "fjall-blobs",
        }
    }

    pub fn parse(text: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|engine| engine.name() == text)
    }
}

/// One create waiting in a lane's queue, with the payload its index entry needs.
pub struct Pending {
    pub create: Create,
    pub payload: String,
}

/// What a group commit needs of a store's transaction.
trait Txn {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), String>;
}

/// Applies a group of creates as the engine's writer does: each create reads its item key
/// (a create must find nothing) and, once per shard and group, its shard's counters; writes its
/// rows; each touched shard's counters are written once at the end. Returns the rows written.
fn apply_group(
    txn: &mut dyn Txn,
    group: &[Pending],
    now_ms: i64,
    indexing: Indexing,
) -> Result<u64, String> {
    let mut counters: BTreeMap<u16, Counters> = BTreeMap::new();
    let mut rows = 0;
    for pending in group {
        let create = &pending.create;
        if txn
            .get(Table::Items, &item_key(create.partition, &create.id))?
            .is_some()
        {
            return Err(format!("item {} exists already", create.id));
        }
        let shard = shard_of(create.partition);
        let shard_counters = match counters.entry(shard) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let stored = txn.get(Table::Counters, &counters_key(shard))?;
                entry.insert(
                    stored.map_or_else(|| Counters::empty(shard), |bytes| Counters::decode(&bytes)),
                )
            }
        };
        for row in create_rows(create, &pending.payload, shard_counters, now_ms, indexing) {
            txn.put(row.table, &row.key, &row.value)?;
            rows += 1;
        }
    }
    for (shard, shard_counters) in counters {
        txn.put(
            Table::Counters,
            &counters_key(shard),
            &shard_counters.encode(),
        )?;
        rows += 1;
    }
    Ok(rows)
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

type RedbTable<'txn> = redb::Table<'txn, &'static [u8], &'static [u8]>;

fn definition(table: Table) -> redb::TableDefinition<'static, &'static [u8], &'static [u8]> {
    redb::TableDefinition::new(table.name())
}

/// A redb write transaction's tables, opened once per group.
struct RedbTxn<'txn> {
    tables: Vec<RedbTable<'txn>>,
}

impl Txn for RedbTxn<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let found = self.tables[table.position()].get(key).map_err(text)?;
        Ok(found.map(|value| value.value().to_vec()))
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), String> {
        self.tables[table.position()]
            .insert(key, value)
            .map_err(text)?;
        Ok(())
    }
}

/// Opens (or creates) a redb file with every table.
pub fn open_redb(path: &Path, cache_bytes: usize) -> Result<redb::Database, String> {
    let database = redb::Database::builder()
        .set_cache_size(cache_bytes)
        .create(path)
        .map_err(text)?;
    let transaction = database.begin_write().map_err(text)?;
    for table in Table::ALL {
        transaction.open_table(definition(table)).map_err(text)?;
    }
    transaction.commit().map_err(text)?;
    Ok(database)
}

/// Commits a group to a redb file, durably (`Durability::Immediate`).
pub fn commit_redb(
    database: &redb::Database,
    group: &[Pending],
    now_ms: i64,
    indexing: Indexing,
) -> Result<u64, String> {
    let mut transaction = database.begin_write().map_err(text)?;
    transaction
        .set_durability(redb::Durability::Immediate)
        .map_err(text)?;
    let rows = {
        let tables = Table::ALL
            .iter()
            .map(|table| transaction.open_table(definition(*table)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(text)?;
        apply_group(&mut RedbTxn { tables }, group, now_ms, indexing)?
    };
    transaction.commit().map_err(text)?;
    Ok(rows)
}

/// One fjall database with a keyspace per table.
pub struct FjallStore {
    pub database: fjall::Database,
    pub keyspaces: Vec<fjall::Keyspace>,
    gate: SyncGate,
}

impl FjallStore {
    /// Opens the database with `memory_bytes` for its block cache and memtables together: half
    /// for the cache, and a memtable bound per keyspace so that the seven of them hold at most
    /// the other half (fjall's defaults are 64 MiB per keyspace and no bound on the total).
    pub fn open(path: &Path, memory_bytes: u64, blobs: bool) -> Result<FjallStore, String> {
        let memtable_bytes = (memory_bytes / 2 / Table::ALL.len() as u64).max(1024 * 1024);
        let database = fjall::Database::builder(path)
            .cache_size(memory_bytes / 2)
            .open()
            .map_err(text)?;
        let keyspaces = Table::ALL
            .iter()
            .map(|table| {
                let whole_records = matches!(table, Table::Items | Table::ChangeLog);
                let separation = (blobs && whole_records)
                    .then(|| fjall::KvSeparationOptions::default().separation_threshold(512));
                database.keyspace(table.name(), || {
                    fjall::KeyspaceCreateOptions::default()
                        .max_memtable_size(memtable_bytes)
                        .with_kv_separation(separation)
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(text)?;
        Ok(FjallStore {
            database,
            keyspaces,
            gate: SyncGate::default(),
        })
    }

    /// Writes every memtable out to tables on disk (what the store will hold once the
    /// background flushes have run), so that bytes written and bytes stored count it.
    pub fn flush(&self) -> Result<(), String> {
        for keyspace in &self.keyspaces {
            keyspace.rotate_memtable_and_wait().map_err(text)?;
        }
        // A journal whose memtables are all on disk is deleted in the background: wait for
        // that, so that the store's size does not count it.
        for _ in 0..100 {
            if self.database.journal_count() <= 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Ok(())
    }

    /// Commits a group as one batch, then makes it durable: through the shared gate, or with
    /// a sync of the lane's own.
    pub fn commit(
        &self,
        group: &[Pending],
        now_ms: i64,
        indexing: Indexing,
        shared_sync: bool,
    ) -> Result<u64, String> {
        let mut txn = FjallTxn {
            store: self,
            batch: self.database.batch(),
        };
        let rows = apply_group(&mut txn, group, now_ms, indexing)?;
        txn.batch.commit().map_err(text)?;
        if shared_sync {
            self.gate.sync_after_commit(&self.database)?;
        } else {
            self.database
                .persist(fjall::PersistMode::SyncAll)
                .map_err(text)?;
        }
        Ok(rows)
    }
}

/// A fjall batch being filled; reads go to the committed state (a lane owns its partitions, so
/// no other lane writes the keys it reads).
struct FjallTxn<'store> {
    store: &'store FjallStore,
    batch: fjall::OwnedWriteBatch,
}

impl Txn for FjallTxn<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let found = self.store.keyspaces[table.position()]
            .get(key)
            .map_err(text)?;
        Ok(found.map(|value| value.to_vec()))
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), String> {
        self.batch
            .insert(&self.store.keyspaces[table.position()], key, value);
        Ok(())
    }
}

/// Group sync across lanes: a sync that begins after a batch was appended covers it, so a lane
/// waits for the running sync (which may have begun before its batch) and then, unless another
/// lane already did, starts the next one itself.
#[derive(Default)]
struct SyncGate {
    state: Mutex<GateState>,
    done: Condvar,
}

#[derive(Default)]
struct GateState {
    /// How many syncs have begun, and the number of the last one that returned.
    started: u64,
    finished: u64,
    running: bool,
}

impl SyncGate {
    fn sync_after_commit(&self, database: &fjall::Database) -> Result<(), String> {
        let mut state = self.state.lock().map_err(text)?;
        let covering = state.started + 1;
        loop {
            if state.finished >= covering {
                return Ok(());
            }
            if !state.running {
                state.running = true;
                state.started += 1;
                let number = state.started;
                drop(state);
                let synced = database.persist(fjall::PersistMode::SyncAll).map_err(text);
                let mut state = self.state.lock().map_err(text)?;
                state.running = false;
                if synced.is_ok() {
                    state.finished = number;
                }
                self.done.notify_all();
                return synced;
            }
            state = self.done.wait(state).map_err(text)?;
        }
    }
}

/// The stores a run opened, kept until every lane has stopped.
pub enum Opened {
    Redb(Vec<Arc<redb::Database>>),
    Fjall(Arc<FjallStore>),
}

/// Opens the store(s) of `engine` for `lanes` lanes under `directory`; the page cache budget is
/// split among the files, and fjall's between its cache and memtables, so that every candidate
/// is given the same memory.
pub fn open(
    engine: Engine,
    lanes: usize,
    directory: &Path,
    cache_bytes: usize,
) -> Result<Opened, String> {
    std::fs::create_dir_all(directory).map_err(text)?;
    match engine {
        Engine::RedbOne => Ok(Opened::Redb(vec![Arc::new(open_redb(
            &directory.join("store.redb"),
            cache_bytes,
        )?)])),
        Engine::RedbFiles => (0..lanes)
            .map(|lane| {
                open_redb(
                    &directory.join(format!("lane-{lane}.redb")),
                    cache_bytes / lanes,
                )
                .map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Opened::Redb),
        Engine::Fjall | Engine::FjallOwnSync | Engine::FjallBlobs => {
            let blobs = engine == Engine::FjallBlobs;
            FjallStore::open(&directory.join("fjall"), cache_bytes as u64, blobs)
                .map(|store| Opened::Fjall(Arc::new(store)))
        }
    }
}

impl Opened {
    /// Commits one lane's group durably.
    pub fn commit(
        &self,
        engine: Engine,
        lane: usize,
        group: &[Pending],
        now_ms: i64,
        indexing: Indexing,
    ) -> Result<u64, String> {
        match self {
            Opened::Redb(files) => commit_redb(&files[lane % files.len()], group, now_ms, indexing),
            Opened::Fjall(store) => {
                store.commit(group, now_ms, indexing, engine != Engine::FjallOwnSync)
            }
        }
    }

    /// Brings what is buffered in memory to disk before the store is measured and closed.
    pub fn settle(&self) -> Result<(), String> {
        match self {
            Opened::Redb(_) => Ok(()),
            Opened::Fjall(store) => store.flush(),
        }
    }
}
