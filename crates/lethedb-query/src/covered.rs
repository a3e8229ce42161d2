//! Aggregates an index can answer without loading documents (`Prepared::covered_aggregates`):
//! `COUNT` of a constant or of a path, `MIN` and `MAX` of a path, and the hybrid statistics
//! query's `SUM(_FullTextWordCount(path))` and `COUNTIF(FullTextContains(path, 'term'))` (when
//! the evaluator stems the path in its own language), in a query over the whole
//! document (no JOIN) that is nothing but those aggregates (no GROUP BY, DISTINCT, ORDER BY,
//! TOP or OFFSET), whose filter is absent or made only of conjuncts an index serves exactly
//! (`sargable::exact_conjuncts`). The engine computes each aggregate's value from index entries
//! and hands them back (`PageRun::finish_covered`); the projection around them, the page and
//! its token are computed as for any aggregate page, so the answer is the scan's whenever the
//! values are. Which paths are indexed, and whether expiry or the request's scope allow the
//! answer, is the engine's business.

use serde_json::Value;

use crate::ast::Expr;
use crate::builtins::Builtin;
use crate::error::QueryError;
use crate::full_text::FullTextPolicy;
use crate::functions::text::terms;
use crate::paging::{Page, PageRun};
use crate::prepared::{document_path, root_alias, Mode, Prepared};
use crate::sargable::{exact_conjuncts, IndexConjunct};

/// One aggregate call an index can answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoveredAggregate {
    /// `COUNT` of a constant: every selected document.
    Count,
    /// `COUNT(path)`: the selected documents where the path is defined.
    CountDefined(Vec<String>),
    /// `MIN(path)`: undefined if any selected value is an array or object, else the least.
    Min(Vec<String>),
    /// `MAX(path)`: undefined if any selected value is an array or object, else the greatest.
    Max(Vec<String>),
    /// `SUM(_FullTextWordCount(path))`: the words of the texts at the path, stemmed in the
    /// path's language (the hybrid pipelines' statistics query).
    FullTextWords(Vec<String>),
    /// `COUNTIF(FullTextContains(path, 'term'))`: the documents whose text at the path holds
    /// every one of these stems (the term's words, in the path's language; none: no document).
    FullTextHits(Vec<String>, Vec<String>),
}

/// A query an index can answer: its aggregates, in the order of the plan's aggregate calls,
/// and its filter's conjuncts (empty: no filter), each of which the index serves exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoveredQuery {
    pub aggregates: Vec<CoveredAggregate>,
    pub conjuncts: Vec<IndexConjunct>,
}

impl Prepared {
    /// The aggregates of this query and its filter as an index can answer them, if it can (see
    /// the module's documentation).
    pub fn covered_aggregates(&self) -> Option<CoveredQuery> {
        let inner = &self.inner;
        let query = &inner.query;
        let plan = &inner.plan;
        let alias = root_alias(query)?;
        let plain = inner.mode == Mode::Materialized
            && plan.grouped
            && query.group_by.is_empty()
            && !query.select.distinct
            && query.order_by.is_empty()
            && plan.top.is_none()
            && plan.limit.is_none()
            && plan.offset == 0
            && query
                .from
                .as_ref()
                .is_some_and(|from| from.joins.is_empty());
        if !plain || plan.aggregates.is_empty() {
            return None;
        }
        let aggregates = plan
            .aggregates
            .iter()
            .map(|call| covered_call(call, alias, &inner.context.full_text))
            .collect::<Option<Vec<_>>>()?;
        let conjuncts = match &query.filter {
            None => Vec::new(),
            Some(_) => exact_conjuncts(query, &inner.context.parameters, &inner.context.full_text)?,
        };
        Some(CoveredQuery {
            aggregates,
            conjuncts,
        })
    }
}

