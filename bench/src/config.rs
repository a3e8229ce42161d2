//! The settings of one comparison: sizes, durations, client counts and which parts to run.
//!
//! `main.rs` builds a [`CompareConfig`] from the command line (`--smoke` shrinks every figure);
//! this module only holds it and derives each workload's run settings from it.

use crate::data::DataSet;
use crate::workload::{RunConfig, Workload};
use std::path::PathBuf;
use std::time::Duration;

/// The figures the comparison is shaped by; `--smoke` shrinks them to a run of seconds.
#[derive(Clone, Debug)]
pub struct CompareConfig {
    pub smoke: bool,
    pub duration: Duration,
    pub warmup: Duration,
    pub clients: usize,
    pub query_clients: usize,
    pub load_clients: usize,
    pub items: usize,
    pub item_bytes: usize,
    pub partitions: usize,
    pub page_items: usize,
    /// The workloads' containers index nothing (`--indexing-none`).
    pub indexing_none: bool,
    pub seed: u64,
    pub sweep_items: Vec<usize>,
    pub lag_items: usize,
    /// Items of the mass expiry on PostgreSQL.
    pub pg_sweep_items: usize,
    pub accuracy_items: usize,
    pub rss_items: usize,
    pub cold_starts: usize,
    pub read_clients_during_expiry: usize,
    /// Manual RU/s of the containers of the mass expiry under provisioned throughput.
    pub throughput_ru: u32,
    /// Items that expire at one instant in that workload.
    pub throughput_items: usize,
    /// Items its users read (in each of its two containers).
    pub throughput_reader_items: usize,
    /// Its warm-up and measured seconds, per phase.
    pub throughput_warmup: Duration,
    pub throughput_duration: Duration,
    pub only: Vec<String>,
    pub peer: bool,
    pub results_dir: PathBuf,
}

impl CompareConfig {
    /// The mass-expiry workload of `items` items at this run's sizes and client counts.
    pub fn mass_expiry(&self, items: usize) -> crate::ttl::MassExpiryConfig {
        crate::ttl::MassExpiryConfig {
            items,
            item_bytes: self.item_bytes,
            partitions: self.partitions,
            seed: self.seed,
            load_clients: self.load_clients,
            read_clients: self.read_clients_during_expiry,
            baseline: self.duration.max(std::time::Duration::from_millis(500)),
        }
    }

    pub fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }

    pub fn run_config(&self, workload: Workload) -> RunConfig {
        RunConfig {
            clients: if workload == Workload::QueryCross {
                self.query_clients
            } else {
                self.clients
            },
            warmup: self.warmup,
            duration: self.duration,
            page_items: self.page_items,
            indexing_none: self.indexing_none,
            data: DataSet {
                items: self.items,
                partitions: self.partitions,
                item_bytes: self.item_bytes,
                seed: self.seed,
            },
        }
    }
}
