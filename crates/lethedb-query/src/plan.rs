//! Checks a parsed query against the rules the grammar cannot express, and derives what the
//! executor needs: output property names, aggregate calls, and the TOP/OFFSET/LIMIT numbers.
//!
//! Everything that can be known before seeing a document is rejected here (unknown
//! identifiers, functions and parameters, wrong argument counts, misplaced aggregates,
//! unsupported constructs), so evaluation never meets a malformed tree. It does not evaluate
//! anything but the constant `TOP`/`OFFSET`/`LIMIT` values.

use std::collections::HashMap;

use serde_json::Value;

use crate::ast::{Expr, From, Projection, Query, Source};
use crate::builtins::{check_call, is_aggregate_name};
use crate::context::UdfHost;
use crate::error::QueryError;
use crate::value::as_number;

/// What the executor needs to know about one query (top-level or subquery).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryPlan {
    /// Distinct aggregate calls of the projection, in order of first appearance.
    pub aggregates: Vec<Expr>,
    /// True when rows collapse into groups: GROUP BY or an aggregate in the projection.
    pub grouped: bool,
    /// Property names of `SELECT a, b` items: the alias, the last path segment, or `$n`.
    pub output_names: Vec<String>,
    pub top: Option<u64>,
    pub offset: u64,
    pub limit: Option<u64>,
}

impl QueryPlan {
    /// One past the index of the last result allowed by TOP and LIMIT, if either is given.
    pub fn end(&self) -> Option<u64> {
        let by_limit = self.limit.map(|limit| self.offset.saturating_add(limit));
        match (self.top, by_limit) {
            (Some(top), Some(limit)) => Some(top.min(limit)),
            (top, limit) => top.or(limit),
        }
    }
}

pub fn is_aggregate_call(expr: &Expr) -> bool {
    matches!(expr, Expr::Call { builtin: Some(builtin), .. } if builtin.is_aggregate())
}

/// Derives the plan of a query whose names were already checked by `validate`.
pub fn analyze(
    query: &Query,
    parameters: &HashMap<String, Value>,
) -> Result<QueryPlan, QueryError> {
    let mut aggregates: Vec<Expr> = Vec::new();
    let mut collect = |expr: &Expr| {
        if is_aggregate_call(expr) && !aggregates.contains(expr) {
            aggregates.push(expr.clone());
        }
    };
    let mut output_names = Vec::new();
    match &query.select.projection {
        Projection::Star => {}
        Projection::Value(expr) => expr.walk(&mut collect),
        Projection::Items(items) => {
            let mut unnamed_count = 0;
            for item in items {
                item.expr.walk(&mut collect);
                let name = match (&item.alias, &item.expr) {
                    (Some(alias), _) => alias.clone(),
                    (None, Expr::Identifier(name) | Expr::Property(_, name)) => name.clone(),
                    (None, Expr::Index(_, index))
                        if matches!(**index, Expr::Literal(Value::String(_))) =>
                    {
                        match &**index {
                            Expr::Literal(Value::String(name)) => name.clone(),
                            _ => String::new(),
                        }
                    }
                    (None, _) => {
                        unnamed_count += 1;
                        format!("${unnamed_count}")
                    }
                };
                if output_names.contains(&name) {
                    return Err(QueryError::semantic(format!(
                        "The object property name '{name}' is specified more than once."
                    )));
                }
                output_names.push(name);
            }
        }
    }
    let grouped = !query.group_by.is_empty() || !aggregates.is_empty();
    let top = query
        .select
        .top
        .as_ref()
        .map(|expr| count_value(expr, "TOP", parameters))
        .transpose()?;
    let (offset, limit) = match &query.offset_limit {
        Some(offset_limit) => (
            count_value(&offset_limit.offset, "OFFSET", parameters)?,
            Some(count_value(&offset_limit.limit, "LIMIT", parameters)?),
        ),
        None => (0, None),
    };
    Ok(QueryPlan {
        aggregates,
        grouped,
        output_names,
        top,
        offset,
        limit,
    })
}

/// TOP, OFFSET and LIMIT take a non-negative whole number, literal or parameter.
fn count_value(
    expr: &Expr,
    clause: &str,
    parameters: &HashMap<String, Value>,
) -> Result<u64, QueryError> {
    let value = match expr {
        Expr::Literal(value) => Some(value),
        Expr::Parameter(name) => parameters.get(name),
        _ => None,
    };
    match value.and_then(as_number) {
        Some(number) if number >= 0.0 && number.fract() == 0.0 && number <= u64::MAX as f64 => {
            Ok(number as u64)
        }
        _ => Err(QueryError::semantic(format!(
            "The {clause} value must be a non-negative integer, got {}.",
            value.map_or_else(|| "undefined".to_string(), Value::to_string)
        ))),
    }
}

