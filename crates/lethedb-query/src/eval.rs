//! Evaluates one expression against one row of bound input aliases.
//!
//! Values are `Option<Cow<Value>>`: `None` is `undefined`, and paths into the document borrow
//! instead of copying. Each match arm says how `undefined` and `null` behave, following the
//! service: operators on mistyped operands yield `undefined` rather than an error, so a bad row
//! is filtered out instead of failing the query. The evaluator does no I/O; subqueries run over
//! values already in the row, through the context's `SubqueryRunner` (`exec.rs` installs it). Names were resolved by `plan.rs`, so an unknown name
//! here is an internal inconsistency reported as an error, never a panic.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::ast::{BinaryOp, Expr, UnaryOp};
use crate::context::{Context, Scope, Val};
use crate::error::QueryError;
use crate::functions;
use crate::like;
use crate::value::{as_number, compare_scalars, equals, number_value};

/// Evaluates expressions. `substitutions` replaces whole subexpressions by precomputed values:
/// GROUP BY keys and aggregate results when a group's projection is computed.
pub struct Evaluator<'c> {
    pub context: &'c Context,
    pub substitutions: &'c [(Expr, Option<Value>)],
}

/// Only `true` passes a filter; `false`, `undefined` and every non-boolean do not.
pub fn is_true(value: &Val<'_>) -> bool {
    matches!(value.as_deref(), Some(Value::Bool(true)))
}

fn owned<'a>(value: Value) -> Val<'a> {
    Some(Cow::Owned(value))
}

fn boolean<'a>(value: Option<bool>) -> Val<'a> {
    value.map(|b| Cow::Owned(Value::Bool(b)))
}

