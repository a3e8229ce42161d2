//! The engine's poisoned state: set once, by the first internal failure that makes further
//! writes unsafe (a panic in the writer or the sweeper, a failed commit), and never cleared.
//!
//! It records why, logs it once, and answers what the engine reports (`Engine::poisoned`, the
//! metrics gauge, the stats endpoint). It does not decide which failures poison; the writer and
//! the sweeper do.

use std::any::Any;
use std::sync::OnceLock;

/// Why the engine stopped accepting writes, if it did.
#[derive(Debug, Default)]
pub(crate) struct Poison {
    reason: OnceLock<String>,
}

impl Poison {
    /// Records the first reason (later ones are only logged) and logs it as an error.
    pub(crate) fn set(&self, reason: String) {
        if self.reason.set(reason.clone()).is_ok() {
            tracing::error!(reason = %reason, "the engine stopped accepting writes; restart it");
        } else {
            tracing::error!(reason = %reason, "a further internal error in a poisoned engine");
        }
    }

    /// The reason, once poisoned.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }
}

/// The message a panic carried, for the log and the poisoned reason.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
    }
}
