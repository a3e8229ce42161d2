//! Which conjuncts an index serves, and the property that makes serving them safe: for random
//! documents and random filters, every document the filter selects has, for every conjunct
//! served, a value at the probe's path whose sort key falls in one of the probe's ranges.

use super::*;
use crate::prepared::prepare;
use crate::sort_key::SORT_KEY_TEXT_BYTES_MAX;
use serde_json::json;

fn conjuncts_of(filter: &str, parameters: &[(&str, Value)]) -> Vec<IndexConjunct> {
    let parameters: Vec<(String, Value)> = parameters
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect();
    let text = format!("SELECT * FROM c WHERE {filter}");
    prepare(&text, &parameters, 0)
        .unwrap_or_else(|error| panic!("{text}: {error}"))
        .index_conjuncts()
}

/// The paths of each served conjunct's probes, as `a/b` texts.
fn paths(filter: &str) -> Vec<Vec<String>> {
    conjuncts_of(filter, &[])
        .iter()
        .map(|conjunct| {
            conjunct
                .probes
                .iter()
                .map(|probe| probe.path.join("/"))
                .collect()
        })
        .collect()
}

#[test]
fn the_served_forms() {
    let served = [
        ("c.a = 1", vec![vec!["a"]]),
        ("1 = c.a", vec![vec!["a"]]),
        ("c.a.b > 'x'", vec![vec!["a/b"]]),
        ("c['a'] <= 2 AND c.b >= 3", vec![vec!["a"], vec!["b"]]),
        ("c.a IN (1, 'x', null)", vec![vec!["a", "a", "a"]]),
        ("c.a BETWEEN 1 AND 5", vec![vec!["a"]]),
        ("STARTSWITH(c.name, 'ab')", vec![vec!["name"]]),
        ("STARTSWITH(c.name, 'ab', false)", vec![vec!["name"]]),
        (
            "IS_DEFINED(c.a) AND IS_NUMBER(c.b)",
            vec![vec!["a"], vec!["b"]],
        ),
        ("IS_STRING(c.a) OR IS_NULL(c.b)", vec![vec!["a", "b"]]),
        ("ARRAY_CONTAINS(c.tags, 'red')", vec![vec!["tags/[]"]]),
        ("c.flag", vec![vec!["flag"]]),
        ("c.id = 'x' AND c._ts > 5", vec![vec!["id"], vec!["_ts"]]),
        (
            "(c.a = 1 AND UPPER(c.b) = 'X') OR c.c = 2",
            vec![vec!["a", "c"]],
        ),
        ("c.a = 1 AND NOT (c.b = 2)", vec![vec!["a"]]),
    ];
    for (filter, expected) in served {
        let expected: Vec<Vec<String>> = expected
            .into_iter()
            .map(|probes| probes.into_iter().map(str::to_string).collect())
            .collect();
        assert_eq!(paths(filter), expected, "{filter}");
    }
}

#[test]
fn what_is_not_served() {
    let refused = [
        "c.a != 1",
        "NOT (c.a = 1)",
        "c.a = 1 OR UPPER(c.b) = 'X'",
        "c.a = [1]",
        "c.a = {\"b\": 1}",
        "c.a = c.b",
        "c.a NOT IN (1, 2)",
        "c.a IN (1, [2])",
        "c.a NOT BETWEEN 1 AND 2",
        "c.a BETWEEN 1 AND 'z'",
        "STARTSWITH(c.name, 'ab', true)",
        "STARTSWITH(c.name, c.other)",
        "ARRAY_CONTAINS(c.tags, {\"a\": 1}, true)",
        "ARRAY_CONTAINS(c.tags, 'x', true)",
        "c._rid = 'x'",
        "c._etag = 'x'",
        "c._ts.x = 1",
        "c.a[0] = 1",
        "c.a + 1 = 2",
        "CONTAINS(c.a, 'x')",
        "IS_DEFINED(c)",
    ];
    for filter in refused {
        assert_eq!(paths(filter), Vec::<Vec<String>>::new(), "{filter}");
    }
}

#[test]
fn parameters_count_when_bound_to_scalars() {
    let one = conjuncts_of("c.a = @v", &[("@v", json!(3))]);
    assert_eq!(one.len(), 1);
    assert!(one[0].probes[0].seek);
    assert!(conjuncts_of("c.a = @v", &[("@v", json!([3]))]).is_empty());
    let flag = conjuncts_of("STARTSWITH(c.a, 'x', @f)", &[("@f", json!(false))]);
    assert_eq!(flag.len(), 1);
}