/// A value as a boolean for the three-valued logic: anything but a boolean is undefined.
fn logical(value: &Val<'_>) -> Option<bool> {
    match value.as_deref() {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// JavaScript's ToInt32, which the service's bitwise operators use.
fn to_int32(number: f64) -> i32 {
    if !number.is_finite() {
        return 0;
    }
    let truncated = number.trunc();
    let modulo = truncated.rem_euclid(4_294_967_296.0);
    (modulo as u32) as i32
}

impl<'c> Evaluator<'c> {
    pub fn new(context: &'c Context) -> Self {
        Evaluator {
            context,
            substitutions: &[],
        }
    }

    pub fn eval<'a>(
        &self,
        expr: &Expr,
        scope: Option<&'a Scope<'a>>,
    ) -> Result<Val<'a>, QueryError> {
        if !self.substitutions.is_empty() {
            if let Some((_, value)) = self
                .substitutions
                .iter()
                .find(|(pattern, _)| pattern == expr)
            {
                return Ok(value.clone().map(Cow::Owned));
            }
        }
        match expr {
            Expr::Undefined => Ok(None),
            Expr::Literal(value) => Ok(owned(value.clone())),
            Expr::Parameter(name) => match self.context.parameters.get(name) {
                Some(value) => Ok(owned(value.clone())),
                None => Err(QueryError::semantic(format!(
                    "Parameter '@{name}' is not defined."
                ))),
            },
            Expr::Identifier(name) => match scope.and_then(|scope| scope.lookup(name)) {
                Some(value) => Ok(Some(Cow::Borrowed(value))),
                None => Err(QueryError::semantic(format!(
                    "Identifier '{name}' could not be resolved."
                ))),
            },
            // A property of anything but an object is undefined, as is a missing property.
            Expr::Property(base, name) => Ok(property(self.eval(base, scope)?, name)),
            Expr::Index(base, index) => {
                let base = self.eval(base, scope)?;
                let index = self.eval(index, scope)?;
                Ok(match index.as_deref() {
                    Some(Value::String(name)) => property(base, name),
                    Some(Value::Number(_)) => element(base, index.as_deref().and_then(as_number)),
                    // Undefined, null, booleans, arrays and objects index nothing.
                    _ => None,
                })
            }
            // Undefined elements are left out of an array literal, as the service does.
            Expr::Array(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    if let Some(value) = self.eval(item, scope)? {
                        values.push(value.into_owned());
                    }
                }
                Ok(owned(Value::Array(values)))
            }
            // Undefined members are left out of an object literal.
            Expr::Object(fields) => {
                let mut members = Map::new();
                for (name, item) in fields {
                    if let Some(value) = self.eval(item, scope)? {
                        members.insert(name.clone(), value.into_owned());
                    }
                }
                Ok(owned(Value::Object(members)))
            }
            Expr::Unary(op, operand) => {
                let value = self.eval(operand, scope)?;
                Ok(match op {
                    // NOT undefined (or NOT of a non-boolean) is undefined.
                    UnaryOp::Not => boolean(logical(&value).map(|b| !b)),
                    // Arithmetic on anything but a number (null included) is undefined.
                    UnaryOp::Negate => value
                        .as_deref()
                        .and_then(as_number)
                        .and_then(|n| number_value(-n))
                        .map(Cow::Owned),
                    UnaryOp::Plus => value
                        .as_deref()
                        .and_then(as_number)
                        .and_then(number_value)
                        .map(Cow::Owned),
                    UnaryOp::BitNot => value
                        .as_deref()
                        .and_then(as_number)
                        .and_then(|n| number_value(f64::from(!to_int32(n))))
                        .map(Cow::Owned),
                })
            }
            Expr::Binary(op, left, right) => self.binary(*op, left, right, scope),
            // Only a true condition selects the first branch; false, undefined and
            // non-booleans select the second.
            Expr::Conditional(condition, if_true, if_false) => {
                if is_true(&self.eval(condition, scope)?) {
                    self.eval(if_true, scope)
                } else {
                    self.eval(if_false, scope)
                }
            }
            // `x BETWEEN a AND b` is `x >= a AND x <= b`: undefined across types.
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let value = self.eval(expr, scope)?;
                let low = self.eval(low, scope)?;
                let high = self.eval(high, scope)?;
                let result = match (value.as_deref(), low.as_deref(), high.as_deref()) {
                    (Some(value), Some(low), Some(high)) => {
                        match (compare_scalars(value, low), compare_scalars(value, high)) {
                            (Some(above), Some(below)) => Some(above.is_ge() && below.is_le()),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                Ok(boolean(result.map(|b| b != *negated)))
            }
            // `x IN (a, b)` is `x = a OR x = b`: true on any match, undefined if nothing
            // matched but some comparison was undefined, false otherwise.
            Expr::In {
                expr,
                list,
                negated,
            } => {
                let value = self.eval(expr, scope)?;
                let Some(value) = value else {
                    return Ok(None);
                };
                let mut result = Some(false);
                for candidate in list {
                    let candidate = self.eval(candidate, scope)?;
                    match candidate
                        .as_deref()
                        .and_then(|candidate| equals(&value, candidate))
                    {
                        Some(true) => {
                            result = Some(true);
                            break;
                        }
                        Some(false) => {}
                        None => result = None,
                    }
                }
                Ok(boolean(result.map(|b| b != *negated)))
            }
            // LIKE needs a string on both sides; anything else is undefined.
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                let value = self.eval(expr, scope)?;
                let pattern = self.eval(pattern, scope)?;
                let escape = match escape {
                    Some(escape) => match self.eval(escape, scope)?.as_deref() {
                        Some(Value::String(text)) => {
                            let mut characters = text.chars();
                            match (characters.next(), characters.next()) {
                                (Some(character), None) => Some(character),
                                _ => {
                                    return Err(QueryError::semantic(
                                        "The ESCAPE clause of LIKE takes a single character.",
                                    ))
                                }
                            }
                        }
                        _ => return Ok(None),
                    },
                    None => None,
                };
                Ok(match (value.as_deref(), pattern.as_deref()) {
                    (Some(Value::String(text)), Some(Value::String(pattern))) => {
                        let matched = match self.context.like_patterns.get(pattern, escape) {
                            Some(compiled) => compiled.matches(text),
                            None => like::matches(text, pattern, escape),
                        };
                        boolean(Some(matched != *negated))
                    }
                    _ => None,
                })
            }
            Expr::Call {
                name,
                args,
                builtin,
            } => {
                let Some(builtin) = *builtin else {
                    return Err(QueryError::semantic(format!(
                        "'{name}' is not a recognized built-in function name."
                    )));
                };
                if builtin.is_aggregate() {
                    return Err(QueryError::semantic(format!(
                        "Aggregate function '{name}' is not allowed in this context."
                    )));
                }
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.eval(arg, scope)?);
                }
                let language = self.context.full_text.language_of(args.first());
                Ok(functions::call(builtin, &values, self.context, language)?.map(Cow::Owned))
            }
            Expr::UdfCall { name, args } => {
                let Some(host) = &self.context.udfs else {
                    return Err(QueryError::Usage(format!(
                        "udf.{name} reached the evaluator without a UDF host"
                    )));
                };
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.eval(arg, scope)?.map(Cow::into_owned));
                }
                Ok(host.call(name, &values)?.map(Cow::Owned))
            }
            Expr::Exists(query) => {
                let results = self
                    .context
                    .subqueries
                    .run(self.context, query, scope, Some(1))?;
                Ok(owned(Value::Bool(!results.is_empty())))
            }
            Expr::ArrayQuery(query) => {
                let results = self
                    .context
                    .subqueries
                    .run(self.context, query, scope, None)?;
                Ok(owned(Value::Array(results)))
            }
            // A scalar subquery yields its first result, or undefined when it has none.
            Expr::Subquery(query) => {
                let results = self
                    .context
                    .subqueries
                    .run(self.context, query, scope, Some(1))?;
                Ok(results.into_iter().next().map(Cow::Owned))
            }
        }
    }

    fn binary<'a>(
        &self,
        op: BinaryOp,
        left: &Expr,
        right: &Expr,
        scope: Option<&'a Scope<'a>>,
    ) -> Result<Val<'a>, QueryError> {
        match op {
            // Three-valued logic: false AND anything is false, true OR anything is true;
            // otherwise an undefined or non-boolean operand makes the result undefined. The
            // right side is skipped when the left decides.
            BinaryOp::And => {
                let left = logical(&self.eval(left, scope)?);
                if left == Some(false) {
                    return Ok(boolean(Some(false)));
                }
                let right = logical(&self.eval(right, scope)?);
                Ok(boolean(match (left, right) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                }))
            }
            BinaryOp::Or => {
                let left = logical(&self.eval(left, scope)?);
                if left == Some(true) {
                    return Ok(boolean(Some(true)));
                }
                let right = logical(&self.eval(right, scope)?);
                Ok(boolean(match (left, right) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                }))
            }
            // `??` returns the left side unless it is undefined; null is a value and wins.
            BinaryOp::Coalesce => match self.eval(left, scope)? {
                Some(value) => Ok(Some(value)),
                None => self.eval(right, scope),
            },
            _ => {
                let left = self.eval(left, scope)?;
                let right = self.eval(right, scope)?;
                let (Some(left), Some(right)) = (left.as_deref(), right.as_deref()) else {
                    // Every remaining operator is undefined when either side is undefined.
                    return Ok(None);
                };
                Ok(binary_values(op, left, right).map(Cow::Owned))
            }
        }
    }
}

