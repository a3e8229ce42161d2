//! How a container's index shapes an ORDER BY (`OrderingRules`), and how rows with equal sort
//! values are ordered (`compare_ties`).
//!
//! The service answers an ORDER BY from its index, so the index decides which rows come back:
//! an undefined value has no entry under a path indexed only through a wildcard, and a composite
//! index holds an undefined entry for a component that leads to an array or an object. The
//! engine decides from the container's indexing policy which of these rules hold and hands them
//! in; they are applied here to every row, so that a scan and an index walk give the same rows
//! in the same order. This module knows nothing of policies or paths.

use std::cmp::Ordering;

use serde_json::Value;

/// What the index serving an ORDER BY does to its rows. The default (nothing left out, values
/// compared as they are) is the query language without an index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrderingRules {
    /// Leave out rows whose sort value is undefined: a single-key ORDER BY on a path the
    /// policy indexes only through a wildcard (`/*`), which has no entry for such rows.
    pub omit_undefined: bool,
    /// Compare array and object sort values as undefined: a composite index adds an undefined
    /// entry for a component that leads to a non-scalar value.
    pub non_scalars_as_undefined: bool,
}

impl OrderingRules {
    /// A row's sort values as the ORDER BY compares them, or `None` when the index leaves the
    /// row out.
    pub(crate) fn shape(self, values: Vec<Option<Value>>) -> Option<Vec<Option<Value>>> {
        if self.omit_undefined && values.iter().any(Option::is_none) {
            return None;
        }
        if !self.non_scalars_as_undefined {
            return Some(values);
        }
        let scalar = |value: &Value| !matches!(value, Value::Array(_) | Value::Object(_));
        Some(
            values
                .into_iter()
                .map(|value| value.filter(scalar))
                .collect(),
        )
    }
}

/// The order of two rows whose sort values are equal: by their documents' tie-breakers (the
/// document number, the service's `_rid` order, when the engine gives one), in the direction
/// of the first ORDER BY key, as the service returns ties.
pub(crate) fn compare_ties(first_descending: bool, left: &[u8], right: &[u8]) -> Ordering {
    let ordering = left.cmp(right);
    if first_descending {
        ordering.reverse()
    } else {
        ordering
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_rules_leave_out_or_reshape_sort_values() {
        let values = || {
            vec![
                None,
                Some(json!([1])),
                Some(json!({"a": 1})),
                Some(json!(2)),
            ]
        };
        assert_eq!(OrderingRules::default().shape(values()), Some(values()));
        let wildcard = OrderingRules {
            omit_undefined: true,
            ..OrderingRules::default()
        };
        assert_eq!(wildcard.shape(values()), None);
        assert_eq!(
            wildcard.shape(vec![Some(json!([1]))]),
            Some(vec![Some(json!([1]))])
        );
        let composite = OrderingRules {
            non_scalars_as_undefined: true,
            ..OrderingRules::default()
        };
        assert_eq!(
            composite.shape(values()),
            Some(vec![None, None, None, Some(json!(2))])
        );
    }

    #[test]
    fn ties_follow_the_first_key_direction() {
        assert_eq!(compare_ties(false, &[1], &[2]), Ordering::Less);
        assert_eq!(compare_ties(true, &[1], &[2]), Ordering::Greater);
        assert_eq!(compare_ties(true, &[], &[]), Ordering::Equal);
    }
}
