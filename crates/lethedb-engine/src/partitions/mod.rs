//! Partitions: the partition key of a container and of an item (`partition_key`), the
//! effective partition keys the SDKs hash them to (`epk`), and the physical partition key
//! ranges laid over that hash space (`ranges`), and the shards that split a container's counters
//! by EPK (`shards`), the range session LSNs kept from them (`sessions`), and the buckets a shared store places stored keys in by them (`buckets`). Pure rules; no storage.

pub(crate) mod buckets;
pub(crate) mod epk;
pub(crate) mod partition_key;
pub(crate) mod ranges;
pub(crate) mod sessions;
pub(crate) mod shards;
