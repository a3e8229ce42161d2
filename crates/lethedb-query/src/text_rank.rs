//! What the engine needs to know to serve the hybrid pipelines' full-text component query,
//! `ORDER BY _FullTextScore(path, [terms], documents, words, [hits]) DESC` with `TOP`, from the
//! full-text index instead of a scan: the path, each term's one stem in the path's language,
//! the statistics written into the call, how many rows the query can return, and each term's
//! share of a document's score from what an index entry holds (how often the text holds the
//! stem, and the text's word count).
//!
//! It recognises only the shape whose every row is one document (`FROM c` without JOIN, one
//! descending ORDER BY key, no GROUP BY, DISTINCT or aggregate), terms of one word each (a
//! term of several words scores by its rarest word, which no one stem's entries bound), and
//! statistics under which every term found adds to the score; anything else gets `None` and
//! the engine scans. The score of a loaded document is computed here as the evaluator computes
//! it (`functions/text.rs`, `scoring::bm25`), so the engine's bounds and the page's sort agree
//! to the last bit. Which documents are loaded is the engine's business.

use serde_json::Value;

use crate::ast::Expr;
use crate::builtins::Builtin;
use crate::eval::Evaluator;
use crate::full_text::Language;
use crate::functions::text::{frequencies, terms};
use crate::prepared::{document_path, root_alias, Mode, Prepared};
use crate::scoring::{bm25, Statistics};
use crate::value::as_number;
use crate::vector_search::{is_constant, one_row_each};

/// A full-text ranking a query asks for, with every argument known.
#[derive(Clone, Debug, PartialEq)]
pub struct TextRank {
    /// The document path of the text (`c.text` is `["text"]`).
    pub path: Vec<String>,
    /// Each term's one stem, in the path's language; `None` for a term with no words, which
    /// no text holds.
    pub stems: Vec<Option<String>>,
    pub statistics: Statistics,
    /// How many rows the query returns at most over all its pages (TOP, or OFFSET + LIMIT).
    pub rows: u64,
    language: Language,
}

impl TextRank {
    /// Term `term`'s share of the score of a text of `words` words holding its stem `count`
    /// times: the score of that text if it held no other term.
    pub fn share(&self, term: usize, count: u32, words: u32) -> f64 {
        let statistics = Statistics {
            documents: self.statistics.documents,
            total_words: self.statistics.total_words,
            hits: vec![self.statistics.hits[term]],
        };
        bm25(&[f64::from(count)], f64::from(words), &statistics)
    }

    /// The score the query gives `document`, as the evaluator computes it (0 when the path
    /// holds no string).
    pub fn score(&self, document: &Value) -> f64 {
        let mut value = Some(document);
        for name in &self.path {
            value = value.and_then(|value| value.get(name));
        }
        let Some(Value::String(text)) = value else {
            return 0.0;
        };
        let term_words: Vec<Vec<String>> = self
            .stems
            .iter()
            .map(|stem| stem.iter().cloned().collect())
            .collect();
        let (words, counts) = frequencies(text, &term_words, self.language);
        bm25(&counts, words, &self.statistics)
    }
}

impl Prepared {
    /// The full-text ranking this query is, when it has the one shape the full-text index may
    /// serve (see the module's documentation).
    pub fn text_rank(&self) -> Option<TextRank> {
        let inner = &self.inner;
        let query = &inner.query;
        let [key] = query.order_by.as_slice() else {
            return None;
        };
        if inner.mode != Mode::Ordered || !key.descending || !one_row_each(query) {
            return None;
        }
        let rows = inner.plan.end()?;
        let alias = root_alias(query)?;
        let Expr::Call {
            args,
            builtin: Some(Builtin::FullTextScoreWithStatistics),
            ..
        } = &key.expr
        else {
            return None;
        };
        let [text, terms_given, documents, total_words, hits] = args.as_slice() else {
            return None;
        };
        let path = document_path(text, alias).filter(|path| !path.is_empty())?;
        let full_text = &inner.context.full_text;
        let language = full_text.language_of_path(&path);
        if full_text.language_of(Some(text)) != language {
            return None;
        }
        let evaluator = Evaluator::new(&inner.context);
        let constant = |expr: &Expr| -> Option<Value> {
            if !is_constant(expr) {
                return None;
            }
            let value = evaluator.eval(expr, None).ok()?;
            Some(value.map_or(Value::Null, std::borrow::Cow::into_owned))
        };
        let stems = one_stem_each(&constant(terms_given)?, language)?;
        let statistics = Statistics {
            documents: as_number(&constant(documents)?)?,
            total_words: as_number(&constant(total_words)?)?,
            hits: constant(hits)?
                .as_array()?
                .iter()
                .map(as_number)
                .collect::<Option<_>>()?,
        };
        adds_up(&statistics, stems.len()).then_some(TextRank {
            path,
            stems,
            statistics,
            rows,
            language,
        })
    }
}

