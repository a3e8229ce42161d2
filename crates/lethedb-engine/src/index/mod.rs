//! Secondary indexes: the container's indexing policy compiled (`policy`), and what is built on
//! it. This module only declares the rooms.

pub(crate) mod policy;
