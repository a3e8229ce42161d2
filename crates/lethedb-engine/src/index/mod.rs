//! Secondary indexes: the container's indexing policy compiled (`policy`), the entries one
//! version of an item is indexed by (`entries`), and their upkeep inside the writer
//! (`maintain`), their rebuild in the background after a policy change (`builder`), and the
//! check of the stored entries against their items (`check`). This module only declares the
//! rooms.

pub(crate) mod builder;
pub(crate) mod check;
pub(crate) mod entries;
pub(crate) mod maintain;
pub(crate) mod policy;