/// Operators over two defined values. Comparisons are undefined across types (null only
/// equals null); arithmetic and bitwise operators need two numbers; `||` needs two strings.
fn binary_values(op: BinaryOp, left: &Value, right: &Value) -> Option<Value> {
    let numbers = || Some((as_number(left)?, as_number(right)?));
    match op {
        BinaryOp::Equal => equals(left, right).map(Value::Bool),
        // `!=` between two objects or two arrays is undefined, as the service documents.
        BinaryOp::NotEqual => match (left, right) {
            (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => None,
            _ => equals(left, right).map(|b| Value::Bool(!b)),
        },
        BinaryOp::Less => compare_scalars(left, right).map(|o| Value::Bool(o.is_lt())),
        BinaryOp::LessOrEqual => compare_scalars(left, right).map(|o| Value::Bool(o.is_le())),
        BinaryOp::Greater => compare_scalars(left, right).map(|o| Value::Bool(o.is_gt())),
        BinaryOp::GreaterOrEqual => compare_scalars(left, right).map(|o| Value::Bool(o.is_ge())),
        BinaryOp::Add => numbers().and_then(|(a, b)| number_value(a + b)),
        BinaryOp::Subtract => numbers().and_then(|(a, b)| number_value(a - b)),
        BinaryOp::Multiply => numbers().and_then(|(a, b)| number_value(a * b)),
        // Division by zero gives a non-finite double, which JSON cannot carry: undefined.
        BinaryOp::Divide => numbers().and_then(|(a, b)| number_value(a / b)),
        BinaryOp::Modulo => numbers().and_then(|(a, b)| number_value(a % b)),
        BinaryOp::BitAnd => {
            numbers().and_then(|(a, b)| number_value(f64::from(to_int32(a) & to_int32(b))))
        }
        BinaryOp::BitOr => {
            numbers().and_then(|(a, b)| number_value(f64::from(to_int32(a) | to_int32(b))))
        }
        BinaryOp::BitXor => {
            numbers().and_then(|(a, b)| number_value(f64::from(to_int32(a) ^ to_int32(b))))
        }
        BinaryOp::ShiftLeft => numbers().and_then(|(a, b)| {
            number_value(f64::from(to_int32(a).wrapping_shl(to_int32(b) as u32 & 31)))
        }),
        BinaryOp::ShiftRight => numbers().and_then(|(a, b)| {
            number_value(f64::from(to_int32(a).wrapping_shr(to_int32(b) as u32 & 31)))
        }),
        BinaryOp::ShiftRightZeroFill => numbers().and_then(|(a, b)| {
            number_value(f64::from(
                (to_int32(a) as u32).wrapping_shr(to_int32(b) as u32 & 31),
            ))
        }),
        BinaryOp::Concat => match (left, right) {
            (Value::String(a), Value::String(b)) => Some(Value::String(format!("{a}{b}"))),
            _ => None,
        },
        BinaryOp::And | BinaryOp::Or | BinaryOp::Coalesce => None,
    }
}

/// `base.name`: undefined unless `base` is an object that has the member.
pub fn property<'a>(base: Val<'a>, name: &str) -> Val<'a> {
    match base? {
        Cow::Borrowed(Value::Object(members)) => members.get(name).map(Cow::Borrowed),
        Cow::Owned(Value::Object(mut members)) => members.remove(name).map(Cow::Owned),
        _ => None,
    }
}

