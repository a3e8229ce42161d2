//! What the process has cost so far: bytes it caused to be written to storage
//! (`write_bytes` of `/proc/self/io`), CPU seconds of all its threads and its peak resident
//! memory (`getrusage`), and the
//! disk space a store's files take (allocated blocks, so sparse or preallocated space counts as
//! the file system counts it).

use std::path::Path;

/// The bytes this process has caused to be sent to the storage layer.
pub fn write_bytes() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/self/io").map_err(|error| error.to_string())?;
    text.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|value| value.trim().parse().ok())
        .ok_or_else(|| "no write_bytes in /proc/self/io".to_string())
}

/// User and system CPU seconds of every thread of this process.
pub fn cpu_seconds() -> f64 {
    let usage = usage();
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The most memory the process has held resident so far, in bytes.
pub fn peak_resident_bytes() -> u64 {
    // Linux reports it in KiB.
    usage().ru_maxrss.max(0) as u64 * 1024
}

fn usage() -> libc::rusage {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // getrusage fills the struct it is given; RUSAGE_SELF cannot fail with a valid pointer.
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    }
}

/// The disk space every file under `directory` takes.
pub fn directory_bytes(directory: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(directory) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(metadata) if metadata.is_dir() => directory_bytes(&entry.path()),
            Ok(metadata) => metadata.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}
