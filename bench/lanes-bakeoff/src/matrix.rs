//! The whole bake-off: every candidate at every lane count, each run a child process of its own
//! (so `/proc/self/io` and `getrusage` count that run alone) on a fresh store, the rounds
//! alternating between configurations so that a slow spell of the shared machine spreads over
//! all of them; then the median of each figure as a Markdown table. Also the list of rows one
//! create writes, with their sizes.

use crate::shape::{create_rows, document, Counters, Create, Indexing, Payload};
use crate::stores::Engine;
use crate::Options;
use std::process::Command;

/// The figures a run reports, in the table's order.
const FIGURES: [(&str, &str); 7] = [
    ("writes_per_s", "durable writes/s"),
    ("writes_per_commit", "writes per commit"),
    ("bytes_written_per_write", "bytes written per write"),
    ("cpu_us_per_write", "CPU µs per write"),
    ("store_bytes_per_item", "store bytes per item"),
    ("peak_rss_mib", "peak RSS MiB"),
    ("rows_per_write", "rows per write"),
];

/// The configurations to run: every engine at every lane count, less the ones that would
/// repeat another (one lane of separate files is one file; one fjall lane has no one to share
/// a sync with).
fn configurations(options: &Options) -> Result<Vec<(Engine, u64)>, String> {
    let engines = options.text(
        "engines",
        "redb-one,redb-files,fjall,fjall-own-sync,fjall-blobs",
    );
    let lanes = options.text("lane-counts", "1,2,4");
    let mut out = Vec::new();
    for name in engines.split(',') {
        let engine = Engine::parse(name).ok_or_else(|| format!("unknown engine {name}"))?;
        for count in lanes.split(',') {
            let count: u64 = count
                .parse()
                .map_err(|_| format!("bad lane count {count}"))?;
            // fjall-blobs differs from fjall in how it stores, not in how lanes commit: one lane says it.
            let repeats = (count == 1
                && matches!(engine, Engine::RedbFiles | Engine::FjallOwnSync))
                || (count > 1 && engine == Engine::FjallBlobs);
            if !repeats {
                out.push((engine, count));
            }
        }
    }
    Ok(out)
}

/// Runs one configuration in a child process and reads its figures.
fn run_child(
    options: &Options,
    engine: Engine,
    lanes: u64,
    directory: &str,
) -> Result<Vec<(String, f64)>, String> {
    let program = std::env::current_exe().map_err(|error| error.to_string())?;
    let mut command = Command::new(program);
    command.args([
        "one",
        "--engine",
        engine.name(),
        "--lanes",
        &lanes.to_string(),
        "--dir",
        directory,
    ]);
    for name in [
        "clients",
        "warmup-s",
        "duration-s",
        "partitions",
        "item-bytes",
        "indexing",
        "payload",
        "cache-mib",
    ] {
        let value = options.text(name, "");
        if !value.is_empty() {
            command.args([format!("--{name}"), value]);
        }
    }
    let output = command.output().map_err(|error| error.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find(|line| line.starts_with("result "))
        .ok_or_else(|| {
            format!(
                "{} lanes={lanes} failed: {}",
                engine.name(),
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
    eprintln!("{line}");
    Ok(line
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .filter_map(|(key, value)| value.parse().ok().map(|number| (key.to_string(), number)))
        .collect())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        count if count % 2 == 1 => values[count / 2],
        count => (values[count / 2 - 1] + values[count / 2]) / 2.0,
    }
}

/// Runs the bake-off and prints the medians.
pub fn matrix(options: &Options) -> Result<(), String> {
    let configurations = configurations(options)?;
    let rounds = options.number("rounds", 3)?;
    let base = options.text("dir", "tmp/lanes-bakeoff");
    let mut results: Vec<Vec<Vec<(String, f64)>>> = vec![Vec::new(); configurations.len()];
    for round in 0..rounds {
        for (slot, (engine, lanes)) in configurations.iter().enumerate() {
            let directory = format!("{base}/{}-{lanes}-{round}", engine.name());
            results[slot].push(run_child(options, *engine, *lanes, &directory)?);
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    println!(
        "| store | lanes | {} |",
        FIGURES.map(|(_, title)| title).join(" | ")
    );
    println!("|---|---:|{}", "---:|".repeat(FIGURES.len()));
    for ((engine, lanes), runs) in configurations.iter().zip(&results) {
        let cells: Vec<String> = FIGURES
            .iter()
            .map(|(key, _)| {
                let values = runs
                    .iter()
                    .filter_map(|run| {
                        run.iter()
                            .find(|(name, _)| name == key)
                            .map(|(_, value)| *value)
                    })
                    .collect();
                let value = median(values);
                if value < 100.0 {
                    format!("{value:.1}")
                } else {
                    format!("{value:.0}")
                }
            })
            .collect();
        println!("| {} | {lanes} | {} |", engine.name(), cells.join(" | "));
    }
    Ok(())
}

/// Lists the rows one create of a 1 KiB item writes under the default policy, with the sizes
/// of their keys and values.
pub fn print_shape() {
    let mut seed = 42;
    let id = "0001-000000000001-00abcdef0123456789".to_string();
    let (body, payload) = document(&id, 3, 500, 1024, Payload::Random, &mut seed);
    let create = Create {
        partition: 3,
        id,
        value: 500,
        body,
    };
    let mut counters = Counters::empty(3);
    let rows = create_rows(
        &create,
        &payload,
        &mut counters,
        1_790_000_000_000,
        Indexing::Default,
    );
    let (mut keys, mut values) = (0, 0);
    println!("| table | key bytes | value bytes |\n|---|---:|---:|");
    for row in &rows {
        println!(
            "| {} | {} | {} |",
            row.table.name(),
            row.key.len(),
            row.value.len()
        );
        keys += row.key.len();
        values += row.value.len();
    }
    let counters_key = crate::shape::counters_key(0).len();
    println!("| counters (once per shard and commit) | {counters_key} | 32 |");
    println!(
        "| all {} rows + counters | {} | {} |",
        rows.len(),
        keys + counters_key,
        values + 32
    );
}
