//! Provisioned throughput: settings, validation, and the per-second request-unit budgets that
//! rate-limit user requests and fund the TTL sweeper with what users left over.
//!
//! A budget belongs to a container with its own throughput, or to a database whose containers
//! share it. Each wall-clock second a budget admits user requests while their charges so far stay
//! below its RU/s; a request that finds it spent is refused with the milliseconds to the next
//! second. The sweeper never draws on the current second: it spends what users did not consume
//! in the previous one, so sweeping can never cause a user request to be throttled.
//! This module counts request units; it knows nothing of HTTP.

pub mod buckets;
pub(crate) mod offers;
pub mod request_units;

use crate::error::{EngineError, EngineResult, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// The smallest manual throughput and its step (the service's rules).
pub const MANUAL_RU_MIN: u32 = 400;
pub const MANUAL_RU_STEP: u32 = 100;
/// The smallest autoscale maximum and its step.
pub const AUTOSCALE_RU_MIN: u32 = 1000;
pub const AUTOSCALE_RU_STEP: u32 = 1000;
/// The largest throughput one resource may be given here.
pub const THROUGHPUT_RU_MAX: u32 = 1_000_000;

/// The service's one message for a throughput out of range or off its step, manual or
/// autoscale alike (it names the valid range rather than the fault).
fn invalid_range_message(min: u32, step: u32) -> String {
    format!(
        "The offer should have valid throughput values between {min} and {THROUGHPUT_RU_MAX} inclusive in increments of {step}."
    )
}

/// Reads autoscale settings (`offerAutopilotSettings`, or the create header's JSON): the
/// maximum, and an optional `autoUpgradePolicy.throughputPolicy.incrementPercent`.
fn autoscale_settings(settings: &Value) -> EngineResult<Option<Throughput>> {
    let Some(max) = settings.get("maxThroughput") else {
        return Ok(None);
    };
    let max = max.as_i64().ok_or_else(|| {
        EngineError::with_message(
            ErrorCode::InvalidThroughput,
            "The autoscale settings need an integer 'maxThroughput'.",
        )
    })?;
    let Throughput::Autoscale(max_ru) = Throughput::autoscale(max)? else {
        return Ok(None);
    };
    let Some(policy) = settings.get("autoUpgradePolicy").filter(|p| !p.is_null()) else {
        return Ok(Some(Throughput::Autoscale(max_ru)));
    };
    let increment = policy
        .get("throughputPolicy")
        .filter(|p| !p.is_null())
        .map(|p| p.get("incrementPercent"));
    let increment_percent = match increment {
        None | Some(None | Some(Value::Null)) => 0,
        Some(Some(value)) => value
            .as_u64()
            .and_then(|percent| u32::try_from(percent).ok())
            .ok_or_else(|| {
                EngineError::with_message(
                    ErrorCode::InvalidThroughput,
                    "The autoscale 'incrementPercent' must be a non-negative integer.",
                )
            })?,
    };
    Ok(Some(Throughput::AutoscaleUpgrading {
        max_ru,
        increment_percent,
    }))
}

/// A resource's provisioned throughput.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Throughput {
    /// A fixed number of RU/s.
    Manual(u32),
    /// Autoscale up to this many RU/s (it scales instantly here, so the maximum is the budget).
    Autoscale(u32),
    /// Autoscale with an auto-upgrade policy: the maximum, and the percent by which the service
    /// would raise it as storage grows (`autoUpgradePolicy.throughputPolicy.incrementPercent`),
    /// kept and returned; the maximum here never moves. A variant of its own so that records
    /// written before it still load.
    AutoscaleUpgrading { max_ru: u32, increment_percent: u32 },
}

impl Throughput {
    pub fn budget_ru_per_sec(&self) -> f64 {
        match self {
            Throughput::Manual(ru)
            | Throughput::Autoscale(ru)
            | Throughput::AutoscaleUpgrading { max_ru: ru, .. } => f64::from(*ru),
        }
    }

    /// Validates a manual throughput.
    pub fn manual(ru: i64) -> EngineResult<Throughput> {
        if ru < i64::from(MANUAL_RU_MIN)
            || ru > i64::from(THROUGHPUT_RU_MAX)
            || ru % i64::from(MANUAL_RU_STEP) != 0
        {
            return Err(EngineError::with_message(
                ErrorCode::InvalidThroughput,
                invalid_range_message(MANUAL_RU_MIN, MANUAL_RU_STEP),
            ));
        }
        Ok(Throughput::Manual(ru as u32))
    }

