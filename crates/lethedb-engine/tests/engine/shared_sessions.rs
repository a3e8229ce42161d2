//! Session LSNs of a range when two engines share one PostgreSQL store: each process keeps the
//! sums of its ranges' shard sequences in memory, so another process's writes raise them only
//! once this one reads something of theirs, and then to exactly what the writer reports.
//!
//! Like `shared_store.rs`, they run when `LETHEDB_TEST_POSTGRES` names a database.

use crate::common::{pk, resolved};
use crate::shared_store::{database_url, fresh_schema, pair_in};
use lethedb_engine::{Container, Engine, WriteMode};
use serde_json::json;
use std::sync::Arc;

/// Creates item `id` in partition `p` through `engine`; returns the write's LSN.
async fn create(engine: &Engine, container: &Arc<Container>, id: &str) -> u64 {
    let written = engine
        .write_item(
            container,
            WriteMode::Create,
            pk("p"),
            json!({"id": id, "pk": "p"}),
            None,
        )
        .await
        .expect("create");
    written.item.record.lsn
}

/// The session LSN of partition `p`'s range in `engine` after a point read of `id`.
async fn session_after_reading(engine: &Engine, container: &Container, id: &str) -> u64 {
    let (_, seen) = engine
        .read_item_with_lsn(&resolved(engine, "c"), pk("p"), id)
        .await
        .expect("read");
    engine
        .range_session_lsn(container, range_of_p(container), Some(seen))
        .await
        .expect("session")
}

fn range_of_p(container: &Container) -> u32 {
    let key = container
        .partition_key
        .point_key(pk("p"))
        .expect("a point key");
    container.range_of(&key)
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_engines_writes_raise_a_range_session_once_this_one_reads_them() {
    let (url, schema) = (database_url(), fresh_schema());
    let (a, b, _) = pair_in(&url, &schema).await;
    let (on_a, on_b) = (resolved(&a, "c"), resolved(&b, "c"));
    let range = range_of_p(&on_a);
    let first = create(&a, &on_a, "x").await;
    let after_first = a
        .range_session_lsn(&on_a, range, Some(first))
        .await
        .expect("a's session");
    assert_eq!(session_after_reading(&b, &on_b, "x").await, after_first);

    let mut last = first;
    for id in ["y", "z"] {
        last = create(&a, &on_a, id).await;
    }
    let after_three = a
        .range_session_lsn(&on_a, range, Some(last))
        .await
        .expect("a's session");
    assert_eq!(after_three, after_first + 2, "each write raises it by one");
    let kept = b
        .range_session_lsn(&on_b, range, None)
        .await
        .expect("b's session");
    assert_eq!(kept, after_first, "b has read nothing of a's since");
    // A read of the partition's shard sees its counters, and with them a's two writes.
    assert_eq!(session_after_reading(&b, &on_b, "x").await, after_three);

    // The other way round: b's write raises a's sums once a reads the partition again.
    let from_b = create(&b, &on_b, "w").await;
    let on_b_now = b
        .range_session_lsn(&on_b, range, Some(from_b))
        .await
        .expect("b's session");
    assert_eq!(on_b_now, after_three + 1);
    assert_eq!(session_after_reading(&a, &on_a, "y").await, on_b_now);
}
