//! Secondary indexes: the container's indexing policy compiled (`policy`), the entries one
//! version of an item is indexed by (`entries`), their upkeep inside the writer (`maintain`),
//! their rebuild in the background after a policy change (`builder`), the check of the stored
//! entries against their items (`check`), and the planner's choice between an index read and a
//! scan for a query page (`plan`), with the queries it recently found unselective
//! (`plan_memory`). This module only declares the
//! rooms.

pub(crate) mod builder;
pub(crate) mod check;
pub(crate) mod entries;
pub(crate) mod maintain;
pub(crate) mod plan;
pub(crate) mod plan_memory;
pub(crate) mod policy;
