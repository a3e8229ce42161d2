//! Issue 30's bake-off of durable write lanes (`bench/results/lanes-bakeoff.md` has the
//! results and the verdict). `lanes-bakeoff matrix` runs every candidate at every lane count,
//! each run in a fresh child process on a fresh store, several rounds alternating, and prints
//! the medians as a Markdown table; `lanes-bakeoff one ...` is one such run; `lanes-bakeoff
//! shape` lists the rows one create writes. It models the engine's write shape and group commit
//! with the stores alone: no HTTP, no JSON parsing, no rules, which the server adds on top.

mod load;
mod matrix;
mod measure;
mod shape;
mod stores;

use load::{run, RunConfig};
use shape::{Indexing, Payload};
use std::path::PathBuf;
use std::time::Duration;
use stores::Engine;

/// Options as `--name value` pairs, with defaults for the ones not given.
pub struct Options {
    pairs: Vec<(String, String)>,
}

impl Options {
    fn parse(arguments: &[String]) -> Result<Options, String> {
        let mut pairs = Vec::new();
        let mut rest = arguments.iter();
        while let Some(name) = rest.next() {
            let name = name
                .strip_prefix("--")
                .ok_or_else(|| format!("expected --option, found {name}"))?;
            let value = rest
                .next()
                .ok_or_else(|| format!("--{name} needs a value"))?;
            pairs.push((name.to_string(), value.clone()));
        }
        Ok(Options { pairs })
    }

    pub fn text(&self, name: &str, default: &str) -> String {
        self.pairs
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map_or_else(|| default.to_string(), |(_, value)| value.clone())
    }

    pub fn number(&self, name: &str, default: u64) -> Result<u64, String> {
        let text = self.text(name, &default.to_string());
        text.parse()
            .map_err(|_| format!("--{name} takes a whole number, not {text}"))
    }
}

fn run_config(options: &Options) -> Result<RunConfig, String> {
    let engine_name = options.text("engine", "redb-one");
    Ok(RunConfig {
        engine: Engine::parse(&engine_name)
            .ok_or_else(|| format!("unknown engine {engine_name}"))?,
        lanes: options.number("lanes", 1)?.max(1) as usize,
        clients: options.number("clients", 32)? as usize,
        partitions: options.number("partitions", 16)? as u16,
        item_bytes: options.number("item-bytes", 1024)? as usize,
        payload: match options.text("payload", "random").as_str() {
            "repeated" => Payload::Repeated,
            _ => Payload::Random,
        },
        warmup: Duration::from_secs(options.number("warmup-s", 2)?),
        duration: Duration::from_secs(options.number("duration-s", 8)?),
        directory: PathBuf::from(options.text("dir", "tmp/lanes-bakeoff")),
        indexing: match options.text("indexing", "default").as_str() {
            "none" => Indexing::None,
            _ => Indexing::Default,
        },
        cache_bytes: options.number("cache-mib", 64)? as usize * 1024 * 1024,
    })
}

/// One run; prints its outcome as one `result key=value ...` line for `matrix` to read.
fn one(options: &Options) -> Result<(), String> {
    let config = run_config(options)?;
    let _ = std::fs::remove_dir_all(&config.directory);
    let outcome = run(&config)?;
    if options.text("keep", "false") != "true" {
        let _ = std::fs::remove_dir_all(&config.directory);
    }
    println!(
        "result engine={} lanes={} writes_per_s={:.1} writes_per_commit={:.2} rows_per_write={:.2} \
         bytes_written_per_write={:.0} cpu_us_per_write={:.1} store_bytes_per_item={:.0} peak_rss_mib={:.0} items={}",
        config.engine.name(),
        config.lanes,
        outcome.writes_per_second,
        outcome.writes_per_commit,
        outcome.rows_per_write,
        outcome.bytes_written_per_write,
        outcome.cpu_microseconds_per_write,
        outcome.store_bytes_per_item,
        outcome.peak_resident_mib,
        outcome.items,
    );
    Ok(())
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = arguments
        .split_first()
        .map_or(("", &[][..]), |(first, rest)| (first.as_str(), rest));
    let done = Options::parse(rest).and_then(|options| match command {
        "one" => one(&options),
        "matrix" => matrix::matrix(&options),
        "shape" => {
            matrix::print_shape();
            Ok(())
        }
        _ => Err("usage: lanes-bakeoff one|matrix|shape [--option value ...]".to_string()),
    });
    if let Err(message) = done {
        eprintln!("lanes-bakeoff: {message}");
        std::process::exit(1);
    }
}