/// The alias a source binds: explicit, or inferred from the last path step.
pub fn source_alias(source: &Source) -> Result<&str, QueryError> {
    match source {
        Source::Iterate { alias, .. }
        | Source::Bind {
            alias: Some(alias), ..
        } => Ok(alias),
        Source::Bind {
            collection,
            alias: None,
        } => match collection {
            Expr::Identifier(name) | Expr::Property(_, name) => Ok(name),
            Expr::Index(_, index) => match &**index {
                Expr::Literal(Value::String(name)) => Ok(name),
                _ => Err(QueryError::semantic(format!(
                    "The source '{collection}' needs an alias (AS name)."
                ))),
            },
            _ => Err(QueryError::semantic(format!(
                "The source '{collection}' needs an alias (AS name)."
            ))),
        },
    }
}

/// The identifier at the root of a path such as `c.a[0].b`.
pub fn path_root(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Identifier(name) => Some(name),
        Expr::Property(base, _) | Expr::Index(base, _) => path_root(base),
        _ => None,
    }
}

/// Checks the query and, recursively, its subqueries. `outer` holds the aliases visible from
/// enclosing queries; `top_level` says whether the root source names the container.
pub fn validate(
    query: &Query,
    parameters: &HashMap<String, Value>,
    udfs: Option<&dyn UdfHost>,
    outer: &[String],
    top_level: bool,
) -> Result<(), QueryError> {
    let checker = Checker { parameters, udfs };
    let mut scope: Vec<String> = outer.to_vec();
    let source_count = match &query.from {
        Some(from) => checker.sources(from, &mut scope, top_level)?,
        None => 0,
    };
    checker.clauses(query, &scope, source_count)?;
    let plan = analyze(query, parameters)?;
    if plan.grouped {
        grouped_query(query)?;
    }
    Ok(())
}

/// The rules of a query whose rows collapse into groups (GROUP BY or aggregates).
fn grouped_query(query: &Query) -> Result<(), QueryError> {
    // Aggregates without GROUP BY make one row, which any ORDER BY leaves as it is (the
    // service serves that, and its per-range aggregate queries keep the ORDER BY).
    if !query.order_by.is_empty() && !query.group_by.is_empty() {
        return Err(QueryError::unsupported("ORDER BY together with GROUP BY"));
    }
    match &query.select.projection {
        Projection::Star => Err(QueryError::semantic(
            "'SELECT *' is not valid with GROUP BY or aggregates.",
        )),
        Projection::Value(expr) => grouped_projection(expr, &query.group_by),
        Projection::Items(items) => items
            .iter()
            .try_for_each(|item| grouped_projection(&item.expr, &query.group_by)),
    }
}

/// In a grouped query the projection may use only GROUP BY expressions, aggregates and
/// constants: any other reference to a row would pick an arbitrary row of the group.
fn grouped_projection(expr: &Expr, group_by: &[Expr]) -> Result<(), QueryError> {
    if group_by.contains(expr) || is_aggregate_call(expr) {
        return Ok(());
    }
    match expr {
        Expr::Identifier(_) | Expr::Property(..) | Expr::Index(..) => Err(QueryError::semantic(format!(
            "'{expr}' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause."
        ))),
        Expr::Exists(_) | Expr::ArrayQuery(_) | Expr::Subquery(_) => {
            Err(QueryError::unsupported("a subquery in the projection of a grouped query"))
        }
        _ => {
            let mut result = Ok(());
            crate::ast::for_each_child(expr, &mut |child| {
                if result.is_ok() {
                    result = grouped_projection(child, group_by);
                }
            });
            result
        }
    }
}

struct Checker<'p> {
    parameters: &'p HashMap<String, Value>,
    udfs: Option<&'p dyn UdfHost>,
}

