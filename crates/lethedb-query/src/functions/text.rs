//! The full-text predicates: `FullTextContains(text, term)`, `FullTextContainsAll(text, term,
//! ...)` and `FullTextContainsAny(text, term, ...)`. A text and each term are split into words
//! at Unicode word boundaries (`unicode-segmentation`), lower-cased and reduced to their English
//! Snowball stems (`rust-stemmers`); a term is contained when every one of its words is among
//! the text's, so "helmets" finds "Helmet". Stop words are kept.
//!
//! Scoring (`FullTextScore`) is not here: it is refused until it is built.

use std::collections::HashSet;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;

use super::args::string;
use crate::builtins::Builtin;
use crate::context::Val;

static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// The stemmed, lower-cased words of `text`, in order.
pub(crate) fn terms(text: &str) -> Vec<String> {
    text.unicode_words()
        .map(|word| ENGLISH.stem(&word.to_lowercase()).into_owned())
        .collect()
}

/// Computes a full-text predicate over evaluated arguments: `undefined` unless the text and
/// every term are strings.
pub fn call(builtin: Builtin, args: &[Val<'_>]) -> Option<Value> {
    let text = string(args.first()?.as_deref())?;
    let words: HashSet<String> = terms(text).into_iter().collect();
    let mut results = args.iter().skip(1).map(|term| {
        let term = terms(string(term.as_deref())?);
        Some(!term.is_empty() && term.iter().all(|word| words.contains(word)))
    });
    let found = match builtin {
        Builtin::FullTextContainsAny => {
            let all: Option<Vec<bool>> = results.collect();
            all?.into_iter().any(|found| found)
        }
        Builtin::FullTextContainsAll => {
            let all: Option<Vec<bool>> = results.collect();
            all?.into_iter().all(|found| found)
        }
        _ => results.next()??,
    };
    Some(Value::Bool(found))
}
