//! Preloading items: many clients creating a range of the data set as fast as the server
//! acknowledges, recording when each item was sent, acknowledged and stamped.
//!
//! The TTL workloads use those instants to bound when an item was written; loading is never
//! measured as a workload itself.

use crate::cosmos::{Client, ContainerPaths, Endpoint};
use crate::data::{item_body, json_ts, unix_ms, DataSet};
use anyhow::bail;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When each loaded item was sent and acknowledged (Unix ms), by index.
pub struct LoadTimes {
    pub sent_ms: Vec<f64>,
    pub acked_ms: Vec<f64>,
    /// The `_ts` the server reported for each item.
    pub ts_secs: Vec<i64>,
    pub elapsed: Duration,
}

/// Creates items `0..data.items` with `clients` concurrent connections. `extra(index)` adds
/// fields (such as `"ttl":2,`) to an item. Any status but 201 fails the load.
pub async fn load_items(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    data: &DataSet,
    clients: usize,
    extra: Arc<dyn Fn(usize) -> String + Send + Sync>,
) -> anyhow::Result<LoadTimes> {
    load_item_range(endpoint, paths, data, 0..data.items, clients, extra).await
}

/// Creates the items of `indices` as [`load_items`] does; the times are indexed from
/// `indices.start`.
pub async fn load_item_range(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    data: &DataSet,
    indices: std::ops::Range<usize>,
    clients: usize,
    extra: Arc<dyn Fn(usize) -> String + Send + Sync>,
) -> anyhow::Result<LoadTimes> {
    let first = indices.start;
    let count = indices.len();
    let next = Arc::new(AtomicUsize::new(first));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (endpoint, paths, data, next, extra, indices) = (
            Arc::clone(endpoint),
            paths.clone(),
            data.clone(),
            Arc::clone(&next),
            Arc::clone(&extra),
            indices.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(endpoint);
            let mut times = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= indices.end {
                    return Ok::<_, anyhow::Error>(times);
                }
                let (id, pk) = (data.id(index), data.pk(index));
                let body = item_body(&id, &pk, data.value(index), &extra(index), data.item_bytes);
                let sent_ms = unix_ms();
                let reply = client.create_item(&paths, &pk, body).await?;
                let acked_ms = unix_ms();
                if reply.status != 201 {
                    bail!("loading item {id}: {} {}", reply.status, reply.detail());
                }
                times.push((index, sent_ms, acked_ms, json_ts(&reply.body)));
            }
        }));
    }
    let mut result = LoadTimes {
        sent_ms: vec![0.0; count],
        acked_ms: vec![0.0; count],
        ts_secs: vec![0; count],
        elapsed: Duration::ZERO,
    };
    for task in tasks {
        for (index, sent, acked, ts) in task.await?? {
            result.sent_ms[index - first] = sent;
            result.acked_ms[index - first] = acked;
            result.ts_secs[index - first] = ts;
        }
    }
    result.elapsed = started.elapsed();
    Ok(result)
}
