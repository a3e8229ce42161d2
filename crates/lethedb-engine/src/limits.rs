//! The engine's named limits and the id rules every resource shares.
//!
//! A limit that is hit gives a clear error, never a crash. This module decides nothing about
//! storage or visibility; it only says what sizes and ids are acceptable.

use crate::error::{EngineError, EngineResult, ErrorCode};

/// The longest id a database, container or item may have, in characters (the service's limit).
pub const ID_CHARS_MAX: usize = 255;
/// The largest item, in bytes of its JSON (the service's limit is 2 MiB).
pub const ITEM_BYTES_MAX: usize = 2 * 1024 * 1024;
/// The most items one page of a feed or query may hold.
pub const PAGE_ITEMS_MAX: usize = 10_000;
/// The page size when the client does not ask for one (the service's default).
pub const PAGE_ITEMS_DEFAULT: usize = 100;
/// The most unique keys a container's unique key policy may hold (the service's quota).
pub const UNIQUE_KEYS_MAX: usize = 10;
/// The most paths one unique key may combine (the service's quota).
pub const UNIQUE_KEY_PATHS_MAX: usize = 16;

/// The system properties the server owns; any a client sends are dropped before storing.
pub const SYSTEM_PROPERTIES: [&str; 5] = ["_rid", "_self", "_etag", "_attachments", "_ts"];

/// Checks the id of a database, container, script, user or other resource against the
/// service's rules.
pub(crate) fn validate_id(id: &str) -> EngineResult<()> {
    validate_item_id(id)?;
    if id.contains('?') {
        return Err(illegal_characters());
    }
    Ok(())
}

/// Checks an item's id against the service's rules, which allow a `?` in an item's id alone
/// (the SDKs refuse it in other resources' ids before sending, in items' ids they let it pass;
/// the JavaScript SDK's own tests create, read, replace and delete an item `Disallowed?Chars`
/// on the service).
pub(crate) fn validate_item_id(id: &str) -> EngineResult<()> {
    if id.is_empty() {
        return Err(EngineError::with_message(
            ErrorCode::InvalidId,
            "The id must not be empty.",
        ));
    }
    if id.chars().count() > ID_CHARS_MAX {
        return Err(EngineError::with_message(
            ErrorCode::InvalidId,
            format!("The id is longer than {ID_CHARS_MAX} characters."),
        ));
    }
    if id.contains(['/', '\\', '#']) {
        return Err(illegal_characters());
    }
    Ok(())
}

fn illegal_characters() -> EngineError {
    EngineError::with_message(
        ErrorCode::InvalidId,
        "The id contains one of the characters '/', '\\', '?' or '#', which are not allowed in resource ids.",
    )
}

/// How many scans (queries, feeds, usage walks, catalog listings, sweeper searches) may run on
/// the blocking pool at once; more wait for a permit without holding a request worker.
pub const SCANS_CONCURRENT_MAX: usize = 8;
/// The most script executions (stored procedures, triggered writes) that run at once; more
/// wait for a permit. Each holds a blocking thread for up to its time budget.
pub const SCRIPTS_CONCURRENT_MAX: usize = 4;
/// How often a script transaction is run again when a concurrent write changed what it read
/// before it could commit; after that the client is told to retry (449).
pub const SCRIPT_ATTEMPTS_MAX: usize = 3;

/// How long the all-versions change log keeps entries of a container whose `changeFeedPolicy`
/// sets no retention (`serve --change-feed-retention-minutes` changes it).
pub const CHANGE_LOG_RETENTION_MINUTES_DEFAULT: i64 = 60;