/// `base[n]`: undefined unless `base` is an array and `n` a whole index inside it.
fn element<'a>(base: Val<'a>, index: Option<f64>) -> Val<'a> {
    let index = index?;
    if index < 0.0 || index.fract() != 0.0 {
        return None;
    }
    let index = index as usize;
    match base? {
        Cow::Borrowed(Value::Array(items)) => items.get(index).map(Cow::Borrowed),
        Cow::Owned(Value::Array(mut items)) => {
            if index < items.len() {
                Some(Cow::Owned(items.swap_remove(index)))
            } else {
                None
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Projection;
    use crate::parser::parse;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::Arc;

    fn eval_text(text: &str, document: &Value) -> Result<Option<Value>, QueryError> {
        let query = parse(&format!("SELECT VALUE {text} FROM c"))?;
        let Projection::Value(expr) = &query.select.projection else {
            return Err(QueryError::semantic("not a VALUE query"));
        };
        let context = Context {
            parameters: HashMap::from([("p".to_string(), json!(5))]),
            now_ms: 0,
            subqueries: Arc::new(crate::subquery::Subqueries::default()),
            regexes: crate::context::Regexes::default(),
            like_patterns: crate::context::LikePatterns::default(),
            udfs: None,
            full_text: Arc::default(),
        };
        let evaluator = Evaluator::new(&context);
        let scope = Scope {
            name: "c",
            value: document,
            parent: None,
        };
        Ok(evaluator.eval(expr, Some(&scope))?.map(Cow::into_owned))
    }

    fn check(text: &str, expected: Option<Value>) {
        let document =
            json!({"a": 1, "s": "x", "n": null, "t": true, "arr": [10, 20], "o": {"k": "v"}});
        assert_eq!(eval_text(text, &document), Ok(expected), "{text}");
    }

    #[test]
    fn paths_and_undefined() {
        check("c.a", Some(json!(1)));
        check("c.missing", None);
        check("c.missing.deeper", None);
        check("c.arr[1]", Some(json!(20)));
        check("c.arr[2]", None);
        check("c.arr[-1]", None);
        check("c['o'].k", Some(json!("v")));
        check("c.s.length", None);
        check("c[@p]", None);
    }

    #[test]
    fn three_valued_logic() {
        check("true AND c.missing", None);
        check("false AND c.missing", Some(json!(false)));
        check("c.missing AND false", Some(json!(false)));
        check("true OR c.missing", Some(json!(true)));
        check("c.missing OR true", Some(json!(true)));
        check("false OR c.missing", None);
        check("NOT c.missing", None);
        check("NOT 1", None);
        check("1 AND true", None);
    }

    #[test]
    fn comparisons_across_types_are_undefined() {
        check("1 = '1'", None);
        check("c.n = null", Some(json!(true)));
        check("c.missing = null", None);
        check("1 < 2", Some(json!(true)));
        check("'a' < 'b'", Some(json!(true)));
        check("false < true", Some(json!(true)));
        check("[1] < [2]", None);
        check("[1, 2] = [1, 2]", Some(json!(true)));
        check("{'a': 1} != {'a': 2}", None);
        check("1 != 2", Some(json!(true)));
    }

    #[test]
    fn arithmetic_and_strings() {
        check("1 + 1", Some(json!(2)));
        check("7 / 2", Some(json!(3.5)));
        check("1 / 0", None);
        check("1 + '1'", None);
        check("null + 1", None);
        check("'a' || 'b'", Some(json!("ab")));
        check("'a' || 1", None);
        check("-c.a", Some(json!(-1)));
        check("~5", Some(json!(-6)));
        check("-1 >>> 28", Some(json!(15)));
        check("1 << 31", Some(json!(-2147483648)));
    }

    #[test]
    fn coalesce_conditional_in_between() {
        check("c.missing ?? 3", Some(json!(3)));
        check("c.n ?? 3", Some(json!(null)));
        check("c.t ? 1 : 2", Some(json!(1)));
        check("c.missing ? 1 : 2", Some(json!(2)));
        check("'yes' ? 1 : 2", Some(json!(2)));
        check("c.a IN (1, 2)", Some(json!(true)));
        check("c.a IN ('1', 2)", None);
        check("c.a IN ('1', 1)", Some(json!(true)));
        check("c.a NOT IN (2, 3)", Some(json!(true)));
        check("c.missing IN (1)", None);
        check("c.a BETWEEN 0 AND 1", Some(json!(true)));
        check("c.a NOT BETWEEN 0 AND 1", Some(json!(false)));
        check("c.a BETWEEN 'a' AND 'z'", None);
    }

    #[test]
    fn literals_drop_undefined_members() {
        check("[1, c.missing, 2]", Some(json!([1, 2])));
        check("{'x': c.missing, 'y': c.a}", Some(json!({"y": 1})));
        check("@p", Some(json!(5)));
    }
}
