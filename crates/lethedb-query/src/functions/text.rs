//! The full-text predicates: `FullTextContains(text, term)`, `FullTextContainsAll(text, term,
//! ...)` and `FullTextContainsAny(text, term, ...)`. A text and each term are split into words
//! at Unicode word boundaries (`unicode-segmentation`), lower-cased and reduced to their Snowball
//! stems (`rust-stemmers`) in the language of the text's path (`full_text.rs`: English unless
//! the container's full-text policy says otherwise); a term is contained when every one of its
//! words is among the text's, so "helmets" finds "Helmet". Stop words are kept.
//!
//! Also the two internal functions of the SDKs' hybrid search pipelines (the names are the
//! service's): `_FullTextWordCount(text)`, the number of words of a text, and
//! `_FullTextScore(text, [terms], documents, totalWords, [hits])`, BM25 with the statistics
//! written into the call (`scoring::bm25`). `FullTextScore` itself is ranked by
//! `paging/ranked.rs`, which takes the statistics from the documents it reads.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use rust_stemmers::Stemmer;
use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;

use super::args::{array, number, string};
use crate::builtins::Builtin;
use crate::context::Val;
use crate::full_text::Language;
use crate::scoring::{bm25, Statistics};
use crate::value::number_value;

/// One stemmer per language, made on first use.
static STEMMERS: [LazyLock<Stemmer>; 6] = [
    LazyLock::new(|| Stemmer::create(Language::English.algorithm())),
    LazyLock::new(|| Stemmer::create(Language::French.algorithm())),
    LazyLock::new(|| Stemmer::create(Language::German.algorithm())),
    LazyLock::new(|| Stemmer::create(Language::Italian.algorithm())),
    LazyLock::new(|| Stemmer::create(Language::Portuguese.algorithm())),
    LazyLock::new(|| Stemmer::create(Language::Spanish.algorithm())),
];

/// The stemmed, lower-cased words of `text` in `language`, in order.
pub fn terms(text: &str, language: Language) -> Vec<String> {
    let stemmer = &STEMMERS[language as usize];
    text.unicode_words()
        .map(|word| stemmer.stem(&word.to_lowercase()).into_owned())
        .collect()
}

/// How many words `text` has, and how often each term (its stemmed words, from [`terms`])
/// occurs in it: a term of several words as often as its rarest word, so that a term occurs
/// exactly when `FullTextContains` finds it.
pub(crate) fn frequencies(
    text: &str,
    terms: &[Vec<String>],
    language: Language,
) -> (f64, Vec<f64>) {
    let words = self::terms(text, language);
    let mut counts: HashMap<&str, f64> = HashMap::new();
    for word in &words {
        *counts.entry(word.as_str()).or_default() += 1.0;
    }
    let frequencies = terms
        .iter()
        .map(|term| {
            term.iter()
                .map(|word| counts.get(word.as_str()).copied().unwrap_or(0.0))
                .reduce(f64::min)
                .unwrap_or(0.0)
        })
        .collect();
    (words.len() as f64, frequencies)
}

/// Computes a full-text function over evaluated arguments: a predicate is `undefined` unless
/// the text and every term are strings.
pub fn call(builtin: Builtin, args: &[Val<'_>], language: Language) -> Option<Value> {
    match builtin {
        Builtin::FullTextWordCount => return word_count(args, language),
        Builtin::FullTextScoreWithStatistics => return score_with_statistics(args, language),
        _ => {}
    }
    let text = string(args.first()?.as_deref())?;
    let words: HashSet<String> = terms(text, language).into_iter().collect();
    let mut results = args.iter().skip(1).map(|term| {
        let term = terms(string(term.as_deref())?, language);
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

/// `_FullTextWordCount(text)`: 0 for anything but a string, so that a sum over documents
/// counts every document.
fn word_count(args: &[Val<'_>], language: Language) -> Option<Value> {
    let words = string(args.first()?.as_deref()).map_or(0, |text| terms(text, language).len());
    Some(Value::from(words))
}

/// `_FullTextScore(text, [terms], documents, totalWords, [hits])`: 0 for a text that is not a
/// string; `undefined` when the statistics are not numbers.
fn score_with_statistics(args: &[Val<'_>], language: Language) -> Option<Value> {
    let term_words: Vec<Vec<String>> = array(args.get(1)?.as_deref())?
        .iter()
        .map(|term| term.as_str().map(|term| terms(term, language)))
        .collect::<Option<_>>()?;
    let statistics = Statistics {
        documents: number(args.get(2)?.as_deref())?,
        total_words: number(args.get(3)?.as_deref())?,
        hits: array(args.get(4)?.as_deref())?
            .iter()
            .map(|hits| number(Some(hits)))
            .collect::<Option<_>>()?,
    };
    let Some(text) = string(args.first()?.as_deref()) else {
        return Some(Value::from(0));
    };
    let (words, frequencies) = frequencies(text, &term_words, language);
    number_value(bm25(&frequencies, words, &statistics))
}
