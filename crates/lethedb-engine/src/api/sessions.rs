//! Session LSNs of partition key ranges (`partitions/sessions.rs`): what a range-scoped answer's
//! session token carries, the sum of the range's shards' sequences as this process last saw them.

use crate::container::Container;
use crate::counters::{decode_counters, read_shard_lsns};
use crate::engine::Engine;
use crate::error::{corrupted, EngineResult};
use crate::partitions::sessions::ShardSequences;
use crate::partitions::shards::{sequence, Shard};
use lethedb_storage::{ReadTxn, Table};
use std::sync::Arc;

impl Engine {
    /// The session LSN of partition key range `range_id` of `container`, first raised by
    /// `seen`, the shard LSN the answer read or wrote (an item's counters, a write's LSN). It
    /// rises with every write in the range that this process has seen, and never falls. A
    /// container's first answer reads its shards' counters (one look on a shared store).
    pub async fn range_session_lsn(
        &self,
        container: &Container,
        range_id: u32,
        seen: Option<u64>,
    ) -> EngineResult<u64> {
        let known = self.shard_sequences(container).await?;
        if let Some(lsn) = seen {
            known.raise(lsn);
        }
        Ok(known.sum(container.range_shards(range_id)))
    }

    /// Reads every shard's LSN in `reader`, raises the kept sequences by them, and returns the
    /// container's version (their sequences summed), for an answer about the whole container.
    pub(crate) fn note_shard_lsns(
        &self,
        reader: &dyn ReadTxn,
        container: &Container,
    ) -> EngineResult<u64> {
        let lsns: Vec<u64> = read_shard_lsns(reader, container)?
            .into_iter()
            .map(|(_, lsn)| lsn)
            .collect();
        let version = lsns.iter().copied().map(sequence).sum();
        // `reader` may have begun before a commit the sessions missed: it only raises.
        self.inner.sessions.raise_held(
            container.key_number(),
            &ShardSequences::new(container.shards, lsns),
        );
        Ok(version)
    }

    /// The kept sequences of `container`, read from the store at its first use (and again
    /// while commits missed during the read keep it from being kept).
    async fn shard_sequences(&self, container: &Container) -> EngineResult<Arc<ShardSequences>> {
        let number = container.key_number();
        if let Some(known) = self.inner.sessions.get(number) {
            return Ok(known);
        }
        // Taken before the store is read: a commit missed after it keeps the read from being kept.
        let ticket = self.inner.sessions.ticket();
        let shards = container.shards.max(1);
        let keys: Vec<Vec<u8>> = (0..shards)
            .map(|shard| container.counters_key(Shard(shard)))
            .collect();
        let asked: Vec<(Table, &[u8])> = keys
            .iter()
            .map(|key| (Table::Counters, key.as_slice()))
            .collect();
        let lsns = if let Some(look) = self.inner.store.look_async(&asked) {
            let values = look.await?.values;
            if values.len() != keys.len() {
                return Err(corrupted("a look's values"));
            }
            (0..shards)
                .zip(values)
                .map(|(shard, bytes)| Ok(decode_counters(bytes, Shard(shard))?.lsn))
                .collect::<EngineResult<Vec<u64>>>()?
        } else {
            let reader = self.inner.store.read()?;
            read_shard_lsns(&*reader, container)?
                .into_iter()
                .map(|(_, lsn)| lsn)
                .collect()
        };
        Ok(self
            .inner
            .sessions
            .keep(number, ShardSequences::new(shards, lsns), ticket))
    }
}