impl Checker<'_> {
    /// Checks the FROM sources in order, each seeing the aliases before it, and adds their
    /// aliases to `scope`. Returns how many sources the query has.
    fn sources(
        &self,
        from: &From,
        scope: &mut Vec<String>,
        top_level: bool,
    ) -> Result<usize, QueryError> {
        let mut own_aliases: Vec<String> = Vec::new();
        for (position, source) in std::iter::once(&from.source).chain(&from.joins).enumerate() {
            let collection = match source {
                Source::Iterate { collection, .. } | Source::Bind { collection, .. } => collection,
            };
            if position == 0 && top_level {
                self.container_collection(collection, scope)?;
            } else {
                self.joined_collection(collection, scope)?;
            }
            let alias = source_alias(source)?.to_string();
            if own_aliases.contains(&alias) {
                return Err(QueryError::semantic(format!(
                    "The input alias '{alias}' is specified more than once."
                )));
            }
            own_aliases.push(alias.clone());
            scope.push(alias);
        }
        Ok(own_aliases.len())
    }

    /// The root source of a top-level query: a path from the container, which is named by any
    /// identifier (`FROM products p`, `FROM root`) that only this expression can see.
    fn container_collection(&self, collection: &Expr, scope: &[String]) -> Result<(), QueryError> {
        if let Expr::Subquery(_) = collection {
            return Err(QueryError::unsupported(
                "a subquery as the root FROM source",
            ));
        }
        let Some(container) = path_root(collection) else {
            return Err(QueryError::Syntax {
                near: collection.to_string(),
                position: 0,
            });
        };
        let mut container_scope = scope.to_vec();
        container_scope.push(container.to_string());
        self.expr(collection, &container_scope, false)
    }

    /// A joined source, or the root source of a subquery: a subquery or a path from an alias
    /// in scope.
    fn joined_collection(&self, collection: &Expr, scope: &[String]) -> Result<(), QueryError> {
        match collection {
            Expr::Subquery(inner) => validate(inner, self.parameters, self.udfs, scope, false),
            _ if path_root(collection).is_some() => self.expr(collection, scope, false),
            _ => Err(QueryError::Syntax {
                near: collection.to_string(),
                position: 0,
            }),
        }
    }

    /// Checks every clause after FROM in a fixed order, so the error reported is that of the
    /// first failing one: TOP, OFFSET/LIMIT, the projection, WHERE, GROUP BY, ORDER BY.
    fn clauses(
        &self,
        query: &Query,
        scope: &[String],
        source_count: usize,
    ) -> Result<(), QueryError> {
        if let Some(top) = &query.select.top {
            self.expr(top, scope, false)?;
        }
        if let Some(offset_limit) = &query.offset_limit {
            self.expr(&offset_limit.offset, scope, false)?;
            self.expr(&offset_limit.limit, scope, false)?;
        }
        match &query.select.projection {
            Projection::Star if source_count == 0 => {
                return Err(QueryError::semantic(
                    "'SELECT *' is not valid if FROM clause is omitted.",
                ));
            }
            Projection::Star if source_count > 1 => {
                return Err(QueryError::semantic(
                    "'SELECT *' is only valid with a single input set.",
                ));
            }
            Projection::Star => {}
            Projection::Value(expr) => self.expr(expr, scope, true)?,
            Projection::Items(items) => {
                for item in items {
                    self.expr(&item.expr, scope, true)?;
                }
            }
        }
        if let Some(filter) = &query.filter {
            self.expr(filter, scope, false)?;
        }
        for expr in query
            .group_by
            .iter()
            .chain(query.order_by.iter().map(|key| &key.expr))
        {
            self.expr(expr, scope, false)?;
        }
        Ok(())
    }

    /// Checks one expression: names in `scope`, known functions with the right number of
    /// arguments, defined parameters, and aggregates only where `aggregates_allowed`.
    fn expr(
        &self,
        expr: &Expr,
        scope: &[String],
        aggregates_allowed: bool,
    ) -> Result<(), QueryError> {
        match expr {
            Expr::Identifier(name) if !scope.contains(name) => {
                return Err(QueryError::semantic(format!(
                    "Identifier '{name}' could not be resolved."
                )));
            }
            Expr::Parameter(name) if !self.parameters.contains_key(name) => {
                return Err(QueryError::semantic(format!(
                    "Parameter '@{name}' is not defined."
                )));
            }
            Expr::Exists(query) | Expr::ArrayQuery(query) | Expr::Subquery(query) => {
                return validate(query, self.parameters, self.udfs, scope, false);
            }
            Expr::Call { name, args, .. } => {
                if is_aggregate_name(name) {
                    let upper = name.to_ascii_uppercase();
                    if !aggregates_allowed {
                        return Err(QueryError::semantic(format!(
                            "Aggregate function '{name}' is not allowed in this context; aggregates may appear only in the SELECT list."
                        )));
                    }
                    if args.len() != 1 {
                        return Err(QueryError::semantic(format!(
                            "The {upper} function requires 1 argument(s)."
                        )));
                    }
                    // No aggregate inside an aggregate.
                    return self.expr(&args[0], scope, false);
                }
                check_call(name, args.len())?;
            }
            Expr::UdfCall { name, .. } => match self.udfs {
                None => {
                    return Err(QueryError::unsupported(
                        "user-defined functions (udf.name(...)) are not supported",
                    ))
                }
                Some(host) if !host.defines(name) => {
                    return Err(QueryError::semantic(format!(
                        "Unknown user-defined function 'udf.{name}'."
                    )))
                }
                Some(_) => {}
            },
            _ => {}
        }
        let mut result = Ok(());
        crate::ast::for_each_child(expr, &mut |child| {
            if result.is_ok()
                && !matches!(
                    expr,
                    Expr::Exists(_) | Expr::ArrayQuery(_) | Expr::Subquery(_)
                )
            {
                result = self.expr(child, scope, aggregates_allowed);
            }
        });
        result
    }
}
