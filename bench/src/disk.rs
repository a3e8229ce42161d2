//! How long the disk takes to make a small write durable, measured just before a durable write
//! workload: a durable write is acknowledged only after its group's sync, so on a disk shared
//! with other work this figure, not the server's CPU, can bound writes per second (32 clients
//! can complete at most 32 writes per sync).

use crate::stats::percentile_f64;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// The median and 90th percentile, in milliseconds, of `rounds` 4 KiB write + `fdatasync`
/// pairs on a scratch file in `dir`.
pub fn sync_latency_ms(dir: &Path, rounds: usize) -> anyhow::Result<(f64, f64)> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("sync-probe");
    let mut file = std::fs::File::create(&path)?;
    let block = [0x5au8; 4096];
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        file.write_all(&block)?;
        let start = Instant::now();
        file.sync_data()?;
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    drop(file);
    std::fs::remove_file(&path)?;
    samples.sort_by(f64::total_cmp);
    Ok((percentile_f64(&samples, 0.5), percentile_f64(&samples, 0.9)))
}
