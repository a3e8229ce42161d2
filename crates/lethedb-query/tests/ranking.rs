//! `ORDER BY RANK`: BM25 scores against a reference computed here by the plain textbook
//! formula, dense ranks and reciprocal rank fusion with ties and weights, the service's
//! refusals, the hybrid search plan the SDKs read, and a simulation of the SDKs' pipeline over
//! two ranges (statistics summed, placeholders filled, components fused as the Python SDK
//! fuses them) that must give what one ranked page over every document gives.

use std::collections::HashMap;

use lethedb_query::{dense_ranks, fuse, parse, prepare, QueryError, BM25_B, BM25_K1};
use serde_json::{json, Value};

fn key_of(index: usize) -> Vec<u8> {
    (index as u64).to_be_bytes().to_vec()
}

/// Runs a query to the end over `documents` with pages of `page_size`.
fn run(
    documents: &[Value],
    query: &str,
    parameters: &[(String, Value)],
    page_size: usize,
) -> Result<Vec<Value>, QueryError> {
    let prepared = prepare(query, parameters, 0)?;
    let mut results = Vec::new();
    let mut continuation: Option<String> = None;
    for _ in 0..1000 {
        let mut run = prepared.start_page(continuation.as_deref(), page_size)?;
        for (index, document) in documents.iter().enumerate() {
            if run.push(&key_of(index), document)?.is_break() {
                break;
            }
        }
        let page = run.finish(true)?;
        assert!(page.items.len() <= page_size);
        results.extend(page.items);
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => return Ok(results),
        }
    }
    panic!("{query}: too many pages");
}

fn texts() -> Vec<Value> {
    [
        ("a", "the quick brown fox jumps over the lazy dog", [1.0, 0.0]),
        ("b", "fox and fox and fox", [0.0, 1.0]),
        ("c", "dog days of summer", [0.6, 0.8]),
        ("d", "a fox", [-1.0, 0.0]),
        ("e", "nothing here at all", [0.8, 0.6]),
        ("f", "the dog and the fox", [0.0, -1.0]),
    ]
    .iter()
    .enumerate()
    .map(|(index, (id, text, vector))| {
        json!({"id": id, "_rid": format!("rid{index}"), "pk": index % 2, "text": text, "v": vector})
    })
    .collect()
}

/// BM25 by the textbook formula over whitespace-separated lower-case words (the test texts
/// need no stemming for the words searched).
fn reference_bm25(documents: &[Value], document: &Value, terms: &[&str]) -> f64 {
    let words = |value: &Value| -> Vec<String> {
        value["text"]
            .as_str()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_lowercase)
            .collect()
    };
    let count = documents.len() as f64;
    let average = documents.iter().map(|d| words(d).len() as f64).sum::<f64>() / count;
    let own = words(document);
    terms
        .iter()
        .map(|term| {
            let containing = documents
                .iter()
                .filter(|d| words(d).iter().any(|word| word == term))
                .count() as f64;
            let frequency = own.iter().filter(|word| word == term).count() as f64;
            let idf = (1.0 + (count - containing + 0.5) / (containing + 0.5)).ln();
            idf * frequency * (BM25_K1 + 1.0)
                / (frequency + BM25_K1 * (1.0 - BM25_B + BM25_B * own.len() as f64 / average))
        })
        .sum()
}