#[test]
fn sources_other_than_the_document_and_udfs_are_not_served() {
    let text = |query: &str| prepare(query, &[], 0).map(|prepared| prepared.index_conjuncts());
    assert_eq!(
        text("SELECT * FROM t IN c.tags WHERE t = 1").ok(),
        Some(Vec::new())
    );
    struct Udfs;
    impl crate::context::UdfHost for Udfs {
        fn defines(&self, _: &str) -> bool {
            true
        }
        fn call(&self, _: &str, _: &[Option<Value>]) -> Result<Option<Value>, crate::QueryError> {
            Ok(None)
        }
    }
    let udf = crate::prepared::prepare_with_udfs(
        "SELECT * FROM c WHERE c.a = 1 AND udf.f(c)",
        &[],
        0,
        Some(std::sync::Arc::new(Udfs)),
    );
    assert_eq!(
        udf.ok().map(|prepared| prepared.index_conjuncts()),
        Some(Vec::new())
    );
    let joined = text("SELECT c.id FROM c JOIN t IN c.tags WHERE c.a = 1 AND t = 2").ok();
    assert_eq!(joined.map(|conjuncts| conjuncts.len()), Some(1));
    assert_eq!(text("SELECT * FROM c").ok(), Some(Vec::new()));
}

/// A fixed-seed xorshift, so a failure reproduces exactly.
struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }

    fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[self.below(choices.len())]
    }
}

/// Values of every type, with ties across spellings (`1`, `1.0`), long texts that share a cut
/// key, and NUL bytes.
fn random_value(rng: &mut Xorshift) -> Option<Value> {
    let long = "x".repeat(SORT_KEY_TEXT_BYTES_MAX);
    Some(match rng.below(14) {
        0 => return None,
        1 => Value::Null,
        2 => json!(true),
        3 => json!(false),
        4 => json!(1),
        5 => json!(1.0),
        6 => json!(-2.5),
        7 => json!(""),
        8 => json!("ab"),
        9 => json!("a\u{0}"),
        10 => json!(format!("{long}a")),
        11 => json!(format!("{long}b")),
        12 => json!([1, "ab", null]),
        _ => json!({"a": 1, "b": "ab"}),
    })
}

fn random_document(rng: &mut Xorshift) -> Value {
    let mut document = serde_json::Map::new();
    for name in ["a", "b", "o", "arr"] {
        let value = if name == "o" && rng.below(2) == 0 {
            random_value(rng).map(|inner| json!({ "a": inner }))
        } else if name == "arr" && rng.below(2) == 0 {
            let elements: Vec<Value> = (0..rng.below(4))
                .filter_map(|_| random_value(rng))
                .collect();
            Some(Value::Array(elements))
        } else {
            random_value(rng)
        };
        if let Some(value) = value {
            document.insert(name.to_string(), value);
        }
    }
    Value::Object(document)
}

const CONSTANTS: [&str; 12] = [
    "1", "1.0", "-2.5", "0", "null", "true", "false", "''", "'ab'", "'a'", "@long", "@b",
];
const PATHS: [&str; 5] = ["c.a", "c.b", "c.o.a", "c.arr", "c['b']"];

fn random_leaf(rng: &mut Xorshift) -> String {
    let path = rng.pick(&PATHS);
    let constant = rng.pick(&CONSTANTS);
    let other = rng.pick(&CONSTANTS);
    match rng.below(12) {
        0 => format!("{path} = {constant}"),
        1 => format!("{constant} < {path}"),
        2 => format!("{path} <= {constant}"),
        3 => format!("{path} > {constant}"),
        4 => format!("{path} >= {constant}"),
        5 => format!("{path} BETWEEN {constant} AND {other}"),
        6 => format!("{path} IN ({constant}, {other})"),
        7 => format!(
            "STARTSWITH({path}, {})",
            rng.pick(&["''", "'a'", "'x'", "@long"])
        ),
        8 => format!("ARRAY_CONTAINS({path}, {constant})"),
        9 => format!(
            "{}({path})",
            rng.pick(&["IS_DEFINED", "IS_NULL", "IS_BOOL", "IS_NUMBER", "IS_STRING"])
        ),
        10 => format!(
            "{}({path})",
            rng.pick(&["IS_ARRAY", "IS_OBJECT", "IS_PRIMITIVE"])
        ),
        _ => path.to_string(),
    }
}

