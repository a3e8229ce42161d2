//! The **Ranked** strategy of a page (`ORDER BY RANK`): every page reads the whole scope,
//! tallies the full-text statistics of every document pushed (matching the filter or not, as
//! the service's statistics count the whole container), keeps every matching row with what
//! its score needs, and ranks them once the scan has ended: by the one scoring function, or by
//! reciprocal rank fusion of several. The token is the index of the next row.
//!
//! The scores and ranks are `scoring.rs`'s; which functions and directions, `ranking.rs`'s.

use std::cmp::Ordering;
use std::ops::ControlFlow;

use serde_json::Value;

use super::pushed::Pushed;
use crate::context::Scope;
use crate::error::QueryError;
use crate::exec::{Flow, ACCUMULATED_ROWS_MAX};
use crate::full_text::{FullTextPolicy, Language};
use crate::functions::text;
use crate::prepared::{root_alias, PreparedInner};
use crate::ranking::{Component, Ranking};
use crate::scoring::{bm25, compare_scores, fuse, Statistics};
use crate::token::Position;

/// What one row's score needs from one component.
enum RowScore {
    /// The text's word count and each term's frequency in it.
    Text {
        words: f64,
        frequencies: Vec<f64>,
    },
    Vector(Option<f64>),
}

struct RankedRow {
    tie: Vec<u8>,
    row: u64,
    scores: Vec<RowScore>,
    output: Value,
}

pub(super) struct RankedRun {
    /// Rows already emitted by earlier pages (after OFFSET).
    index: u64,
    /// The stemmed words of each term, per component (empty for a vector component), in the
    /// language of the component's path.
    terms: Vec<Vec<Vec<String>>>,
    /// The language of each component's path (English for a vector component).
    languages: Vec<Language>,
    /// The statistics of each component (unused for a vector component).
    statistics: Vec<Statistics>,
    rows: Vec<RankedRow>,
}

impl RankedRun {
    /// A page of `prepared` (which ranks) at the token's position.
    pub(super) fn resume(
        prepared: &PreparedInner,
        position: Option<Position>,
    ) -> Result<Self, QueryError> {
        let index = match position {
            None => 0,
            Some(Position::Materialized { index }) => index,
            Some(_) => {
                return Err(QueryError::InvalidContinuation(
                    "the token is of another kind".into(),
                ))
            }
        };
        match prepared.ranking.as_deref() {
            Some(ranking) => Ok(RankedRun::new(ranking, &prepared.context.full_text, index)),
            None => Err(QueryError::Usage(
                "a ranked page of a query without a rank".into(),
            )),
        }
    }

    fn new(ranking: &Ranking, policy: &FullTextPolicy, index: u64) -> Self {
        let languages: Vec<Language> = ranking
            .components
            .iter()
            .map(|component| match component {
                Component::FullText { path, .. } => policy.language_of(Some(path)),
                Component::Vector { .. } => Language::default(),
            })
            .collect();
        let terms: Vec<Vec<Vec<String>>> = ranking
            .components
            .iter()
            .zip(&languages)
            .map(|(component, language)| match component {
                Component::FullText { terms, .. } => terms
                    .iter()
                    .map(|term| text::terms(term, *language))
                    .collect(),
                Component::Vector { .. } => Vec::new(),
            })
            .collect();
        let statistics = terms
            .iter()
            .map(|terms| Statistics {
                hits: vec![0.0; terms.len()],
                ..Statistics::default()
            })
            .collect();
        RankedRun {
            index,
            terms,
            languages,
            statistics,
            rows: Vec::new(),
        }
    }

    /// Tallies the document's statistics, then keeps every matching row of it.
    pub(super) fn push(&mut self, pushed: &Pushed<'_>, rows_matched: &mut u64) -> Flow {
        let prepared = pushed.prepared;
        let Some(ranking) = prepared.ranking.as_deref() else {
            return Ok(ControlFlow::Break(()));
        };
        self.tally(pushed, ranking)?;
        pushed.rows(|row, scope| {
            if !pushed.passes_filter(scope)? {
                return Ok(ControlFlow::Continue(()));
            }
            *rows_matched += 1;
            let Some(output) = pushed.project(scope)? else {
                return Ok(ControlFlow::Continue(()));
            };
            let scores = ranking
                .components
                .iter()
                .zip(self.terms.iter().zip(&self.languages))
                .map(|(component, (terms, language))| {
                    row_score(pushed, component, (terms, *language), scope)
                })
                .collect::<Result<Vec<_>, _>>()?;
            self.rows.push(RankedRow {
                tie: pushed.tie.to_vec(),
                row,
                scores,
                output,
            });
            if self.rows.len() > ACCUMULATED_ROWS_MAX {
                return Err(QueryError::LimitExceeded(format!(
                    "an ORDER BY RANK query ranks more than {ACCUMULATED_ROWS_MAX} rows; narrow it with a filter"
                )));
            }
            Ok(ControlFlow::Continue(()))
        })
    }

