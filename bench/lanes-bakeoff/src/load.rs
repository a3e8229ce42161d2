//! One measured run: client threads submit creates to the lane that owns each one's partition
//! and wait for its acknowledgement; each lane's writer takes everything queued into one group,
//! commits it durably and only then acknowledges it. After a warmup the run counts what the
//! measured window acknowledged and committed; the process's bytes written to disk and CPU time
//! are counted from before the store opened to after it settled and closed, per create.

use crate::measure::{cpu_seconds, directory_bytes, peak_resident_bytes, write_bytes};
use crate::shape::{document, next_random, Create, Indexing, Payload};
use crate::stores::{open, Engine, Opened, Pending};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What one run is asked to do.
pub struct RunConfig {
    pub engine: Engine,
    pub lanes: usize,
    pub clients: usize,
    pub partitions: u16,
    pub item_bytes: usize,
    pub payload: Payload,
    pub warmup: Duration,
    pub duration: Duration,
    pub directory: PathBuf,
    pub indexing: Indexing,
    pub cache_bytes: usize,
}

/// What one run measured.
pub struct Outcome {
    pub writes_per_second: f64,
    pub writes_per_commit: f64,
    pub rows_per_write: f64,
    pub bytes_written_per_write: f64,
    pub cpu_microseconds_per_write: f64,
    pub store_bytes_per_item: f64,
    pub peak_resident_mib: f64,
    pub items: u64,
}

/// The counts every lane adds to.
#[derive(Default)]
struct Counts {
    acknowledged: AtomicU64,
    commits: AtomicU64,
    rows: AtomicU64,
}

impl Counts {
    fn read(&self) -> (u64, u64, u64) {
        (
            self.acknowledged.load(Ordering::Relaxed),
            self.commits.load(Ordering::Relaxed),
            self.rows.load(Ordering::Relaxed),
        )
    }
}

/// One create on its way to a lane, with where to say it is durable.
struct Submitted {
    pending: Pending,
    acknowledge: Sender<Result<(), String>>,
}

/// The most creates one group takes, so that a backlog cannot make one commit unbounded.
const GROUP_MAX: usize = 4096;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// A lane's writer: waits for one create, takes every other one queued, commits them as one
/// group and acknowledges each after the commit (and its sync) returned.
fn lane_writer(
    engine: Engine,
    lane: usize,
    store: Arc<Opened>,
    queue: Receiver<Submitted>,
    counts: Arc<Counts>,
    indexing: Indexing,
) {
    let mut group: Vec<Submitted> = Vec::new();
    while let Ok(first) = queue.recv() {
        group.push(first);
        while group.len() < GROUP_MAX {
            match queue.try_recv() {
                Ok(next) => group.push(next),
                Err(_) => break,
            }
        }
        let pendings: Vec<Pending> = group
            .iter_mut()
            .map(|submitted| Pending {
                create: std::mem::replace(&mut submitted.pending.create, empty_create()),
                payload: std::mem::take(&mut submitted.pending.payload),
            })
            .collect();
        let committed = store.commit(engine, lane, &pendings, now_ms(), indexing);
        if let Ok(rows) = &committed {
            counts.commits.fetch_add(1, Ordering::Relaxed);
            counts.rows.fetch_add(*rows, Ordering::Relaxed);
            counts
                .acknowledged
                .fetch_add(group.len() as u64, Ordering::Relaxed);
        }
        for submitted in group.drain(..) {
            let _ = submitted.acknowledge.send(committed.clone().map(|_| ()));
        }
    }
}

fn empty_create() -> Create {
    Create {
        partition: 0,
        id: String::new(),
        value: 0,
        body: Vec::new(),
    }
}

