//! Computed properties: a container's named expressions (`SELECT VALUE <expr> FROM c`), checked
//! as the service checks them, and substituted into a query before it is planned, so that
//! `c.name` (or `c["name"]`) on the root alias evaluates the expression over the item.
//!
//! They are not stored in items: `SELECT *` and `SELECT c` return the item as stored, and only
//! a reference by name gets the computed value (which wins over a stored property of the same
//! name, as in the service). Pure: it parses and rewrites trees, and prepares through
//! `prepared.rs`.

use serde_json::Value;
use std::sync::Arc;

use crate::ast::{Expr, Projection, Query, Source};
use crate::builtins::{Builtin, Kind};
use crate::context::UdfHost;
use crate::error::QueryError;
use crate::parser;
use crate::prepared::{prepare_parsed, Prepared, PreparedInner};
use crate::rewrite::{rewrite_expr, rewrite_query};
use crate::vectors::{self, VectorPolicy};

/// The most computed properties one container may define (the service's limit).
pub const COMPUTED_PROPERTIES_MAX: usize = 20;

/// System properties a computed property may not be named after.
const RESERVED_NAMES: [&str; 6] = ["id", "_rid", "_ts", "_etag", "_self", "_attachments"];

/// One checked definition: its name, the alias its query binds the item to, and its value.
#[derive(Debug, Clone, PartialEq)]
struct ComputedProperty {
    name: String,
    alias: String,
    value: Expr,
}

/// A container's computed properties, each parsed and checked once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComputedProperties {
    list: Vec<ComputedProperty>,
}