    /// Counts the document, its words and which terms it holds, for each full-text component,
    /// reading the path from the document itself (the root alias bound to it).
    fn tally(&mut self, pushed: &Pushed<'_>, ranking: &Ranking) -> Result<(), QueryError> {
        let alias = root_alias(&pushed.prepared.query).unwrap_or("root");
        let scope = Scope {
            name: alias,
            value: pushed.document,
            parent: None,
        };
        for (((component, terms), language), statistics) in ranking
            .components
            .iter()
            .zip(&self.terms)
            .zip(&self.languages)
            .zip(&mut self.statistics)
        {
            let Component::FullText { path, .. } = component else {
                continue;
            };
            statistics.documents += 1.0;
            let value = pushed.evaluator.eval(path, Some(&scope))?;
            let Some(Value::String(content)) = value.as_deref() else {
                continue;
            };
            let (words, frequencies) = text::frequencies(content, terms, *language);
            statistics.total_words += words;
            for (hits, frequency) in statistics.hits.iter_mut().zip(frequencies) {
                if frequency > 0.0 {
                    *hits += 1.0;
                }
            }
        }
        Ok(())
    }

    /// Ranks every kept row and takes the page at the token's index, after OFFSET and within
    /// TOP or LIMIT.
    pub(super) fn finish(
        self,
        prepared: &PreparedInner,
        scan_ended: bool,
        page_items_max: usize,
    ) -> Result<(Vec<Value>, Option<Position>), QueryError> {
        if !scan_ended {
            return Err(QueryError::Usage(
                "an ORDER BY RANK page needs the whole scan: call finish(true) after the last document"
                    .into(),
            ));
        }
        let Some(ranking) = prepared.ranking.as_deref() else {
            return Ok((Vec::new(), None));
        };
        let index = self.index;
        let ranked = self.ranked(ranking);
        let plan = &prepared.plan;
        let available = plan
            .end()
            .map_or(ranked.len() as u64, |end| end.min(ranked.len() as u64));
        let start = plan.offset.saturating_add(index).min(available);
        let end = start.saturating_add(page_items_max as u64).min(available);
        let next = (end < available).then_some(Position::Materialized {
            index: end - plan.offset.min(end),
        });
        let items = ranked
            .into_iter()
            .take(end as usize)
            .skip(start as usize)
            .collect();
        Ok((items, next))
    }

    /// The outputs best first: by the one component's score, or by fused ranks; ties in the
    /// order documents were pushed with.
    fn ranked(self, ranking: &Ranking) -> Vec<Value> {
        let scores: Vec<Vec<Option<f64>>> = (0..ranking.components.len())
            .map(|component| {
                let statistics = &self.statistics[component];
                self.rows
                    .iter()
                    .map(|row| match &row.scores[component] {
                        RowScore::Text { words, frequencies } => {
                            Some(bm25(frequencies, *words, statistics))
                        }
                        RowScore::Vector(score) => *score,
                    })
                    .collect()
            })
            .collect();
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        let by_rows = |a: &usize, b: &usize| {
            let (a, b) = (&self.rows[*a], &self.rows[*b]);
            a.tie.cmp(&b.tie).then(a.row.cmp(&b.row))
        };
        if let ([single], [descending]) = (scores.as_slice(), ranking.descending.as_slice()) {
            order.sort_by(|a, b| {
                compare_scores(single[*a], single[*b], *descending).then_with(|| by_rows(a, b))
            });
        } else {
            let fused = fuse(&scores, &ranking.descending, &ranking.weights);
            order.sort_by(|a, b| {
                fused[*b]
                    .partial_cmp(&fused[*a])
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| by_rows(a, b))
            });
        }
        let mut outputs: Vec<Option<Value>> =
            self.rows.into_iter().map(|row| Some(row.output)).collect();
        order
            .into_iter()
            .filter_map(|index| outputs[index].take())
            .collect()
    }
}

/// What a row's score needs from one component: its text's frequencies of the terms, or its
/// vector score.
fn row_score(
    pushed: &Pushed<'_>,
    component: &Component,
    (terms, language): (&[Vec<String>], Language),
    scope: Option<&Scope<'_>>,
) -> Result<RowScore, QueryError> {
    Ok(match component {
        Component::FullText { path, .. } => {
            let value = pushed.evaluator.eval(path, scope)?;
            match value.as_deref() {
                Some(Value::String(content)) => {
                    let (words, frequencies) = text::frequencies(content, terms, language);
                    RowScore::Text { words, frequencies }
                }
                _ => RowScore::Text {
                    words: 0.0,
                    frequencies: vec![0.0; terms.len()],
                },
            }
        }
        Component::Vector { call, .. } => {
            let value = pushed.evaluator.eval(call, scope)?;
            RowScore::Vector(value.as_deref().and_then(Value::as_f64))
        }
    })
}