/// A client: creates fresh items in random partitions, one at a time, until told to stop.
fn client(
    number: usize,
    config: Arc<ClientConfig>,
    lanes: Vec<Sender<Submitted>>,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    let (acknowledge, acknowledged) = channel();
    let mut seed = 0x2545_F491_4F6C_DD1D ^ ((number as u64 + 1) * 0x9E37_79B9);
    let mut sequence = 0u64;
    while !stop.load(Ordering::Relaxed) {
        sequence += 1;
        let partition = (next_random(&mut seed) % u64::from(config.partitions)) as u16;
        // 36 characters, as a GUID id is.
        let id = format!(
            "{number:04}-{sequence:012}-{:018x}",
            next_random(&mut seed) >> 8
        );
        let value = next_random(&mut seed) % 1000;
        let (body, payload) = document(
            &id,
            partition,
            value,
            config.item_bytes,
            config.payload,
            &mut seed,
        );
        let create = Create {
            partition,
            id,
            value,
            body,
        };
        let lane = &lanes[usize::from(partition) % lanes.len()];
        lane.send(Submitted {
            pending: Pending { create, payload },
            acknowledge: acknowledge.clone(),
        })
        .map_err(|_| "a lane stopped".to_string())?;
        acknowledged
            .recv()
            .map_err(|_| "a lane stopped".to_string())??;
    }
    Ok(())
}

struct ClientConfig {
    partitions: u16,
    item_bytes: usize,
    payload: Payload,
}

/// Runs one configuration on a fresh store and measures it.
pub fn run(config: &RunConfig) -> Result<Outcome, String> {
    let (bytes_before, cpu_before) = (write_bytes()?, cpu_seconds());
    let store = Arc::new(open(
        config.engine,
        config.lanes,
        &config.directory,
        config.cache_bytes,
    )?);
    let counts = Arc::new(Counts::default());
    let mut queues = Vec::new();
    let mut writers = Vec::new();
    for lane in 0..config.lanes {
        let (submit, queue) = channel();
        queues.push(submit);
        let (store, counts, engine, indexing) = (
            store.clone(),
            counts.clone(),
            config.engine,
            config.indexing,
        );
        writers.push(thread::spawn(move || {
            lane_writer(engine, lane, store, queue, counts, indexing)
        }));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let client_config = Arc::new(ClientConfig {
        partitions: config.partitions,
        item_bytes: config.item_bytes,
        payload: config.payload,
    });
    let clients: Vec<_> = (0..config.clients)
        .map(|number| {
            let (lanes, stop, client_config) =
                (queues.clone(), stop.clone(), client_config.clone());
            thread::spawn(move || client(number, client_config, lanes, stop))
        })
        .collect();
    drop(queues);
    thread::sleep(config.warmup);
    let (started, at_start) = (Instant::now(), counts.read());
    thread::sleep(config.duration);
    let (elapsed, at_end) = (started.elapsed().as_secs_f64(), counts.read());
    stop.store(true, Ordering::Relaxed);
    for handle in clients {
        handle
            .join()
            .map_err(|_| "a client panicked".to_string())??;
    }
    for handle in writers {
        handle.join().map_err(|_| "a lane panicked".to_string())?;
    }
    let items = counts.read().0;
    store.settle()?;
    drop(store);
    let (bytes_after, cpu_after) = (write_bytes()?, cpu_seconds());
    let window_writes = (at_end.0 - at_start.0) as f64;
    Ok(Outcome {
        writes_per_second: window_writes / elapsed,
        writes_per_commit: window_writes / (at_end.1 - at_start.1).max(1) as f64,
        rows_per_write: (at_end.2 - at_start.2) as f64 / window_writes.max(1.0),
        bytes_written_per_write: (bytes_after - bytes_before) as f64 / items.max(1) as f64,
        cpu_microseconds_per_write: (cpu_after - cpu_before) * 1e6 / items.max(1) as f64,
        store_bytes_per_item: directory_bytes(&config.directory) as f64 / items.max(1) as f64,
        peak_resident_mib: peak_resident_bytes() as f64 / 1024.0 / 1024.0,
        items,
    })
}
