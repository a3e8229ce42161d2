//! Time to live: the rules of `docs/ttl.md` as pure functions of settings and times.
//!
//! A container's [`TtlState`] holds its current `defaultTtl` and two bounds that remember what
//! expired under earlier settings, so that expiry is final: when the setting changes at instant
//! `T`, every item that had expired under the old setting before `T` stays expired, without a
//! reindexing pass. The bounds follow from the two orders of the expiry index:
//! - an item with its own `ttl` expired under an earlier setting iff its expiry instant is before
//!   the end of the last interval in which TTL was on (`own_expired_before_ms`);
//! - an item following a default `d` expired under it iff `last_modified + d` is before the end
//!   of that interval; the largest such bound over past intervals is `default_modified_before_ms`.
//!
//! This module reads no clock and no storage: callers pass `now_ms`.

pub(crate) mod expiry;
pub(crate) mod sweep_jobs;
pub(crate) mod sweep_stats;
pub(crate) mod sweeper;

use crate::error::{EngineError, EngineResult, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest `defaultTtl` or `ttl` the service accepts, in seconds.
pub const TTL_SECS_MAX: i64 = 2_147_483_647;

/// An item's own `ttl`, as it affects expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemTtl {
    /// No `ttl`, or one that is not a valid value: the container default applies.
    Inherit,
    /// `ttl: -1`: never expires while TTL is on (and nothing expires while it is off).
    Never,
    /// `ttl: n`: expires `n` seconds after the last write, while TTL is on.
    Secs(i64),
}

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            // An integral float (5.0 as some JSON writers put it) is still an integer.
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e18)
                .map(|f| f as i64)
        }),
        _ => None,
    }
}

fn valid_ttl(value: &Value) -> Option<i64> {
    integer(value).filter(|&n| n == -1 || (1..=TTL_SECS_MAX).contains(&n))
}

fn invalid_message(name: &str, value: &Value) -> String {
    let shown = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    format!(
        "The input {name} '{shown}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '{TTL_SECS_MAX}', or '-1' which means never expire."
    )
}

/// Validates a container's `defaultTtl` property (absent or null turns TTL off).
pub fn parse_default_ttl(value: Option<&Value>) -> EngineResult<Option<i64>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => valid_ttl(value).map(Some).ok_or_else(|| {
            EngineError::with_message(ErrorCode::InvalidTtl, invalid_message("defaultTtl", value))
        }),
    }
}

/// Validates an item's `ttl`. While its container has TTL on, every value but a whole number
/// from 1 to [`TTL_SECS_MAX`] or -1 is refused. While TTL is off the field is not interpreted,
/// but a negative whole number other than -1 is still refused, as the service refuses one in a
/// container without TTL (the JavaScript SDK's bulk tests); other values stay ordinary data
/// there (`docs/ttl.md` says which part of this is uncertain).
pub fn validate_item_ttl(document: &Value, ttl_on: bool) -> EngineResult<()> {
    let Some(value) = document.get("ttl") else {
        return Ok(());
    };
    let refused = if ttl_on {
        valid_ttl(value).is_none()
    } else {
        integer(value).is_some_and(|n| n < -1)
    };
    if refused {
        return Err(EngineError::with_message(
            ErrorCode::InvalidTtl,
            invalid_message("ttl", value),
        ));
    }
    Ok(())
}

/// How a stored document's `ttl` field affects its expiry.
pub fn item_ttl(document: &Value) -> ItemTtl {
    match document.get("ttl").and_then(valid_ttl) {
        None => ItemTtl::Inherit,
        Some(-1) => ItemTtl::Never,
        Some(secs) => ItemTtl::Secs(secs),
    }
}

/// A container's TTL setting and the memory of earlier settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TtlState {
    /// `None`: TTL off; `Some(-1)`: on, no default expiry; `Some(n)`: expire after `n` seconds.
    pub default_ttl_secs: Option<i64>,
    /// Items with their own ttl whose expiry instant is before this expired under an earlier
    /// setting.
    pub own_expired_before_ms: i64,
    /// Items following the default whose last modification is before this expired under an
    /// earlier setting.
    pub default_modified_before_ms: i64,
}

impl TtlState {
    pub fn new(default_ttl_secs: Option<i64>) -> TtlState {
        TtlState {
            default_ttl_secs,
            own_expired_before_ms: i64::MIN,
            default_modified_before_ms: i64::MIN,
        }
    }

    pub fn is_on(&self) -> bool {
        self.default_ttl_secs.is_some()
    }

    /// The state after the setting changes at `now_ms`. The new setting governs that instant
    /// itself; the interval that ended just before it is folded into the bounds, so what expired
    /// under it stays expired.
    pub fn changed(&self, default_ttl_secs: Option<i64>, now_ms: i64) -> TtlState {
        let last_instant_of_old_rule_ms = now_ms.saturating_sub(1);
        TtlState {
            default_ttl_secs,
            own_expired_before_ms: self.own_expiry_bound_ms(last_instant_of_old_rule_ms),
            default_modified_before_ms: self.default_modified_bound_ms(last_instant_of_old_rule_ms),
        }
    }

    /// Items with their own ttl expire at `expiry_ms`; they are expired at `now_ms` iff
    /// `expiry_ms` is below this bound.
    pub fn own_expiry_bound_ms(&self, now_ms: i64) -> i64 {
        if self.is_on() {
            // Expired from the instant itself: `now >= expiry` is `expiry < now + 1`.
            self.own_expired_before_ms.max(now_ms.saturating_add(1))
        } else {
            self.own_expired_before_ms
        }
    }

    /// Items following the default are expired at `now_ms` iff their last-modified instant is
    /// below this bound.
    pub fn default_modified_bound_ms(&self, now_ms: i64) -> i64 {
        match self.default_ttl_secs {
            Some(secs) if secs > 0 => self.default_modified_before_ms.max(
                now_ms
                    .saturating_add(1)
                    .saturating_sub(secs.saturating_mul(1000)),
            ),
            _ => self.default_modified_before_ms,
        }
    }

    /// Whether an item last modified at `last_modified_ms` with this `ttl` is expired at `now_ms`.
    pub fn is_expired(&self, last_modified_ms: i64, ttl: ItemTtl, now_ms: i64) -> bool {
        match ttl {
            ItemTtl::Never => false,
            ItemTtl::Secs(secs) => {
                expiry_instant_ms(last_modified_ms, secs) < self.own_expiry_bound_ms(now_ms)
            }
            ItemTtl::Inherit => last_modified_ms < self.default_modified_bound_ms(now_ms),
        }
    }
}

/// The instant an item with its own ttl expires.
pub fn expiry_instant_ms(last_modified_ms: i64, ttl_secs: i64) -> i64 {
    last_modified_ms.saturating_add(ttl_secs.saturating_mul(1000))
}

#[cfg(test)]
mod tests;