impl ComputedProperties {
    /// Checks a container's `computedProperties` (an array of `{"name", "query"}`); the error
    /// is the message a client gets.
    pub fn parse(definitions: &Value) -> Result<ComputedProperties, String> {
        let Value::Array(entries) = definitions else {
            return Err("The 'computedProperties' value must be an array.".into());
        };
        if entries.len() > COMPUTED_PROPERTIES_MAX {
            return Err(format!(
                "The number of computed properties ({}) exceeds the maximum of {COMPUTED_PROPERTIES_MAX}.",
                entries.len()
            ));
        }
        let mut names: Vec<&str> = Vec::with_capacity(entries.len());
        for entry in entries {
            let name = entry
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name.is_empty() {
                return Err("A computed property must have a non-empty 'name'.".into());
            }
            if names.contains(&name) {
                return Err(format!(
                    "The computed property name '{name}' is specified more than once."
                ));
            }
            names.push(name);
        }
        let mut list = Vec::with_capacity(entries.len());
        for entry in entries {
            let name = entry
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            check_name(name)?;
            let Some(text) = entry.get("query").and_then(Value::as_str) else {
                return Err(format!(
                    "The computed property '{name}' must have a 'query' string."
                ));
            };
            let (alias, value) = parse_definition(name, text)?;
            let invalid =
                |why: &str| format!("The query of computed property '{name}' is invalid: {why}");
            if let Some(other) = names.iter().find(|other| references(&value, &alias, other)) {
                return Err(invalid(&format!(
                    "it references the computed property '{other}'; computed properties cannot reference other computed properties."
                )));
            }
            list.push(ComputedProperty {
                name: name.to_string(),
                alias,
                value,
            });
        }
        Ok(ComputedProperties { list })
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Replaces every reference to a computed property on the query's root alias (`c.name`,
    /// `c["name"]`) by its value over that alias. Queries whose FROM does not bind the item
    /// itself (`FROM x IN c.list`) or that have no FROM are left as they are.
    fn apply(&self, query: &mut Query) {
        let Some(alias) = root_alias(query) else {
            return;
        };
        // `SELECT c.cp` names its output `cp`, as a stored property would.
        if let Projection::Items(items) = &mut query.select.projection {
            for item in items.iter_mut().filter(|item| item.alias.is_none()) {
                if let Some(name) = self.named(&item.expr, &alias) {
                    item.alias = Some(name.to_string());
                }
            }
        }
        rewrite_query(query, &mut |expr| self.substitute(expr, &alias));
    }

    /// The name of the computed property `expr` refers to on `alias`, if any.
    fn named(&self, expr: &Expr, alias: &str) -> Option<&str> {
        let (base, name) = match expr {
            Expr::Property(base, name) => (base, name.as_str()),
            Expr::Index(base, index) => match index.as_ref() {
                Expr::Literal(Value::String(name)) => (base, name.as_str()),
                _ => return None,
            },
            _ => return None,
        };
        if !matches!(base.as_ref(), Expr::Identifier(id) if id == alias) {
            return None;
        }
        self.list
            .iter()
            .find(|property| property.name == name)
            .map(|property| property.name.as_str())
    }

    /// The computed value `expr` stands for, if it names one on `alias`.
    fn substitute(&self, expr: &Expr, alias: &str) -> Option<Expr> {
        let name = self.named(expr, alias)?;
        let property = self.list.iter().find(|property| property.name == name)?;
        let mut value = property.value.clone();
        rename_alias(&mut value, &property.alias, alias);
        Some(value)
    }
}

/// [`crate::prepare`] for a container with computed properties and a vector embedding policy
/// (and, when the caller has them, user-defined functions). The plan the SDKs are given
/// describes the text as written; the container's rules apply to what runs.
pub fn prepare_with_computed(
    text: &str,
    parameters: &[(String, Value)],
    now_ms: i64,
    computed: &ComputedProperties,
    vectors: &VectorPolicy,
    udfs: Option<Arc<dyn UdfHost>>,
) -> Result<Prepared, QueryError> {
    let mut written = parser::parse(text)?;
    if computed.is_empty() && vectors.is_empty() {
        return prepare_parsed(written, text, parameters, now_ms, udfs).map(Prepared::new);
    }
    let mut query = written.clone();
    computed.apply(&mut query);
    vectors.apply(&mut query);
    vectors::orient(&mut query);
    // The text as written sorts a vector score in the direction of the function the policy
    // gave it, as the service's plan says.
    for (written_key, key) in written.order_by.iter_mut().zip(&query.order_by) {
        written_key.descending = key.descending;
    }
    let written = (query != written).then_some(written);
    let inner = prepare_parsed(query, text, parameters, now_ms, udfs)?;
    Ok(Prepared::new(PreparedInner { written, ..inner }))
}

fn check_name(name: &str) -> Result<(), String> {
    if RESERVED_NAMES.contains(&name) {
        return Err(format!(
            "The computed property name '{name}' is a reserved system property name."
        ));
    }
    if name.contains(['/', '.', '[', ']', '"', '\'']) || name.trim() != name {
        return Err(format!(
            "The computed property name '{name}' is invalid: computed properties are top-level properties and cannot have a nested path."
        ));
    }
    Ok(())
}

/// Parses one definition: `SELECT VALUE <expr> FROM <container> [<alias>]` and nothing else.
fn parse_definition(name: &str, text: &str) -> Result<(String, Expr), String> {
    let invalid = |why: &str| format!("The query of computed property '{name}' is invalid: {why}");
    let query = parser::parse(text).map_err(|error| invalid(&error.to_string()))?;
    let Projection::Value(value) = &query.select.projection else {
        return Err(invalid(
            "it must be of the form 'SELECT VALUE <expression> FROM c'.",
        ));
    };
    let alias = match &query.from {
        Some(from) if from.joins.is_empty() => match &from.source {
            Source::Bind {
                collection: Expr::Identifier(container),
                alias,
            } => alias.clone().unwrap_or_else(|| container.clone()),
            _ => {
                return Err(invalid(
                    "its FROM clause must name the item only, as in 'FROM c'.",
                ))
            }
        },
        Some(_) => return Err(invalid("JOIN is not supported in computed properties.")),
        None => return Err(invalid("it must have a FROM clause, as in 'FROM c'.")),
    };
    let clauses = [
        (query.select.distinct, "DISTINCT"),
        (query.select.top.is_some(), "TOP"),
        (query.filter.is_some(), "WHERE"),
        (!query.group_by.is_empty(), "GROUP BY"),
        (!query.order_by.is_empty(), "ORDER BY"),
        (query.offset_limit.is_some(), "OFFSET LIMIT"),
    ];
    if let Some((_, clause)) = clauses.iter().find(|(present, _)| *present) {
        return Err(invalid(&format!(
            "{clause} is not supported in computed properties."
        )));
    }
    let mut refused: Option<String> = None;
    value.walk(&mut |expr| {
        let why = match expr {
            Expr::Exists(_) | Expr::ArrayQuery(_) | Expr::Subquery(_) => {
                Some("subqueries are not supported in computed properties.".to_string())
            }
            Expr::UdfCall { .. } => {
                Some("user-defined functions are not supported in computed properties.".into())
            }
            Expr::Parameter(_) => Some("parameters are not supported in computed properties.".into()),
            Expr::Call {
                name,
                builtin: Some(builtin),
                ..
            } if refused_builtin(*builtin) => Some(format!(
                "the function '{name}' is not supported in computed properties (aggregate, spatial and non-deterministic functions are not)."
            )),
            _ => None,
        };
        if refused.is_none() {
            refused = why;
        }
    });
    if let Some(why) = refused {
        return Err(invalid(&why));
    }
    Ok((alias, value.clone()))
}

/// Aggregates, refused functions (spatial, RAND) and the clock's non-deterministic functions.
fn refused_builtin(builtin: Builtin) -> bool {
    matches!(builtin.kind(), Kind::Aggregate | Kind::Refused)
        || matches!(
            builtin,
            Builtin::GetCurrentDateTime
                | Builtin::GetCurrentTimestamp
                | Builtin::GetCurrentTicks
                | Builtin::GetCurrentDateTimeStatic
                | Builtin::GetCurrentTimestampStatic
                | Builtin::GetCurrentTicksStatic
        )
}

/// Whether `expr` reads `alias.name` (or `alias["name"]`).
fn references(expr: &Expr, alias: &str, name: &str) -> bool {
    let mut found = false;
    expr.walk(&mut |node| {
        let (base, property) = match node {
            Expr::Property(base, property) => (base, property.as_str()),
            Expr::Index(base, index) => match index.as_ref() {
                Expr::Literal(Value::String(property)) => (base, property.as_str()),
                _ => return,
            },
            _ => return,
        };
        if property == name && matches!(base.as_ref(), Expr::Identifier(id) if id == alias) {
            found = true;
        }
    });
    found
}

/// The alias a query binds each item to: `FROM c` → `c`, `FROM root r` → `r`.
fn root_alias(query: &Query) -> Option<String> {
    match &query.from.as_ref()?.source {
        Source::Bind {
            collection: Expr::Identifier(container),
            alias,
        } => Some(alias.clone().unwrap_or_else(|| container.clone())),
        _ => None,
    }
}

/// Renames the identifier `from` to `to` in a computed value (which has no subqueries).
fn rename_alias(expr: &mut Expr, from: &str, to: &str) {
    if from == to {
        return;
    }
    rewrite_expr(expr, &mut |node| match node {
        Expr::Identifier(name) if name == from => Some(Expr::Identifier(to.to_string())),
        _ => None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn computed() -> ComputedProperties {
        ComputedProperties::parse(&json!([
            {"name": "cp_lower", "query": "SELECT VALUE LOWER(c.name) FROM c"},
            {"name": "cp_sum", "query": "SELECT VALUE r.a + r.b FROM root r"},
        ]))
        .expect("valid")
    }

    fn run(text: &str, documents: &[Value]) -> Vec<Value> {
        let prepared =
            prepare_with_computed(text, &[], 0, &computed(), &VectorPolicy::default(), None)
                .expect("prepare");
        let mut run = prepared.start_page(None, 100).expect("page");
        for (n, document) in documents.iter().enumerate() {
            let key = (n as u64).to_be_bytes();
            if run.push(&key, document).expect("push").is_break() {
                break;
            }
        }
        run.finish(true).expect("finish").items
    }

    #[test]
    fn computed_properties_are_used_by_name_but_not_by_a_wildcard() {
        let documents = [
            json!({"id": "1", "name": "Bob", "a": 1, "b": 2}),
            json!({"id": "2", "name": "alice", "a": 5, "b": 5, "cp_lower": "stored"}),
        ];
        assert_eq!(
            run(
                "SELECT VALUE c.cp_lower FROM c ORDER BY c.cp_lower",
                &documents
            ),
            vec![json!("alice"), json!("bob")]
        );
        assert_eq!(
            run(
                "SELECT x.id, x.cp_sum FROM x WHERE x[\"cp_sum\"] = 10",
                &documents
            ),
            vec![json!({"id": "2", "cp_sum": 10})]
        );
        assert_eq!(
            run("SELECT * FROM c WHERE c.cp_sum = 3", &documents),
            vec![documents[0].clone()]
        );
        assert_eq!(
            run("SELECT VALUE c FROM c WHERE c.id = '2'", &documents),
            vec![documents[1].clone()]
        );
    }

    #[test]
    fn definitions_are_checked_as_the_service_checks_them() {
        let refused = [
            json!({"name": "cp"}),
            json!([{"name": "id", "query": "SELECT VALUE c.a FROM c"}]),
            json!([{"name": "a/b", "query": "SELECT VALUE c.a FROM c"}]),
            json!([{"name": "cp", "query": "SELECT c.a FROM c"}]),
            json!([{"name": "cp", "query": "SELECT VALUE c.a FROM c WHERE c.a > 1"}]),
            json!([{"name": "cp", "query": "SELECT VALUE c.a FROM c ORDER BY c.a"}]),
            json!([{"name": "cp", "query": "SELECT VALUE t FROM c JOIN t IN c.tags"}]),
            json!([{"name": "cp", "query": "SELECT VALUE COUNT(1) FROM c"}]),
            json!([{"name": "cp", "query": "SELECT VALUE GetCurrentDateTime() FROM c"}]),
            json!([{"name": "cp", "query": "SELECT VALUE (SELECT VALUE 1) FROM c"}]),
            json!([{"name": "cp", "query": "SELECT VALUE udf.f(c.a) FROM c"}]),
            json!([{"name": "cp", "query": "SELECT VALUE c.a FROM c"}, {"name": "cp", "query": "SELECT VALUE c.b FROM c"}]),
            json!([{"name": "cp1", "query": "SELECT VALUE c.a FROM c"}, {"name": "cp2", "query": "SELECT VALUE c.cp1 FROM c"}]),
            json!([{"name": "cp", "query": "SELECT VALUE c.a FROM"}]),
        ];
        for definitions in refused {
            assert!(
                ComputedProperties::parse(&definitions).is_err(),
                "{definitions}"
            );
        }
        let many: Vec<Value> = (0..=COMPUTED_PROPERTIES_MAX)
            .map(|n| json!({"name": format!("cp{n}"), "query": "SELECT VALUE c.a FROM c"}))
            .collect();
        assert!(ComputedProperties::parse(&Value::Array(many.clone())).is_err());
        assert!(
            ComputedProperties::parse(&Value::Array(many[..COMPUTED_PROPERTIES_MAX].to_vec()))
                .is_ok()
        );
    }
}