fn ids(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .map(|result| {
            result
                .get("id")
                .unwrap_or(result)
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The ids of `documents` ordered by `score` descending, ties in document order.
fn ordered_by(documents: &[Value], score: impl Fn(&Value) -> f64) -> Vec<String> {
    let mut scored: Vec<(f64, usize)> = documents
        .iter()
        .enumerate()
        .map(|(index, document)| (score(document), index))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .iter()
        .map(|(_, index)| {
            documents[*index]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn full_text_score_ranks_by_bm25_over_every_document() -> Result<(), QueryError> {
    let documents = texts();
    let expected = ordered_by(&documents, |d| {
        reference_bm25(&documents, d, &["fox", "dog"])
    });
    for page_size in [1, 2, 100] {
        let results = run(
            &documents,
            "SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox', 'dog')",
            &[],
            page_size,
        )?;
        assert_eq!(ids(&results), expected, "page size {page_size}");
    }
    // The array form and parameters give the same ranking.
    let results = run(
        &documents,
        "SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, @terms)",
        &[("@terms".into(), json!(["fox", "dog"]))],
        100,
    )?;
    assert_eq!(ids(&results), expected);
    Ok(())
}

#[test]
fn statistics_count_documents_the_filter_leaves_out() -> Result<(), QueryError> {
    let documents = texts();
    let expected: Vec<String> = ordered_by(&documents, |d| reference_bm25(&documents, d, &["fox"]))
        .into_iter()
        .filter(|id| id != "b")
        .take(2)
        .collect();
    let results = run(
        &documents,
        "SELECT TOP 2 c.id FROM c WHERE c.id != 'b' ORDER BY RANK FullTextScore(c.text, 'fox')",
        &[],
        1,
    )?;
    assert_eq!(ids(&results), expected);
    Ok(())
}

#[test]
fn the_internal_score_with_statistics_is_bm25() -> Result<(), QueryError> {
    let documents = texts();
    let total_words: usize = documents
        .iter()
        .map(|d| d["text"].as_str().unwrap_or("").split_whitespace().count())
        .sum();
    let query = format!(
        "SELECT VALUE {{\"id\": c.id, \"score\": _FullTextScore(c.text, [\"fox\"], 6, {total_words}, [4]), \"words\": _FullTextWordCount(c.text)}} FROM c"
    );
    for result in run(&documents, &query, &[], 100)? {
        let document = documents
            .iter()
            .find(|d| d["id"] == result["id"])
            .ok_or_else(|| QueryError::Usage("unknown id".into()))?;
        let expected = reference_bm25(&documents, document, &["fox"]);
        let score = result["score"].as_f64().unwrap_or(f64::NAN);
        assert!((score - expected).abs() < 1e-9, "{result}: {expected}");
        let words = document["text"]
            .as_str()
            .unwrap_or("")
            .split_whitespace()
            .count();
        assert_eq!(result["words"], json!(words));
    }
    Ok(())
}

#[test]
fn dense_ranks_share_a_rank_on_ties_and_fusion_weighs_them() {
    let scores = [Some(3.0), Some(1.0), Some(3.0), None, Some(2.0)];
    assert_eq!(dense_ranks(&scores, true), vec![1, 3, 1, 4, 2]);
    assert_eq!(dense_ranks(&scores, false), vec![3, 1, 3, 4, 2]);
    let text = vec![Some(5.0), Some(5.0), Some(1.0)];
    let vector = vec![Some(0.1), Some(0.9), Some(0.5)];
    let fused = fuse(&[text, vector], &[true, false], &[1.0, 0.5]);
    let expected = [
        1.0 / 61.0 + 0.5 / 61.0,
        1.0 / 61.0 + 0.5 / 63.0,
        1.0 / 62.0 + 0.5 / 62.0,
    ];
    for (fused, expected) in fused.iter().zip(expected) {
        assert!((fused - expected).abs() < 1e-12);
    }
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

fn vector_of(document: &Value) -> Vec<f64> {
    document["v"]
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// Dense ranks written out again, independently of the crate's.
fn ranks_of(scores: &[f64], larger_first: bool) -> Vec<f64> {
    scores
        .iter()
        .map(|score| {
            let mut better: Vec<f64> = scores
                .iter()
                .copied()
                .filter(|other| {
                    if larger_first {
                        other > score
                    } else {
                        other < score
                    }
                })
                .collect();
            better.sort_by(f64::total_cmp);
            better.dedup();
            better.len() as f64 + 1.0
        })
        .collect()
}

fn reference_rrf(documents: &[Value], weights: [f64; 2]) -> Vec<String> {
    let text: Vec<f64> = documents
        .iter()
        .map(|d| reference_bm25(documents, d, &["fox"]))
        .collect();
    let vector: Vec<f64> = documents
        .iter()
        .map(|d| cosine(&vector_of(d), &[1.0, 0.0]))
        .collect();
    let text_ranks = ranks_of(&text, weights[0] >= 0.0);
    let vector_ranks = ranks_of(&vector, weights[1] >= 0.0);
    let fused: Vec<f64> = (0..documents.len())
        .map(|i| {
            weights[0].abs() / (60.0 + text_ranks[i]) + weights[1].abs() / (60.0 + vector_ranks[i])
        })
        .collect();
    let position = |document: &Value| {
        documents
            .iter()
            .position(|other| other["id"] == document["id"])
            .unwrap_or(0)
    };
    ordered_by(documents, |d| fused[position(d)])
}

#[test]
fn rrf_fuses_dense_ranks_with_and_without_weights() -> Result<(), QueryError> {
    let documents = texts();
    let plain = run(
        &documents,
        "SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0]))",
        &[],
        2,
    )?;
    assert_eq!(ids(&plain), reference_rrf(&documents, [1.0, 1.0]));
    let weighted = run(
        &documents,
        "SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0]), [2, -0.5])",
        &[],
        100,
    )?;
    assert_eq!(ids(&weighted), reference_rrf(&documents, [2.0, -0.5]));
    assert_ne!(ids(&weighted), ids(&plain));
    let bound = run(
        &documents,
        "SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, @t), VectorDistance(c.v, @v), @w) OFFSET 1 LIMIT 3",
        &[
            ("@t".into(), json!("fox")),
            ("@v".into(), json!([1, 0])),
            ("@w".into(), json!([2, -0.5])),
        ],
        1,
    )?;
    assert_eq!(
        ids(&bound),
        reference_rrf(&documents, [2.0, -0.5])[1..4].to_vec()
    );
    Ok(())
}

#[test]
fn scoring_functions_are_refused_outside_order_by_rank() {
    let refusals = [
        ("SELECT FullTextScore(c.text, 'fox') AS s FROM c ORDER BY RANK FullTextScore(c.text, 'fox')", "The FullTextScore function is only allowed in the ORDER BY RANK clause."),
        ("SELECT c.id FROM c WHERE FullTextScore(c.text, 'fox') > 0", "The FullTextScore function is only allowed in the ORDER BY RANK clause."),
        ("SELECT VALUE (SELECT VALUE FullTextScore(c.text, 'x')) FROM c", "The FullTextScore function is only allowed in the ORDER BY RANK clause."),
        ("SELECT c.id FROM c ORDER BY FullTextScore(c.text, 'fox')", "The FullTextScore function is only allowed in the ORDER BY RANK clause."),
        ("SELECT RRF(FullTextScore(c.text, 'a'), FullTextScore(c.text, 'b')) FROM c", "The RRF function is only allowed in the ORDER BY RANK clause."),
        ("SELECT TOP 10 c.id FROM c ORDER BY RANK FullTextScore(c.text, 'John') DESC", "Specifying a sort order (ASC or DESC) in the ORDER BY RANK clause is not allowed."),
        ("SELECT TOP 10 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'a'), VectorDistance(c.v, [1, 2])) ASC", "Specifying a sort order (ASC or DESC) in the ORDER BY RANK clause is not allowed."),
        ("SELECT c.id FROM c ORDER BY RANK c.id", "The ORDER BY RANK clause requires a scoring function"),
        ("SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'a'), FullTextScore(c.text, 'b'), [1])", "1 weights for 2 scoring functions"),
        ("SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'a'), FullTextScore(c.text, 'b'), [1, 1, 1])", "3 weights for 2 scoring functions"),
        ("SELECT c.id FROM c ORDER BY RANK FullTextScore(c.text, 3)", "must be strings"),
    ];
    for (query, message) in refusals {
        match prepare(query, &[], 0) {
            Err(error) => assert!(error.to_string().contains(message), "{query}: {error}"),
            Ok(_) => panic!("{query} was accepted"),
        }
    }
}

fn point(values: &[Value]) -> (String, String) {
    let text = Value::Array(values.to_vec()).to_string();
    (text.clone(), text)
}

fn hybrid_info(query: &str, parameters: &[(String, Value)]) -> Result<Value, QueryError> {
    let plan = prepare(query, parameters, 0)?.client_plan(&[vec!["pk".to_string()]], &point)?;
    assert!(plan.needs_client_pipeline());
    Ok(plan.to_json()["hybridSearchQueryInfo"].clone())
}

#[test]
fn the_plan_has_the_hybrid_search_info_the_sdks_read() -> Result<(), QueryError> {
    let info = hybrid_info(
        "SELECT TOP 10 c.id FROM c WHERE c.pk = 1 OR c.pk = 0 ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0], false, {'distanceFunction': 'euclidean'}), [1, 2])",
        &[],
    )?;
    assert_eq!(
        info["globalStatisticsQuery"],
        "SELECT COUNT(1) AS documentCount, [{\"totalWordCount\": SUM(_FullTextWordCount(c.text)), \"hitCounts\": [COUNTIF(FullTextContains(c.text, \"fox\"))]}] AS fullTextStatistics\nFROM c"
    );
    assert_eq!(info["requiresGlobalStatistics"], true);
    assert_eq!(info["take"], 10);
    assert_eq!(info["skip"], Value::Null);
    assert_eq!(info["componentWeights"], json!([1.0, 2.0]));
    let components = info["componentQueryInfos"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(components.len(), 2);
    assert_eq!(components[0]["orderBy"], json!(["Descending"]));
    assert_eq!(components[1]["orderBy"], json!(["Ascending"]));
    for component in &components {
        assert_eq!(component["hasNonStreamingOrderBy"], true);
        assert_eq!(component["top"], 120);
        let text = component["rewrittenQuery"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("SELECT TOP 120 c._rid, [{\"item\": "),
            "{text}"
        );
        assert!(
            text.contains("{documentdb-formattableorderbyquery-filter}"),
            "{text}"
        );
        assert!(text.contains("\"componentScores\": [_FullTextScore(c.text, [\"fox\"], {documentdb-formattablehybridsearchquery-totaldocumentcount}, {documentdb-formattablehybridsearchquery-totalwordcount-0}, {documentdb-formattablehybridsearchquery-hitcountsarray-0}), _VectorScore("), "{text}");
    }
    let info = hybrid_info(
        "SELECT c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox') OFFSET 2 LIMIT 5",
        &[],
    )?;
    assert_eq!(
        (info["skip"].clone(), info["take"].clone()),
        (json!(2), json!(5))
    );
    assert_eq!(info.get("componentWeights"), None);
    let plan = prepare(
        "SELECT TOP 1 c.id FROM c ORDER BY RANK FullTextScore(c.text, 'x')",
        &[],
        0,
    )?
    .client_plan(&[vec!["pk".to_string()]], &point)?;
    assert_eq!(
        plan.missing_features("Aggregate,OrderBy,Top"),
        vec!["HybridSearch"]
    );
    Ok(())
}

/// The first page only, as the Python SDK reads a component query: it must hold every row.
fn first_page(documents: &[Value], query: &str) -> Result<Vec<Value>, QueryError> {
    let mut run = prepare(query, &[], 0)?.start_page(None, 1)?;
    for (index, document) in documents.iter().enumerate() {
        if run.push(&key_of(index), document)?.is_break() {
            break;
        }
    }
    let page = run.finish(true)?;
    assert_eq!(page.continuation, None, "{query}");
    Ok(page.items)
}

/// Replaces the placeholders as the SDKs do, from the summed statistics.
fn formatted(text: &str, statistics: &Value) -> String {
    let mut text = text
        .replace("{documentdb-formattableorderbyquery-filter}", "true")
        .replace(
            "{documentdb-formattablehybridsearchquery-totaldocumentcount}",
            &statistics["documentCount"].to_string(),
        );
    let full_text = statistics["fullTextStatistics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut next = 0;
    for component in 0..4 {
        let words =
            format!("{{documentdb-formattablehybridsearchquery-totalwordcount-{component}}}");
        if !text.contains(&words) {
            continue;
        }
        let hits =
            format!("{{documentdb-formattablehybridsearchquery-hitcountsarray-{component}}}");
        text = text
            .replace(&words, &full_text[next]["totalWordCount"].to_string())
            .replace(&hits, &full_text[next]["hitCounts"].to_string());
        next += 1;
    }
    text
}

/// The Python SDK's hybrid pipeline over `ranges`: statistics summed, each component run on
/// each range, rows coalesced by `_rid`, dense ranks per component, fusion, skip and take.
fn pipeline(ranges: &[Vec<Value>], info: &Value) -> Result<Vec<Value>, QueryError> {
    let mut statistics = json!({"documentCount": 0, "fullTextStatistics": Value::Null});
    let stats_query = info["globalStatisticsQuery"].as_str().unwrap_or_default();
    for range in ranges {
        let row = run(range, stats_query, &[], 100)?.remove(0);
        let count = statistics["documentCount"].as_f64().unwrap_or(0.0)
            + row["documentCount"].as_f64().unwrap_or(0.0);
        statistics["documentCount"] = json!(count as u64);
        if statistics["fullTextStatistics"].is_null() {
            statistics["fullTextStatistics"] = row["fullTextStatistics"].clone();
            continue;
        }
        for (index, partial) in row["fullTextStatistics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let sum = &mut statistics["fullTextStatistics"][index];
            sum["totalWordCount"] = json!(
                sum["totalWordCount"].as_u64().unwrap_or(0)
                    + partial["totalWordCount"].as_u64().unwrap_or(0)
            );
            for (term, hits) in partial["hitCounts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                sum["hitCounts"][term] = json!(
                    sum["hitCounts"][term].as_u64().unwrap_or(0) + hits.as_u64().unwrap_or(0)
                );
            }
        }
    }
    let components = info["componentQueryInfos"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut rows: HashMap<String, Value> = HashMap::new();
    for component in &components {
        let text = formatted(
            component["rewrittenQuery"].as_str().unwrap_or_default(),
            &statistics,
        );
        for range in ranges {
            for row in first_page(range, &text)? {
                rows.insert(row["_rid"].as_str().unwrap_or_default().to_string(), row);
            }
        }
    }
    let mut rows: Vec<Value> = rows.into_values().collect();
    rows.sort_by(|a, b| a["_rid"].as_str().cmp(&b["_rid"].as_str()));
    let weights: Vec<f64> = match info["componentWeights"].as_array() {
        Some(weights) => weights.iter().filter_map(Value::as_f64).collect(),
        None => vec![1.0; components.len()],
    };
    let scores: Vec<Vec<Option<f64>>> = (0..components.len())
        .map(|c| {
            rows.iter()
                .map(|row| row["payload"]["componentScores"][c].as_f64())
                .collect()
        })
        .collect();
    let descending: Vec<bool> = components
        .iter()
        .map(|c| c["orderBy"][0] == "Descending")
        .collect();
    let fused = fuse(&scores, &descending, &weights);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|a, b| fused[*b].total_cmp(&fused[*a]));
    let skip = info["skip"].as_u64().unwrap_or(0) as usize;
    let take = info["take"].as_u64().unwrap_or(u64::MAX) as usize;
    Ok(order
        .into_iter()
        .skip(skip)
        .take(take)
        .map(|index| rows[index]["payload"]["payload"].clone())
        .collect())
}

#[test]
fn the_pipeline_over_two_ranges_gives_what_one_ranked_page_gives() -> Result<(), QueryError> {
    let documents = texts();
    let ranges: Vec<Vec<Value>> = vec![
        documents.iter().filter(|d| d["pk"] == 0).cloned().collect(),
        documents.iter().filter(|d| d["pk"] == 1).cloned().collect(),
    ];
    let queries = [
        "SELECT TOP 4 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0]))",
        "SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0]), [2, -0.5]) OFFSET 1 LIMIT 4",
        "SELECT c.id FROM c WHERE c.id != 'a' ORDER BY RANK RRF(FullTextScore(c.text, 'dog'), FullTextScore(c.text, 'fox')) OFFSET 0 LIMIT 10",
    ];
    for query in queries {
        let direct = run(&documents, query, &[], 100)?;
        let piped = pipeline(&ranges, &hybrid_info(query, &[])?)?;
        assert_eq!(ids(&piped), ids(&direct), "{query}");
    }
    Ok(())
}

#[test]
fn rank_is_a_clause_only_before_a_scoring_expression() -> Result<(), QueryError> {
    let query = parse(
        "SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.t, 'a'), VectorDistance(c.v, [1]))",
    )?;
    assert!(query.order_by_rank);
    assert_eq!(parse(&query.to_string())?, query);
    // A source named `rank` is still a source.
    let query = parse("SELECT r.id FROM rank r ORDER BY rank.x")?;
    assert!(!query.order_by_rank);
    let documents = vec![json!({"id": "x", "rank": 2}), json!({"id": "y", "rank": 1})];
    let results = run(
        &documents,
        "SELECT VALUE c.id FROM c ORDER BY c.rank",
        &[],
        10,
    )?;
    assert_eq!(results, vec![json!("y"), json!("x")]);
    Ok(())
}