fn random_filter(rng: &mut Xorshift, depth: usize) -> String {
    if depth == 0 || rng.below(3) == 0 {
        return random_leaf(rng);
    }
    let left = random_filter(rng, depth - 1);
    let right = random_filter(rng, depth - 1);
    match rng.below(4) {
        0 => format!("NOT ({left})"),
        1 => format!("({left}) OR ({right})"),
        _ => format!("({left}) AND ({right})"),
    }
}

/// Every value at `path` of `document`, `[]` standing for each element of an array: what the
/// index holds of the document under that path.
fn values_at<'a>(document: &'a Value, path: &[String], out: &mut Vec<&'a Value>) {
    let Some((first, rest)) = path.split_first() else {
        out.push(document);
        return;
    };
    match (first.as_str(), document) {
        ("[]", Value::Array(elements)) => {
            for element in elements {
                values_at(element, rest, out);
            }
        }
        (name, Value::Object(members)) => {
            if let Some(child) = members.get(name) {
                values_at(child, rest, out);
            }
        }
        _ => {}
    }
}

/// Whether some value of `document` under the probe's path has a key in its range.
fn probe_holds(probe: &IndexProbe, document: &Value) -> bool {
    let mut values = Vec::new();
    values_at(document, &probe.path, &mut values);
    values.into_iter().any(|value| {
        let mut key = Vec::new();
        encode_sort_key(Some(value), &mut key);
        probe.start <= key && key < probe.end
    })
}

#[test]
fn every_selected_document_is_in_every_served_conjunct() {
    let mut rng = Xorshift(0x5eed_1dea);
    let long = "x".repeat(SORT_KEY_TEXT_BYTES_MAX);
    let parameters = vec![
        ("@long".to_string(), json!(format!("{long}a"))),
        ("@b".to_string(), json!(format!("{long}b"))),
    ];
    let documents: Vec<Value> = (0..60).map(|_| random_document(&mut rng)).collect();
    let (mut selected, mut served) = (0, 0);
    for _ in 0..3_000 {
        let filter = random_filter(&mut rng, 3);
        let text = format!("SELECT VALUE 1 FROM c WHERE {filter}");
        let prepared = prepare(&text, &parameters, 0).unwrap_or_else(|e| panic!("{text}: {e}"));
        let conjuncts = prepared.index_conjuncts();
        served += usize::from(!conjuncts.is_empty());
        for document in &documents {
            let mut run = prepared.start_page(None, 10).expect("page");
            let _flow = run.push(b"k", document).expect("push");
            if run.finish(true).expect("finish").items.is_empty() {
                continue;
            }
            selected += 1;
            for conjunct in &conjuncts {
                assert!(
                    conjunct
                        .probes
                        .iter()
                        .any(|probe| probe_holds(probe, document)),
                    "{text} selects {document} outside {conjunct:?}"
                );
            }
        }
    }
    // The property would hold vacuously if nothing were selected or served.
    assert!(selected > 10_000 && served > 1_000, "{selected} {served}");
}

/// [`exact_conjuncts`] of `SELECT * FROM c WHERE {filter}`, as a count of conjuncts.
fn exact(filter: &str) -> Option<usize> {
    let text = format!("SELECT * FROM c WHERE {filter}");
    let long = Value::String("l".repeat(SORT_KEY_TEXT_BYTES_MAX + 1));
    let prepared = prepare(&text, &[("@long".to_string(), long)], 0).expect("prepare");
    let inner = &prepared.inner;
    exact_conjuncts(
        &inner.query,
        &inner.context.parameters,
        &inner.context.full_text,
    )
    .map(|conjuncts| conjuncts.len())
}

