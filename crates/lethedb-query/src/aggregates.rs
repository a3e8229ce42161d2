//! The running state of one aggregate call over one group of rows: COUNT, SUM, AVG, MIN, MAX,
//! COUNTIF, MAKELIST and MAKESET, fed one argument value per row and asked for the result once
//! the group is complete.
//!
//! It knows nothing of rows, groups or pages (`exec.rs` holds those), and nothing of how the
//! SDKs combine the partial results of several ranges (`client_rewrite.rs` writes the shapes).

use std::cmp::Ordering;
use std::collections::HashSet;

use serde_json::Value;

use crate::ast::Expr;
use crate::builtins::Builtin;
use crate::value::{canonical_key, number_value, total_order};

/// The running state of one aggregate over one group. Undefined arguments are skipped by
/// every aggregate; COUNT counts the defined ones.
#[derive(Debug, Clone)]
pub(crate) enum AggregateState {
    Count(u64),
    /// COUNTIF counts the rows whose argument is the boolean `true`.
    CountIf(u64),
    /// SUM and AVG become undefined once a defined non-number is seen.
    Sum {
        total: f64,
        valid: bool,
    },
    Average {
        total: f64,
        count: u64,
        valid: bool,
    },
    /// MIN and MAX order null < booleans < numbers < strings; an array or object makes the
    /// result undefined.
    Extreme {
        best: Option<Value>,
        valid: bool,
        maximum: bool,
    },
    /// MAKELIST keeps every defined value in the order the rows came; MAKESET keeps each
    /// value once, `seen` holding the canonical text of each (the text DISTINCT compares).
    List {
        values: Vec<Value>,
        seen: Option<HashSet<String>>,
    },
    /// A value the engine computed from an index instead of rows (`covered.rs`).
    Known(Option<Value>),
}

impl AggregateState {
    pub(crate) fn new(aggregate: &Expr) -> Self {
        let builtin = match aggregate {
            Expr::Call { builtin, .. } => *builtin,
            _ => None,
        };
        match builtin {
            Some(Builtin::Sum) => AggregateState::Sum {
                total: 0.0,
                valid: true,
            },
            Some(Builtin::Average) => AggregateState::Average {
                total: 0.0,
                count: 0,
                valid: true,
            },
            Some(Builtin::Min | Builtin::Max) => AggregateState::Extreme {
                best: None,
                valid: true,
                maximum: builtin == Some(Builtin::Max),
            },
            Some(Builtin::CountIf) => AggregateState::CountIf(0),
            Some(Builtin::MakeList | Builtin::MakeSet) => AggregateState::List {
                values: Vec::new(),
                seen: (builtin == Some(Builtin::MakeSet)).then(HashSet::new),
            },
            _ => AggregateState::Count(0),
        }
    }

    pub(crate) fn add(&mut self, value: Option<Value>) {
        let Some(value) = value else {
            return;
        };
        match self {
            AggregateState::Known(_) => {}
            AggregateState::Count(count) => *count += 1,
            AggregateState::CountIf(count) => {
                if value == Value::Bool(true) {
                    *count += 1;
                }
            }
            AggregateState::Sum { total, valid } => match value.as_f64() {
                Some(number) => *total += number,
                None => *valid = false,
            },
            AggregateState::Average {
                total,
                count,
                valid,
            } => match value.as_f64() {
                Some(number) => {
                    *total += number;
                    *count += 1;
                }
                None => *valid = false,
            },
            AggregateState::Extreme {
                best,
                valid,
                maximum,
            } => add_extreme(best, valid, *maximum, value),
            AggregateState::List { values, seen } => {
                let new = match seen {
                    Some(seen) => seen.insert(canonical_key(Some(&value))),
                    None => true,
                };
                if new {
                    values.push(value);
                }
            }
        }
    }

    /// How many values the state holds (MAKELIST and MAKESET grow with their group; the
    /// caller bounds them as it bounds rows).
    pub(crate) fn held(&self) -> usize {
        match self {
            AggregateState::List { values, .. } => values.len(),
            _ => 0,
        }
    }

    pub(crate) fn result(&self) -> Option<Value> {
        match self {
            AggregateState::Count(count) | AggregateState::CountIf(count) => {
                Some(Value::from(*count))
            }
            AggregateState::Sum { total, valid: true } => number_value(*total),
            AggregateState::Average {
                total,
                count,
                valid: true,
            } if *count > 0 => number_value(*total / *count as f64),
            AggregateState::Extreme {
                best, valid: true, ..
            } => best.clone(),
            AggregateState::List { values, .. } => Some(Value::Array(values.clone())),
            AggregateState::Known(value) => value.clone(),
            _ => None,
        }
    }
}

/// MIN or MAX taking one more value.
fn add_extreme(best: &mut Option<Value>, valid: &mut bool, maximum: bool, value: Value) {
    if matches!(value, Value::Array(_) | Value::Object(_)) {
        *valid = false;
        return;
    }
    let replace = match best {
        None => true,
        Some(current) => {
            let ordering = total_order(Some(&value), Some(current));
            if maximum {
                ordering == Ordering::Greater
            } else {
                ordering == Ordering::Less
            }
        }
    };
    if replace {
        *best = Some(value);
    }
}