/// Each term's one stem (`None` for a term of no words), if every term is a string of at most
/// one word.
fn one_stem_each(terms_given: &Value, language: Language) -> Option<Vec<Option<String>>> {
    terms_given
        .as_array()?
        .iter()
        .map(|term| {
            let mut words = terms(term.as_str()?, language);
            match words.len() {
                0 | 1 => Some(words.pop()),
                _ => None,
            }
        })
        .collect()
}

/// Whether the statistics score every text holding a term above one holding none: finite,
/// with documents and words, one hit count per term, and no term held by more documents than
/// there are (whose logarithm would be zero or negative).
fn adds_up(statistics: &Statistics, terms: usize) -> bool {
    let Statistics {
        documents,
        total_words,
        hits,
    } = statistics;
    documents.is_finite()
        && total_words.is_finite()
        && *documents > 0.0
        && *total_words > 0.0
        && hits.len() == terms
        && hits
            .iter()
            .all(|hits| hits.is_finite() && *hits >= 0.0 && documents - hits + 0.5 > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare;
    use serde_json::json;

    fn rank(text: &str) -> Option<TextRank> {
        prepare(text, &[], 0)
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .text_rank()
    }

    #[test]
    fn reads_the_component_query_of_the_hybrid_pipelines() {
        let found = rank(
            "SELECT TOP 120 c._rid, [{\"item\": _FullTextScore(c.text, [\"Running\", \"shoes\"], 100, 800, [40, 3])}] AS orderByItems FROM c WHERE (true) ORDER BY _FullTextScore(c.text, [\"Running\", \"shoes\"], 100, 800, [40, 3]) DESC",
        )
        .unwrap_or_else(|| panic!("a served ranking"));
        assert_eq!(found.path, vec!["text".to_string()]);
        assert_eq!(found.stems, vec![Some("run".into()), Some("shoe".into())]);
        assert_eq!(found.rows, 120);
        assert_eq!(found.statistics.hits, vec![40.0, 3.0]);
        // A document's score is the evaluator's; one term's share is that of a text holding
        // only it.
        let document = json!({"text": "runs and running"});
        let share = found.share(0, 2, 3);
        assert!(share > 0.0);
        assert_eq!(found.score(&document), share);
        assert_eq!(found.score(&json!({"text": 3})), 0.0);
    }

    #[test]
    fn declines_what_the_index_cannot_serve() {
        let score =
            |terms: &str, hits: &str| format!("_FullTextScore(c.text, {terms}, 100, 800, {hits})");
        for text in [
            // No bound on the rows, ascending, two keys, a JOIN.
            format!("SELECT * FROM c ORDER BY {} DESC", score("['a']", "[1]")),
            format!(
                "SELECT TOP 5 * FROM c ORDER BY {} ASC",
                score("['a']", "[1]")
            ),
            format!(
                "SELECT TOP 5 * FROM c ORDER BY {} DESC, c.id",
                score("['a']", "[1]")
            ),
            format!(
                "SELECT TOP 5 c.id FROM c JOIN t IN c.tags ORDER BY {} DESC",
                score("['a']", "[1]")
            ),
            // A term of two words, hits that do not match the terms or exceed the documents.
            format!(
                "SELECT TOP 5 * FROM c ORDER BY {} DESC",
                score("['red shoe']", "[1]")
            ),
            format!(
                "SELECT TOP 5 * FROM c ORDER BY {} DESC",
                score("['a', 'b']", "[1]")
            ),
            format!(
                "SELECT TOP 5 * FROM c ORDER BY {} DESC",
                score("['a']", "[101]")
            ),
            "SELECT TOP 5 * FROM c ORDER BY c.id DESC".to_string(),
        ] {
            assert_eq!(rank(&text), None, "{text}");
        }
    }
}