#[test]
fn a_filter_is_served_exactly_only_when_every_conjunct_is() {
    assert_eq!(exact("c.a = 1 AND c.b > 'x' AND IS_STRING(c.c)"), Some(3));
    assert_eq!(exact("c.a IN (1, 2) AND (c.b = 1 OR c.c = 2)"), Some(2));
    assert_eq!(
        exact("STARTSWITH(c.a, 'ab') AND ARRAY_CONTAINS(c.t, 3) AND c.flag"),
        Some(3)
    );
    // A conjunct that is not served, a cut text, an AND under an OR, a long prefix.
    assert_eq!(exact("c.a = 1 AND LOWER(c.b) = 'x'"), None);
    assert_eq!(exact("c.a = @long"), None);
    assert_eq!(exact("c.a < @long"), None);
    assert_eq!(exact("(c.a = 1 AND c.b = 2) OR c.c = 3"), None);
    assert_eq!(exact("STARTSWITH(c.a, @long)"), None);
    assert_eq!(exact("NOT (c.a = 1)"), None);
}

#[test]
fn spatial_functions_are_served_by_spatial_probes_never_exactly() {
    let point = json!({"type": "Point", "coordinates": [-122.1, 47.6]});
    let square = json!({"type": "Polygon",
        "coordinates": [[[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]]});
    let parameters = [("@p", point), ("@g", square), ("@r", json!(500))];
    let served = [
        "ST_DISTANCE(c.loc, @p) < 500",
        "ST_DISTANCE(@p, c.loc) <= @r",
        "@r > ST_DISTANCE(c.loc, @p)",
        "ST_DISTANCE(c.loc, {'type': 'Point', 'coordinates': [-122.1, 47.6]}) < 10",
        "ST_WITHIN(c.loc, @g)",
        "ST_WITHIN(@g, c.loc)",
        "ST_INTERSECTS(@g, c.loc) AND c.n = 1",
    ];
    for filter in served {
        let conjuncts = conjuncts_of(filter, &parameters);
        let spatial: Vec<&IndexProbe> = conjuncts[0].probes.iter().collect();
        assert!(!spatial.is_empty(), "{filter}");
        assert!(
            spatial
                .iter()
                .all(|probe| probe.kind == ProbeKind::Spatial && probe.path == ["loc"]),
            "{filter}"
        );
    }
    let refused = [
        "ST_DISTANCE(c.loc, @p) > 500",
        "ST_DISTANCE(c.loc, @p) = 0",
        "ST_DISTANCE(c.loc, c.other) < 500",
        "ST_DISTANCE(c.loc, @g) < 500",
        "ST_DISTANCE(c.loc, @p) < 'far'",
        "NOT ST_WITHIN(c.loc, @g)",
        "ST_WITHIN(c.loc, @r)",
        "ST_WITHIN(c.loc, c.area)",
        "ST_ISVALID(c.loc)",
    ];
    for filter in refused {
        assert!(conjuncts_of(filter, &parameters).is_empty(), "{filter}");
    }
    assert_eq!(
        exact("ST_WITHIN(c.loc, {'type': 'Point', 'coordinates': [0, 0]})"),
        None
    );
}

#[test]
fn full_text_predicates_are_served_by_one_stem_per_term_never_exactly() {
    let stems = |filter: &str| -> Vec<Vec<u8>> {
        let conjuncts = conjuncts_of(filter, &[("@t", json!("Running shoes"))]);
        assert_eq!(conjuncts.len(), 1, "{filter}");
        let probes = &conjuncts[0].probes;
        assert!(probes
            .iter()
            .all(|probe| probe.kind == ProbeKind::FullText && probe.path == ["text"]));
        probes.iter().map(|probe| probe.start.clone()).collect()
    };
    // The longest stem of the term ("running" stems to "run", "shoes" to "shoe").
    assert_eq!(
        stems("FullTextContains(c.text, @t)"),
        [full_text_stem_key("shoe")]
    );
    assert_eq!(
        stems("FullTextContainsAll(c.text, 'red', 'helmets')"),
        [full_text_stem_key("helmet")]
    );
    assert_eq!(
        stems("FullTextContainsAny(c.text, 'red', 'helmets')"),
        [full_text_stem_key("helmet"), full_text_stem_key("red")]
    );
    let probe = &conjuncts_of("FullTextContains(c.text, 'red')", &[])[0].probes[0];
    assert_eq!(probe.end, successor(&full_text_stem_key("red")));
    for refused in [
        "FullTextContains(c.text, '...')",
        "FullTextContainsAny(c.text, 'red', 7)",
        "FullTextContains(c.text, c.other)",
        "NOT FullTextContains(c.text, 'red')",
    ] {
        assert!(conjuncts_of(refused, &[]).is_empty(), "{refused}");
    }
    assert_eq!(exact("FullTextContains(c.text, 'red')"), None);
}
