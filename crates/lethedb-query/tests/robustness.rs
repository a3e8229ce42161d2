//! "Never panics": thousands of random and mutated query strings go through `prepare`, and
//! the ones that prepare are run over a few documents. Every outcome must be `Ok` or `Err`.
//!
//! The generator is a fixed-seed xorshift, so a failure reproduces exactly. The cargo-fuzz
//! target in `fuzz/` explores the same boundary with coverage guidance.

use std::ops::ControlFlow;

use lethedb_query::prepare;
use serde_json::json;

/// How many inputs one run tries; enough to reach deep parser states in a second or two.
const INPUTS_COUNT: usize = 6_000;

struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

const SEEDS: &[&str] = &[
    "SELECT * FROM c WHERE c.a = 1",
    "SELECT DISTINCT TOP 3 VALUE c.name FROM root c JOIN t IN c.tags WHERE t IN ('a', 'b') ORDER BY c.name DESC",
    "SELECT c.g, COUNT(1) AS n, AVG(c.x) FROM c GROUP BY c.g",
    "SELECT VALUE ARRAY(SELECT VALUE s FROM s IN c.scores WHERE s > 1) FROM c",
    "SELECT c.a ?? c.b, c.ok ? 1 : 2, 'x' || c.s FROM c OFFSET 1 LIMIT 2",
    "SELECT VALUE {'a': [1, 2.5e3, null, true], \"b\": -c.n} FROM c WHERE NOT c.x BETWEEN 1 AND 2",
    "SELECT c.id FROM c WHERE c.name LIKE '%a_' ESCAPE '!' AND REGEXMATCH(c.s, '^a.*', 'i')",
    "SELECT VALUE DateTimeAdd('mm', 1, GetCurrentDateTime()) FROM c WHERE EXISTS(SELECT VALUE 1 FROM t IN c.tags)",
    "SELECT VALUE (SELECT VALUE MAX(s) FROM s IN c.scores) FROM c ORDER BY c.x, c.y DESC",
    "SELECT c[\"weird key\"], c.arr[0], c[@p] FROM c WHERE c.x >>> 1 | 2 & ~3 ^ 4 << 5 >= 0",
];

const FRAGMENTS: &[&str] = &[
    "SELECT",
    "VALUE",
    "FROM",
    "WHERE",
    "JOIN",
    "IN",
    "ORDER BY",
    "GROUP BY",
    "TOP",
    "OFFSET",
    "LIMIT",
    "AND",
    "OR",
    "NOT",
    "BETWEEN",
    "LIKE",
    "ESCAPE",
    "EXISTS",
    "ARRAY",
    "DISTINCT",
    "AS",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    ":",
    "?",
    "??",
    "||",
    "+",
    "-",
    "*",
    "/",
    "%",
    "=",
    "!=",
    "<",
    ">=",
    ">>>",
    "~",
    "'",
    "\"",
    "\\",
    "@p",
    "@missing",
    "c",
    "c.a",
    "t",
    "1",
    "-0",
    "1e308",
    "0.5",
    "null",
    "true",
    "undefined",
    "COUNT(1)",
    "ABS(",
    "CONCAT(",
    "\u{e9}",
    "\u{1F600}",
    "--",
    "\n",
    " ",
    "\u{0}",
];

fn mutate(random: &mut Xorshift, text: &str) -> String {
    let mut characters: Vec<char> = text.chars().collect();
    for _ in 0..=random.below(2) {
        let position = random.below(characters.len() + 1);
        match random.below(4) {
            0 if !characters.is_empty() => {
                let end = (position + random.below(8)).min(characters.len());
                characters.drain(position.min(end)..end);
            }
            1 => {
                let fragment = FRAGMENTS[random.below(FRAGMENTS.len())];
                for (offset, character) in fragment.chars().enumerate() {
                    characters.insert((position + offset).min(characters.len()), character);
                }
            }
            2 if !characters.is_empty() => {
                let index = position.min(characters.len() - 1);
                characters[index] = char::from_u32(random.below(0x250) as u32).unwrap_or('?');
            }
            _ => {
                let start = random.below(characters.len() + 1);
                let end = (start + random.below(20)).min(characters.len());
                let copied: Vec<char> = characters[start..end].to_vec();
                for (offset, character) in copied.into_iter().enumerate() {
                    characters.insert((position + offset).min(characters.len()), character);
                }
            }
        }
    }
    characters.into_iter().collect()
}

