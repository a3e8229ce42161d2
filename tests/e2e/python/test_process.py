"""The server as a process: its start-up line, graceful shutdown, and durability after SIGKILL."""

import random
import re
import signal
import threading
import time

from azure.cosmos import PartitionKey

from conftest import make_client

WRITERS = 4
# Enough acknowledged writes that the kill lands in the middle of a busy stream.
ACKED_BEFORE_KILL = 600
WRITE_PHASE_SECS_MAX = 30


def test_start_up_line_names_the_endpoint(start_server):
    server = start_server()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and f"127.0.0.1:{server.port}" not in server.log_path.read_text():
        time.sleep(0.05)
    assert re.search(rf"(https?://)?127\.0\.0\.1:{server.port}", server.log_path.read_text())


def test_sigterm_shuts_down_cleanly_and_keeps_data(start_server):
    server = start_server()
    container = (make_client(server).create_database("kept")
                 .create_container("items", partition_key=PartitionKey(path="/pk")))
    container.create_item({"id": "a", "pk": "p", "v": 1})

    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(10) == 0
    server.stop()

    restarted = start_server(data_dir=server.data_dir)
    item = (make_client(restarted).get_database_client("kept").get_container_client("items")
            .read_item("a", partition_key="p"))
    assert item["v"] == 1


def test_every_acknowledged_write_survives_sigkill(start_server):
    server = start_server()
    setup = make_client(server).create_database("durable")
    setup.create_container("items", partition_key=PartitionKey(path="/pk"))
    # A client that gives up at once when the server disappears, instead of retrying.
    container = (make_client(server, retry_total=0, retry_connect=0, retry_read=0, connection_timeout=2)
                 .get_database_client("durable").get_container_client("items"))

    acknowledged = []  # list.append is atomic under the GIL.
    stop = threading.Event()

    def write(writer: int) -> None:
        rng = random.Random(writer)
        sequence = 0
        while not stop.is_set():
            body = {"id": f"w{writer}-{sequence}", "pk": f"p{writer}", "seq": sequence,
                    "payload": rng.randbytes(rng.randint(10, 2000)).hex(), "nested": {"n": [writer, sequence]}}
            try:
                acknowledged.append(container.create_item(body))
            except Exception:
                return  # The server is gone; this write was not acknowledged.
            sequence += 1

    threads = [threading.Thread(target=write, args=(writer,), daemon=True) for writer in range(WRITERS)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + WRITE_PHASE_SECS_MAX
    while len(acknowledged) < ACKED_BEFORE_KILL and time.monotonic() < deadline:
        time.sleep(0.01)
    alive_at_kill = sum(thread.is_alive() for thread in threads)
    server.kill()
    stop.set()
    for thread in threads:
        thread.join(30)
    assert alive_at_kill == WRITERS, "a writer failed before the kill:\n" + server.log_tail()
    assert len(acknowledged) >= 20, f"only {len(acknowledged)} writes were acknowledged before the kill"
    print(f"{len(acknowledged)} writes acknowledged before SIGKILL")

    restarted = start_server(data_dir=server.data_dir)
    after = make_client(restarted).get_database_client("durable").get_container_client("items")
    missing, changed = [], []
    for written in acknowledged:
        try:
            read = after.read_item(written["id"], partition_key=written["pk"])
        except Exception as error:  # noqa: BLE001 - reported below with the item's id
            missing.append((written["id"], getattr(error, "status_code", repr(error))))
            continue
        if {name: read.get(name) for name in written} != dict(written):
            changed.append(written["id"])
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged items lost: {missing[:10]}"
    assert not changed, f"{len(changed)} acknowledged items changed: {changed[:10]}"

    # At most one unacknowledged write per writer can have landed as well.
    count = list(after.query_items("SELECT VALUE COUNT(1) FROM c", enable_cross_partition_query=True))[0]
    assert len(acknowledged) <= count <= len(acknowledged) + WRITERS
    # The store still takes writes after recovery.
    after.create_item({"id": "after-restart", "pk": "p0"})