/// One aggregate call as an index answers it, if it can.
fn covered_call(call: &Expr, alias: &str, full_text: &FullTextPolicy) -> Option<CoveredAggregate> {
    let Expr::Call {
        builtin: Some(builtin),
        args,
        ..
    } = call
    else {
        return None;
    };
    let [argument] = args.as_slice() else {
        return None;
    };
    let path = || {
        document_path(argument, alias).filter(|path| {
            !path.is_empty()
                && !path
                    .iter()
                    .any(|name| name.starts_with('_') && name != "_ts")
        })
    };
    match builtin {
        // A constant other than undefined counts every row.
        Builtin::Count => match argument {
            Expr::Literal(_) => Some(CoveredAggregate::Count),
            _ => path().map(CoveredAggregate::CountDefined),
        },
        Builtin::Min => path().map(CoveredAggregate::Min),
        Builtin::Max => path().map(CoveredAggregate::Max),
        Builtin::Sum | Builtin::CountIf => full_text_call(*builtin, argument, alias, full_text),
        _ => None,
    }
}

/// `SUM(_FullTextWordCount(path))` or `COUNTIF(FullTextContains(path, 'term'))` (the hybrid
/// statistics query's aggregates) over a path from the root that the evaluator stems in the
/// path's own language, as its full-text entries are stemmed.
fn full_text_call(
    aggregate: Builtin,
    argument: &Expr,
    alias: &str,
    full_text: &FullTextPolicy,
) -> Option<CoveredAggregate> {
    let Expr::Call {
        builtin: Some(inner),
        args,
        ..
    } = argument
    else {
        return None;
    };
    let text = args.first()?;
    let path = document_path(text, alias).filter(|path| !path.is_empty())?;
    let language = full_text.language_of_path(&path);
    if full_text.language_of(Some(text)) != language {
        return None;
    }
    match (aggregate, inner, args.as_slice()) {
        (Builtin::Sum, Builtin::FullTextWordCount, [_]) => {
            Some(CoveredAggregate::FullTextWords(path))
        }
        (Builtin::CountIf, Builtin::FullTextContains, [_, Expr::Literal(Value::String(term))]) => {
            let mut stems = terms(term, language);
            stems.sort_unstable();
            stems.dedup();
            Some(CoveredAggregate::FullTextHits(path, stems))
        }
        _ => None,
    }
}

impl PageRun {
    /// Ends the page of a covered query (`Prepared::covered_aggregates`) with each aggregate's
    /// value, in the order of its `aggregates` (`None` is undefined), computed by the engine
    /// instead of pushed documents; `documents_loaded` is what the engine read to compute them.
    pub fn finish_covered(
        mut self,
        values: Vec<Option<Value>>,
        documents_loaded: u64,
    ) -> Result<Page, QueryError> {
        self.set_covered(values)?;
        let mut page = self.finish(true)?;
        page.documents_scanned = documents_loaded;
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare;
    use serde_json::json;
    use std::sync::Arc;

    fn covered(text: &str) -> Option<CoveredQuery> {
        let policy = FullTextPolicy::from_container(&json!({"fullTextPolicy": {
            "defaultLanguage": "en-US",
            "fullTextPaths": [{"path": "/fr", "language": "fr-FR"}]}}));
        prepare(text, &[], 0)
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .with_full_text(Arc::new(policy))
            .covered_aggregates()
    }

    #[test]
    fn the_hybrid_statistics_query_is_covered_in_each_paths_language() {
        let found = covered(
            "SELECT COUNT(1) AS documentCount, [{\"totalWordCount\": SUM(_FullTextWordCount(c.fr)), \"hitCounts\": [COUNTIF(FullTextContains(c.fr, \"Maisons rouges\")), COUNTIF(FullTextContains(c.fr, \"...\"))]}] AS fullTextStatistics FROM c",
        )
        .unwrap_or_else(|| panic!("covered"));
        let fr = vec!["fr".to_string()];
        assert_eq!(
            found.aggregates,
            vec![
                CoveredAggregate::Count,
                CoveredAggregate::FullTextWords(fr.clone()),
                CoveredAggregate::FullTextHits(fr.clone(), vec!["maison".into(), "roug".into()]),
                CoveredAggregate::FullTextHits(fr, Vec::new()),
            ]
        );
        // Another function, a term that is not a literal, a path the evaluator would stem in
        // the default language (`c["fr"]`): not covered.
        for text in [
            "SELECT VALUE SUM(LENGTH(c.fr)) FROM c",
            "SELECT VALUE COUNTIF(FullTextContains(c.fr, c.t)) FROM c",
            "SELECT VALUE COUNTIF(FullTextContains(c[\"fr\"], 'maison')) FROM c",
        ] {
            assert_eq!(covered(text), None, "{text}");
        }
    }
}