fn random_tokens(random: &mut Xorshift) -> String {
    (0..random.below(30))
        .map(|_| FRAGMENTS[random.below(FRAGMENTS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn prepare_and_run_never_panic() {
    let mut random = Xorshift(0x9E37_79B9_7F4A_7C15);
    let documents = [
        json!({"a": 1, "b": "x", "tags": ["a", "b"], "scores": [1, 2, 3], "name": "abc", "g": 1, "x": 2}),
        json!({"a": null, "s": "a\nb", "c": {"a": [1, {"b": 2}]}, "n": -1.5}),
        json!({}),
    ];
    let parameters = vec![("@p".to_string(), json!("a"))];
    let mut prepared_count = 0;
    for index in 0..INPUTS_COUNT {
        let text = if index % 4 == 0 {
            random_tokens(&mut random)
        } else if index % 4 == 1 {
            // A seed with one word swapped for another keeps most of the query valid.
            let seed = SEEDS[random.below(SEEDS.len())];
            let words: Vec<&str> = seed.split(' ').collect();
            let replaced = random.below(words.len());
            let other_seed = SEEDS[random.below(SEEDS.len())];
            let other_words: Vec<&str> = other_seed.split(' ').collect();
            let replacement = other_words[random.below(other_words.len())];
            words
                .iter()
                .enumerate()
                .map(|(position, word)| {
                    if position == replaced {
                        replacement
                    } else {
                        word
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            let seed = SEEDS[random.below(SEEDS.len())];
            mutate(&mut random, seed)
        };
        let Ok(prepared) = prepare(&text, &parameters, 0) else {
            continue;
        };
        prepared_count += 1;
        let _ = prepared.partition_key_equality(&[vec!["a".to_string()]]);
        let Ok(mut run) = prepared.start_page(None, 2) else {
            continue;
        };
        let mut exhausted = true;
        for (number, document) in documents.iter().enumerate() {
            match run.push(&[number as u8], document) {
                Ok(ControlFlow::Continue(())) => {}
                Ok(ControlFlow::Break(())) | Err(_) => {
                    exhausted = false;
                    break;
                }
            }
        }
        let _ = run.finish(exhausted);
    }
    // The mutations must leave enough valid queries to exercise the evaluator too.
    assert!(
        prepared_count > INPUTS_COUNT / 20,
        "only {prepared_count} inputs prepared"
    );
}

#[test]
fn deep_and_long_inputs_are_refused_not_crashed() {
    let inputs = [
        format!(
            "SELECT VALUE {}1{}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        ),
        format!("SELECT VALUE {}1", "-".repeat(100_000)),
        format!("SELECT VALUE {}1", "NOT ".repeat(50_000)),
        format!("SELECT VALUE {}", "[".repeat(100_000)),
        format!("SELECT VALUE {}", "{a:".repeat(50_000)),
        format!("SELECT VALUE c{} FROM c", "[0]".repeat(50_000)),
        format!("SELECT VALUE 1{} ", " + 1".repeat(50_000)),
        format!("SELECT VALUE {}", "EXISTS(SELECT VALUE ".repeat(20_000)),
        format!("SELECT VALUE 1 FROM c{}", " JOIN t IN c.a".repeat(10_000)),
        "x".repeat(1_000_000),
    ];
    for input in inputs {
        assert!(prepare(&input, &[], 0).is_err(), "{}", &input[..40]);
    }
}

#[test]
fn the_deepest_accepted_queries_evaluate_on_a_test_thread() {
    let depth = lethedb_query::EXPRESSION_DEPTH_MAX;
    let mut accepted = 0;
    for levels in (1..depth).rev() {
        let nested_calls = format!(
            "SELECT VALUE {}c.a{} FROM c",
            "ABS(".repeat(levels),
            ")".repeat(levels)
        );
        let nested_subqueries = format!(
            "SELECT VALUE {}c.a{} FROM c",
            "ARRAY(SELECT VALUE ".repeat(levels / 3),
            ")".repeat(levels / 3)
        );
        for text in [nested_calls, nested_subqueries] {
            let Ok(prepared) = prepare(&text, &[], 0) else {
                continue;
            };
            accepted += 1;
            let Ok(mut run) = prepared.start_page(None, 10) else {
                continue;
            };
            let _ = run.push(&[1], &json!({"a": -1}));
            assert!(run.finish(true).is_ok(), "{text}");
        }
    }
    assert!(
        accepted > depth,
        "only {accepted} deep queries were accepted"
    );
}