    /// Validates an autoscale maximum.
    pub fn autoscale(max_ru: i64) -> EngineResult<Throughput> {
        if max_ru < i64::from(AUTOSCALE_RU_MIN)
            || max_ru > i64::from(THROUGHPUT_RU_MAX)
            || max_ru % i64::from(AUTOSCALE_RU_STEP) != 0
        {
            let mut message = invalid_range_message(AUTOSCALE_RU_MIN, AUTOSCALE_RU_STEP);
            // Below the minimum the service adds a sentence naming both numbers (the SDKs'
            // autoscale tests look for it; whether it does so for a manual throughput too is
            // not known, so that message stays as it was).
            if max_ru < i64::from(AUTOSCALE_RU_MIN) {
                message.push_str(&format!(
                    " Requested throughput {max_ru} is less than required minimum throughput {AUTOSCALE_RU_MIN}."
                ));
            }
            return Err(EngineError::with_message(
                ErrorCode::InvalidThroughput,
                message,
            ));
        }
        Ok(Throughput::Autoscale(max_ru as u32))
    }

    /// Reads the throughput a create request asks for: a manual budget as decimal text, or
    /// autoscale settings as JSON text (`{"maxThroughput": n}`); at most one of them.
    pub fn from_request(
        offer_throughput: Option<&str>,
        autopilot_settings: Option<&str>,
    ) -> EngineResult<Option<Throughput>> {
        match (offer_throughput, autopilot_settings) {
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(EngineError::with_message(
                ErrorCode::InvalidThroughput,
                "Manual throughput and autoscale settings cannot both be given.",
            )),
            (Some(text), None) => {
                let ru: i64 = text.trim().parse().map_err(|_| {
                    EngineError::with_message(
                        ErrorCode::InvalidThroughput,
                        format!("The offer throughput '{text}' is not a number."),
                    )
                })?;
                Throughput::manual(ru).map(Some)
            }
            (None, Some(text)) => {
                let settings: Value = serde_json::from_str(text).map_err(|_| {
                    EngineError::with_message(
                        ErrorCode::InvalidThroughput,
                        "The autoscale settings must be JSON.",
                    )
                })?;
                autoscale_settings(&settings)?.map(Some).ok_or_else(|| {
                    EngineError::with_message(
                        ErrorCode::InvalidThroughput,
                        "The autoscale settings need an integer 'maxThroughput'.",
                    )
                })
            }
        }
    }

    /// The offer `content` the SDKs read.
    pub fn offer_content(&self) -> Value {
        match self {
            Throughput::Manual(ru) => {
                serde_json::json!({"offerThroughput": ru, "offerIsRUPerMinuteThroughputEnabled": false})
            }
            Throughput::Autoscale(max) => autoscale_content(*max, 0),
            Throughput::AutoscaleUpgrading {
                max_ru,
                increment_percent,
            } => autoscale_content(*max_ru, *increment_percent),
        }
    }

    /// Reads an offer's `content` on replace.
    pub fn from_offer_content(content: &Value) -> EngineResult<Throughput> {
        if let Some(settings) = content
            .get("offerAutopilotSettings")
            .filter(|s| !s.is_null())
        {
            if let Some(throughput) = autoscale_settings(settings)? {
                return Ok(throughput);
            }
        }
        match content.get("offerThroughput").and_then(Value::as_i64) {
            Some(ru) => Throughput::manual(ru),
            None => Err(EngineError::with_message(
                ErrorCode::InvalidThroughput,
                "The offer content needs 'offerThroughput' or 'offerAutopilotSettings'.",
            )),
        }
    }
}

/// An autoscale offer's `content`: its current (minimum) throughput is a tenth of the maximum.
fn autoscale_content(max: u32, increment_percent: u32) -> Value {
    serde_json::json!({
        "offerThroughput": (max / 10).max(AUTOSCALE_RU_MIN / 10 * 4),
        "offerIsRUPerMinuteThroughputEnabled": false,
        "offerAutopilotSettings": {
            "maxThroughput": max,
            "autoUpgradePolicy": {"throughputPolicy": {"incrementPercent": increment_percent}}
        }
    })
}

/// A request's priority under throttling (`x-ms-cosmos-priority-level`; high when absent, as
/// on the service).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Priority {
    #[default]
    High,
    Low,
}

/// The share of a second's budget low-priority requests may spend: the rest is kept for
/// high-priority ones, so that low-priority requests are throttled first when a container
/// nears its throughput (the service documents that order, not a share: this one is
/// LetheDB's).
pub const LOW_PRIORITY_SHARE: f64 = 0.8;

/// Which budget a request draws on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BudgetKey {
    Container(u32),
    Database(u32),
    /// A throughput bucket (1 to 5) of a container: what requests naming it spent.
    Bucket(u32, u8),
}

#[derive(Debug, Default)]
struct Bucket {
    second: i64,
    /// RUs charged to user requests in `second`.
    user_ru: f64,
    /// What users left unspent in the second before `second` (what the sweeper may spend now).
    leftover_ru: f64,
    /// RUs the sweeper has spent in `second`.
    sweeper_ru: f64,
}

