//! The order a streamed page's documents are pushed in: by default the engine's storage keys,
//! but an engine may feed a page in an order of its own (an index's entries, say), naming it by
//! a number (a "key space"); the page's token remembers the number, so the engine resumes the
//! next page in the same order, or knows it must not resume in another. Keys stay opaque and
//! must still ascend within the page. What a space means is the engine's business.

use super::{PageRun, RunState};
use crate::error::QueryError;

impl PageRun {
    /// The key space of the keys the page resumes after: the one its token was written in, 0
    /// (the default) for a page without a token or for a page that is not streamed.
    pub fn key_space(&self) -> u64 {
        match &self.state {
            RunState::Stream(run) => run.space,
            _ => 0,
        }
    }

    /// Pushes this page's documents in key space `space`: refused for a page that is not
    /// streamed, once a document was pushed, or when the page resumes a token of another space
    /// (its keys would mean nothing in this one).
    pub fn use_key_space(&mut self, space: u64) -> Result<(), QueryError> {
        let refused = |reason: &str| Err(QueryError::Usage(reason.into()));
        if self.documents_scanned > 0 {
            return refused("the key space is chosen before the first document is pushed");
        }
        let RunState::Stream(run) = &mut self.state else {
            return refused("only a streamed page may be pushed in another key space");
        };
        let resumes = run.after.is_some() || run.at.is_some() || run.produced > 0;
        if resumes && run.space != space {
            return refused("the page resumes a token of another key space");
        }
        run.space = space;
        Ok(())
    }
}
