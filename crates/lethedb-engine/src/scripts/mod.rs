//! Server-side JavaScript in the engine: stored procedures and triggers run in the sandbox of
//! `lethedb-scripts` against a view of their partition, and commit through the writer in one
//! transaction.
//!
//! Floors, from the bottom up: `view` (the snapshot overlaid with the script's writes, and its
//! read set) → `collection` (the view as the sandbox's `Collection`) and `commit` (re-check
//! the read set, apply the writes under one LSN) → `execute` (the entry points: run, commit,
//! retry on conflict); `udfs` (a query's user-defined functions behind the query crate's hook).

pub(crate) mod collection;
pub(crate) mod commit;
pub(crate) mod execute;
pub(crate) mod udfs;
pub(crate) mod view;

pub use execute::{
    script_arguments, ScriptResponse, TriggeredOperation, TriggeredOutcome, TriggeredWrite,
};