impl Bucket {
    /// Moves the bucket to the second of `now_ms`, carrying the previous second's leftover.
    fn roll(&mut self, budget_ru: f64, now_ms: i64) {
        let second = now_ms.div_euclid(1000);
        if second == self.second {
            return;
        }
        self.leftover_ru = if second == self.second + 1 {
            (budget_ru - self.user_ru).max(0.0)
        } else {
            budget_ru
        };
        self.second = second;
        self.user_ru = 0.0;
        self.sweeper_ru = 0.0;
    }
}

/// Totals for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BudgetTotals {
    pub user_ru: f64,
    pub sweeper_ru: f64,
    pub throttled: u64,
}

/// The per-second budgets of every resource with throughput.
#[derive(Debug, Default)]
pub struct Budgets {
    buckets: Mutex<HashMap<BudgetKey, Bucket>>,
    totals: Mutex<HashMap<BudgetKey, BudgetTotals>>,
}

impl Budgets {
    /// Admits a user request unless this second's budget is spent (for a low-priority request,
    /// [`LOW_PRIORITY_SHARE`] of it); the error carries the milliseconds until the next second.
    pub fn admit(
        &self,
        key: BudgetKey,
        budget_ru: f64,
        now_ms: i64,
        priority: Priority,
    ) -> Result<(), i64> {
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(());
        };
        let bucket = buckets.entry(key).or_default();
        bucket.roll(budget_ru, now_ms);
        let share = match priority {
            Priority::High => 1.0,
            Priority::Low => LOW_PRIORITY_SHARE,
        };
        if bucket.user_ru < budget_ru * share {
            return Ok(());
        }
        drop(buckets);
        if let Ok(mut totals) = self.totals.lock() {
            totals.entry(key).or_default().throttled += 1;
        }
        Err(1000 - now_ms.rem_euclid(1000))
    }

    /// Charges a completed user request.
    pub fn charge_user(&self, key: BudgetKey, budget_ru: f64, request_units: f64, now_ms: i64) {
        if let Ok(mut buckets) = self.buckets.lock() {
            let bucket = buckets.entry(key).or_default();
            bucket.roll(budget_ru, now_ms);
            bucket.user_ru += request_units;
        }
        if let Ok(mut totals) = self.totals.lock() {
            totals.entry(key).or_default().user_ru += request_units;
        }
    }

    /// The RUs the sweeper may still spend this second: last second's user leftover, less what
    /// it has already spent.
    pub fn sweeper_allowance(&self, key: BudgetKey, budget_ru: f64, now_ms: i64) -> f64 {
        let Ok(mut buckets) = self.buckets.lock() else {
            return 0.0;
        };
        let bucket = buckets.entry(key).or_default();
        bucket.roll(budget_ru, now_ms);
        (bucket.leftover_ru - bucket.sweeper_ru).max(0.0)
    }

    /// Records what the sweeper spent.
    pub fn charge_sweeper(&self, key: BudgetKey, budget_ru: f64, request_units: f64, now_ms: i64) {
        if let Ok(mut buckets) = self.buckets.lock() {
            let bucket = buckets.entry(key).or_default();
            bucket.roll(budget_ru, now_ms);
            bucket.sweeper_ru += request_units;
        }
        if let Ok(mut totals) = self.totals.lock() {
            totals.entry(key).or_default().sweeper_ru += request_units;
        }
    }

    pub fn totals(&self, key: BudgetKey) -> BudgetTotals {
        self.totals
            .lock()
            .ok()
            .and_then(|t| t.get(&key).copied())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_validated_as_the_service_does() {
        assert!(Throughput::manual(400).is_ok());
        assert!(Throughput::manual(1100).is_ok());
        for bad in [0, 300, 450, 1_000_100] {
            assert!(Throughput::manual(bad).is_err(), "{bad}");
        }
        assert!(Throughput::autoscale(4000).is_ok());
        for bad in [400, 1500, 999] {
            assert!(Throughput::autoscale(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Throughput::from_request(Some("400"), None).expect("manual"),
            Some(Throughput::Manual(400))
        );
        assert_eq!(
            Throughput::from_request(None, Some(r#"{"maxThroughput": 4000}"#)).expect("auto"),
            Some(Throughput::Autoscale(4000))
        );
        assert!(Throughput::from_request(Some("400"), Some(r#"{"maxThroughput": 4000}"#)).is_err());
        assert!(Throughput::from_request(Some("many"), None).is_err());
        let content = Throughput::Autoscale(4000).offer_content();
        assert_eq!(
            Throughput::from_offer_content(&content).expect("round trip"),
            Throughput::AutoscaleUpgrading {
                max_ru: 4000,
                increment_percent: 0
            }
        );
        let upgrading = Throughput::from_request(
            None,
            Some(r#"{"maxThroughput": 4000, "autoUpgradePolicy": {"throughputPolicy": {"incrementPercent": 15}}}"#),
        )
        .expect("policy")
        .expect("some");
        assert_eq!(
            upgrading.offer_content()["offerAutopilotSettings"]["autoUpgradePolicy"],
            serde_json::json!({"throughputPolicy": {"incrementPercent": 15}})
        );
        // Records written before the policy was kept still load.
        let old: Throughput = serde_json::from_str(r#"{"Autoscale":4000}"#).expect("old record");
        assert_eq!(old, Throughput::Autoscale(4000));
        for (bad, message) in [
            (
                Throughput::manual(350),
                "between 400 and 1000000 inclusive in increments of 100.",
            ),
            (
                Throughput::manual(450),
                "between 400 and 1000000 inclusive in increments of 100.",
            ),
            (
                Throughput::manual(1_000_100),
                "between 400 and 1000000 inclusive in increments of 100.",
            ),
            (
                Throughput::autoscale(500),
                "between 1000 and 1000000 inclusive in increments of 1000. Requested throughput 500 is less than required minimum throughput 1000.",
            ),
            (
                Throughput::autoscale(-200),
                "between 1000 and 1000000 inclusive in increments of 1000. Requested throughput -200 is less than required minimum throughput 1000.",
            ),
            (
                Throughput::autoscale(1500),
                "between 1000 and 1000000 inclusive in increments of 1000.",
            ),
        ] {
            let error = bad.expect_err("invalid");
            assert_eq!(
                error.message.as_deref(),
                Some(format!("The offer should have valid throughput values {message}").as_str())
            );
        }
    }

    #[test]
    fn a_budget_admits_until_spent_then_refuses_until_the_next_second() {
        let budgets = Budgets::default();
        let key = BudgetKey::Container(1);
        let start = 10_000;
        for _ in 0..4 {
            assert_eq!(
                budgets.admit(key, 400.0, start + 100, Priority::High),
                Ok(())
            );
            budgets.charge_user(key, 400.0, 100.0, start + 100);
        }
        assert_eq!(
            budgets.admit(key, 400.0, start + 250, Priority::High),
            Err(750)
        );
        assert_eq!(budgets.totals(key).throttled, 1);
        assert_eq!(
            budgets.admit(key, 400.0, start + 1000, Priority::High),
            Ok(()),
            "a new second"
        );
    }

    #[test]
    fn low_priority_requests_are_throttled_first() {
        let budgets = Budgets::default();
        let key = BudgetKey::Container(1);
        budgets.charge_user(key, 400.0, 319.0, 10_000);
        assert_eq!(budgets.admit(key, 400.0, 10_100, Priority::Low), Ok(()));
        budgets.charge_user(key, 400.0, 1.0, 10_100);
        // 320 of 400 spent: low priority waits for the next second, high priority goes on.
        assert_eq!(budgets.admit(key, 400.0, 10_200, Priority::Low), Err(800));
        assert_eq!(budgets.admit(key, 400.0, 10_200, Priority::High), Ok(()));
        budgets.charge_user(key, 400.0, 80.0, 10_200);
        assert_eq!(budgets.admit(key, 400.0, 10_300, Priority::High), Err(700));
        assert_eq!(budgets.admit(key, 400.0, 11_000, Priority::Low), Ok(()));
    }

    #[test]
    fn the_sweeper_spends_only_last_seconds_leftover_and_never_throttles_users() {
        let budgets = Budgets::default();
        let key = BudgetKey::Container(1);
        // Second 10: users spend 300 of 400.
        budgets.charge_user(key, 400.0, 300.0, 10_000);
        // Second 11: the sweeper may spend the 100 left over, whatever users do now.
        assert_eq!(budgets.sweeper_allowance(key, 400.0, 11_000), 100.0);
        budgets.charge_sweeper(key, 400.0, 100.0, 11_000);
        assert_eq!(budgets.sweeper_allowance(key, 400.0, 11_500), 0.0);
        assert_eq!(
            budgets.admit(key, 400.0, 11_600, Priority::High),
            Ok(()),
            "sweeping did not touch the users' budget"
        );
        budgets.charge_user(key, 400.0, 400.0, 11_600);
        // Second 12: users used everything in 11, so the sweeper waits.
        assert_eq!(budgets.sweeper_allowance(key, 400.0, 12_000), 0.0);
        // An idle gap: a full second's budget is left over.
        assert_eq!(budgets.sweeper_allowance(key, 400.0, 20_000), 400.0);
    }
}
