//! Rewriting a query's syntax tree in place: one replacement function applied to every
//! expression of a query, subqueries included. Computed properties and the vector policy's
//! defaults are written into queries this way before they are planned.
//!
//! It decides nothing about what to replace; its callers do.

use crate::ast::{Expr, Projection, Query, Source};

/// Applies `replace` to every expression of a query, subqueries included; a replaced node is
/// not descended into.
pub(crate) fn rewrite_query(query: &mut Query, replace: &mut dyn FnMut(&Expr) -> Option<Expr>) {
    if let Some(top) = &mut query.select.top {
        rewrite_expr(top, replace);
    }
    match &mut query.select.projection {
        Projection::Star => {}
        Projection::Value(expr) => rewrite_expr(expr, replace),
        Projection::Items(items) => {
            for item in items {
                rewrite_expr(&mut item.expr, replace);
            }
        }
    }
    if let Some(from) = &mut query.from {
        for source in std::iter::once(&mut from.source).chain(from.joins.iter_mut()) {
            match source {
                Source::Iterate { collection, .. } => rewrite_expr(collection, replace),
                // The root collection itself (`FROM c`) is the item, not a reference.
                Source::Bind { collection, .. } if !matches!(collection, Expr::Identifier(_)) => {
                    rewrite_expr(collection, replace);
                }
                Source::Bind { .. } => {}
            }
        }
    }
    if let Some(filter) = &mut query.filter {
        rewrite_expr(filter, replace);
    }
    for expr in &mut query.group_by {
        rewrite_expr(expr, replace);
    }
    for key in &mut query.order_by {
        rewrite_expr(&mut key.expr, replace);
    }
    if let Some(offset_limit) = &mut query.offset_limit {
        rewrite_expr(&mut offset_limit.offset, replace);
        rewrite_expr(&mut offset_limit.limit, replace);
    }
}

pub(crate) fn rewrite_expr(expr: &mut Expr, replace: &mut dyn FnMut(&Expr) -> Option<Expr>) {
    if let Some(replacement) = replace(expr) {
        *expr = replacement;
        return;
    }
    match expr {
        Expr::Undefined | Expr::Literal(_) | Expr::Parameter(_) | Expr::Identifier(_) => {}
        Expr::Property(base, _) | Expr::Unary(_, base) => rewrite_expr(base, replace),
        Expr::Index(base, index) | Expr::Binary(_, base, index) => {
            rewrite_expr(base, replace);
            rewrite_expr(index, replace);
        }
        Expr::Array(items) | Expr::Call { args: items, .. } | Expr::UdfCall { args: items, .. } => {
            for item in items {
                rewrite_expr(item, replace);
            }
        }
        Expr::Object(fields) => {
            for (_, value) in fields {
                rewrite_expr(value, replace);
            }
        }
        Expr::Conditional(a, b, c)
        | Expr::Between {
            expr: a,
            low: b,
            high: c,
            ..
        } => {
            rewrite_expr(a, replace);
            rewrite_expr(b, replace);
            rewrite_expr(c, replace);
        }
        Expr::In { expr, list, .. } => {
            rewrite_expr(expr, replace);
            for item in list {
                rewrite_expr(item, replace);
            }
        }
        Expr::Like {
            expr,
            pattern,
            escape,
            ..
        } => {
            rewrite_expr(expr, replace);
            rewrite_expr(pattern, replace);
            if let Some(escape) = escape {
                rewrite_expr(escape, replace);
            }
        }
        Expr::Exists(query) | Expr::ArrayQuery(query) | Expr::Subquery(query) => {
            rewrite_query(query, replace);
        }
    }
}
