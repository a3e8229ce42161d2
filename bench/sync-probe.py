#!/usr/bin/env python3
"""What a redo log's sync costs on this machine's disk, by how the file is written:

- append: each write grows the file (as a log file does the first time it is filled);
- rewrite: each write lands in blocks the file already has, written before (as a reused log
  file's writes do, `crates/lethedb-storage/src/redo_log.rs`);
- fallocate: the file's blocks reserved with posix_fallocate first, never written.

Each mode writes COUNT records of RECORD bytes, each followed by fdatasync, and prints the
median and 90th percentile of write+sync, and the system CPU time per sync.

Usage: bench/sync-probe.py DIRECTORY [COUNT] [RECORD]   (DIRECTORY on the disk to measure)
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def run(directory: str, mode: str, count: int, record: bytes) -> None:
    path = os.path.join(directory, f"sync-probe-{mode}")
    if os.path.exists(path):
        os.remove(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        if mode == "rewrite":
            os.write(fd, b"\0" * (len(record) * count))
            os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_SET)
        elif mode == "fallocate":
            os.posix_fallocate(fd, 0, len(record) * count)
            os.fsync(fd)
        spans = []
        before = os.times()
        for _ in range(count):
            start = time.perf_counter()
            os.write(fd, record)
            os.fdatasync(fd)
            spans.append(time.perf_counter() - start)
        after = os.times()
    finally:
        os.close(fd)
        os.remove(path)
    spans.sort()
    print(
        f"{mode:9} median {statistics.median(spans) * 1e6:6.0f} µs, "
        f"p90 {spans[int(count * 0.9)] * 1e6:6.0f} µs, "
        f"system {(after.system - before.system) / count * 1e6:5.0f} µs per sync"
    )


def main() -> None:
    directory = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    record = b"r" * (int(sys.argv[3]) if len(sys.argv) > 3 else 16000)
    for mode in ("append", "rewrite", "fallocate", "append", "rewrite"):
        run(directory, mode, count, record)


if __name__ == "__main__":
    main()
