//! Subqueries (`EXISTS`, `ARRAY(...)`, scalar subqueries, subqueries in FROM): the
//! `SubqueryRunner` that every `Context` carries. Each subquery is planned once at prepare
//! time and run over the values already bound in the outer row, with the row machinery of
//! `exec.rs`. It reads no documents of its own.

use std::collections::HashMap;
use std::ops::ControlFlow;

use serde_json::Value;

use crate::ast::{for_each_child, for_each_query_expr, Expr, Query};
use crate::context::{Context, Scope, SubqueryRunner};
use crate::error::QueryError;
use crate::eval::Evaluator;
use crate::exec::{
    expand, join_rows, limit_error, passes_filter, project, Accumulator, Flow, ACCUMULATED_ROWS_MAX,
};
use crate::plan::{analyze, source_alias, QueryPlan};

/// The `SubqueryRunner` that every `Context` carries: subqueries run here, over the rows of the
/// values already bound in the outer scope, each with the plan made for it at prepare time.
#[derive(Default)]
pub struct Subqueries {
    /// The plan of every subquery of the prepared query, keyed by the subquery's address. A
    /// subquery is boxed inside a tree that is never changed after prepare, so its address is
    /// stable; a subquery not found here (none should be) is analysed when it runs.
    plans: HashMap<usize, QueryPlan>,
}

impl Subqueries {
    /// Plans every subquery of `query` (at any depth) once. A subquery whose analysis fails
    /// is left out, so that its error is raised when it runs, as before: a subquery that never
    /// runs (no rows) fails nothing.
    pub fn prepare(query: &Query, parameters: &HashMap<String, Value>) -> Subqueries {
        let mut plans = HashMap::new();
        let mut pending = Vec::new();
        for_each_query_expr(query, &mut |expr| pending.push(expr));
        while let Some(expr) = pending.pop() {
            if let Expr::Exists(subquery) | Expr::ArrayQuery(subquery) | Expr::Subquery(subquery) =
                expr
            {
                let subquery: &Query = subquery;
                if let Ok(plan) = analyze(subquery, parameters) {
                    plans.insert(std::ptr::from_ref(subquery).addr(), plan);
                }
            }
            for_each_child(expr, &mut |child| pending.push(child));
        }
        Subqueries { plans }
    }
}

impl SubqueryRunner for Subqueries {
    fn run(
        &self,
        context: &Context,
        query: &Query,
        outer: Option<&Scope<'_>>,
        wanted: Option<usize>,
    ) -> Result<Vec<Value>, QueryError> {
        if let Some(plan) = self.plans.get(&std::ptr::from_ref(query).addr()) {
            run_subquery(context, query, plan, outer, wanted)
        } else {
            let plan = analyze(query, &context.parameters)?;
            run_subquery(context, query, &plan, outer, wanted)
        }
    }
}

/// Runs a subquery over the values of the current row and returns its results, stopping
/// after `wanted` results when the caller needs only the first (EXISTS, scalar subquery).
fn run_subquery(
    context: &Context,
    query: &Query,
    plan: &QueryPlan,
    outer: Option<&Scope<'_>>,
    wanted: Option<usize>,
) -> Result<Vec<Value>, QueryError> {
    let run = SubqueryRun {
        evaluator: Evaluator::new(context),
        query,
        plan,
        outer,
    };
    if plan.grouped || query.select.distinct || !query.order_by.is_empty() {
        run.all_rows(wanted)
    } else {
        run.streamed(wanted)
    }
}

/// One run of a subquery within one outer row.
struct SubqueryRun<'a> {
    evaluator: Evaluator<'a>,
    query: &'a Query,
    plan: &'a QueryPlan,
    outer: Option<&'a Scope<'a>>,
}

impl SubqueryRun<'_> {
    /// Calls `visit` for every row of the subquery's FROM clause (one row, the outer one,
    /// without FROM) until it breaks.
    fn rows(&self, visit: &mut dyn FnMut(Option<&Scope<'_>>) -> Flow) -> Result<(), QueryError> {
        let Some(from) = &self.query.from else {
            let _ = visit(self.outer)?;
            return Ok(());
        };
        // The same rows as `join_rows` over the source and its JOINs, without copying the
        // sources into one list for every outer row.
        let alias = source_alias(&from.source)?;
        let mut rows_count = 0;
        for value in &expand(&self.evaluator, &from.source, self.outer)? {
            let bound = Scope {
                name: alias,
                value,
                parent: self.outer,
            };
            let flow = join_rows(
                &self.evaluator,
                &from.joins,
                Some(&bound),
                &mut rows_count,
                visit,
            )?;
            // Whether the visitor stopped early makes no difference here.
            if flow.is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Grouping, DISTINCT or ORDER BY: every row is accumulated before the first result.
    fn all_rows(&self, wanted: Option<usize>) -> Result<Vec<Value>, QueryError> {
        let (evaluator, query, plan) = (&self.evaluator, self.query, self.plan);
        let mut accumulator = Accumulator::default();
        self.rows(&mut |scope| {
            if passes_filter(evaluator, query, scope)? {
                accumulator.push(evaluator, query, plan, scope, &[])?;
            }
            Ok(ControlFlow::Continue(()))
        })?;
        let mut results = accumulator.finish(evaluator.context, query, plan)?;
        if let Some(wanted) = wanted {
            results.truncate(wanted);
        }
        Ok(results)
    }

    /// Results in row order, stopping at `wanted` results or at the end of OFFSET/LIMIT/TOP.
    fn streamed(&self, wanted: Option<usize>) -> Result<Vec<Value>, QueryError> {
        let (evaluator, query, plan) = (&self.evaluator, self.query, self.plan);
        let mut results = Vec::new();
        let mut index: u64 = 0;
        let end = plan.end();
        self.rows(&mut |scope| {
            if end.is_some_and(|end| index >= end)
                || wanted.is_some_and(|wanted| results.len() >= wanted)
            {
                return Ok(ControlFlow::Break(()));
            }
            if !passes_filter(evaluator, query, scope)? {
                return Ok(ControlFlow::Continue(()));
            }
            if let Some(output) = project(evaluator, query, plan, scope)? {
                if index >= plan.offset {
                    if results.len() >= ACCUMULATED_ROWS_MAX {
                        return Err(limit_error());
                    }
                    results.push(output);
                }
                index += 1;
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;
    use std::sync::Arc;

    #[test]
    fn every_subquery_finds_its_plan_after_the_query_moves() -> Result<(), QueryError> {
        let query = parse(
            "SELECT VALUE ARRAY(SELECT VALUE t FROM t IN c.tags WHERE EXISTS(SELECT VALUE 1)) \
             FROM c JOIN (SELECT VALUE 2) AS two",
        )?;
        let subqueries = Subqueries::prepare(&query, &HashMap::new());
        assert_eq!(subqueries.plans.len(), 3);
        // The prepared query lives in an `Arc`; the boxed subqueries keep their addresses.
        let moved = Arc::new(query);
        let mut found = 0;
        let mut pending = Vec::new();
        for_each_query_expr(&moved, &mut |expr| pending.push(expr));
        while let Some(expr) = pending.pop() {
            if let Expr::Exists(subquery) | Expr::ArrayQuery(subquery) | Expr::Subquery(subquery) =
                expr
            {
                let subquery: &Query = subquery;
                assert!(subqueries
                    .plans
                    .contains_key(&std::ptr::from_ref(subquery).addr()));
                found += 1;
            }
            for_each_child(expr, &mut |child| pending.push(child));
        }
        assert_eq!(found, 3);
        Ok(())
    }
}
