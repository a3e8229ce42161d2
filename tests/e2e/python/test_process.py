"""The server as a process: its start-up line, graceful shutdown, and durability after SIGKILL/SIGTERM."""

import random
import re
import signal
import threading
import time

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from conftest import make_client

WRITERS = 4
# Enough acknowledged writes that the stop lands in the middle of a busy stream.
ACKED_BEFORE_STOP = 600
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


class Writer(threading.Thread):
    """Creates, replaces and deletes its own items until told to stop or a request fails.

    `state` maps each id to the body of its last acknowledged write (None once deleted).
    `uncertain` is the one id whose write was in flight when the server died: it may hold either
    its acknowledged state or the one that write asked for.
    """

    def __init__(self, container, number: int):
        super().__init__(daemon=True)
        self.container, self.number = container, number
        self.rng = random.Random(number)
        self.state: dict[str, dict | None] = {}
        self.uncertain: tuple[str, dict | None] | None = None
        self.acknowledged = 0
        self.failed = threading.Event()
        self.stop = threading.Event()

    def body(self, item_id: str, version: int) -> dict:
        return {"id": item_id, "pk": f"p{self.number}", "version": version,
                "payload": self.rng.randbytes(self.rng.randint(10, 2000)).hex()}

    def run(self) -> None:
        sequence = 0
        while not self.stop.is_set():
            live = [item_id for item_id, body in self.state.items() if body is not None]
            choice = self.rng.random()
            if choice < 0.6 or not live:
                item_id, operation = f"w{self.number}-{sequence}", "create"
                sequence += 1
                wanted = self.body(item_id, 0)
            elif choice < 0.85:
                item_id, operation = self.rng.choice(live), "replace"
                wanted = self.body(item_id, self.state[item_id]["version"] + 1)
            else:
                item_id, operation, wanted = self.rng.choice(live), "delete", None
            try:
                if operation == "create":
                    written = self.container.create_item(wanted)
                elif operation == "replace":
                    written = self.container.replace_item(item_id, wanted)
                else:
                    self.container.delete_item(item_id, partition_key=f"p{self.number}")
                    written = None
            except Exception:  # noqa: BLE001 - the server is gone; this write was not acknowledged
                self.uncertain = (item_id, wanted)
                self.failed.set()
                return
            self.state[item_id] = written
            self.acknowledged += 1


def matches(found: dict | None, body: dict | None) -> bool:
    """Whether a read item (None: 404) is the state `body` describes (None: deleted)."""
    if body is None or found is None:
        return body is found
    return all(found.get(name) == value for name, value in body.items())


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_every_acknowledged_write_survives_a_stop_mid_stream(start_server, signal_name):
    server = start_server()
    setup = make_client(server).create_database("durable")
    setup.create_container("items", partition_key=PartitionKey(path="/pk"))
    # A client that gives up at once when the server disappears, instead of retrying.
    container = (make_client(server, retry_total=0, retry_connect=0, retry_read=0, connection_timeout=2)
                 .get_database_client("durable").get_container_client("items"))

    writers = [Writer(container, number) for number in range(WRITERS)]
    for writer in writers:
        writer.start()
    deadline = time.monotonic() + WRITE_PHASE_SECS_MAX
    while sum(writer.acknowledged for writer in writers) < ACKED_BEFORE_STOP and time.monotonic() < deadline:
        time.sleep(0.01)
    failed_early = [writer.number for writer in writers if writer.failed.is_set()]
    if signal_name == "SIGKILL":
        server.kill()
    else:
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(10) == 0, server.log_tail()
        server.stop()
    for writer in writers:
        writer.stop.set()
        writer.join(30)
    assert not failed_early, f"writers {failed_early} failed before the stop:\n{server.log_tail()}"
    acknowledged = sum(writer.acknowledged for writer in writers)
    assert acknowledged >= 20, f"only {acknowledged} writes were acknowledged before the stop"
    print(f"{acknowledged} writes acknowledged before {signal_name}")

    restarted = start_server(data_dir=server.data_dir)
    after = make_client(restarted).get_database_client("durable").get_container_client("items")
    wrong = []
    for writer in writers:
        for item_id, expected in writer.state.items():
            try:
                found = after.read_item(item_id, partition_key=f"p{writer.number}")
            except CosmosResourceNotFoundError:
                found = None
            in_flight = writer.uncertain is not None and writer.uncertain[0] == item_id
            if not (matches(found, expected) or (in_flight and matches(found, writer.uncertain[1]))):
                wrong.append((item_id, expected and expected["version"], found and found.get("version")))
    assert not wrong, f"{len(wrong)} items differ from their last acknowledged write: {wrong[:10]}"

    # Only acknowledged items and, per writer, the one write in flight can be there.
    expected_ids = {item_id for writer in writers for item_id, body in writer.state.items() if body is not None}
    in_flight = {writer.uncertain[0] for writer in writers if writer.uncertain}
    found_ids = set(after.query_items("SELECT VALUE c.id FROM c", enable_cross_partition_query=True))
    assert expected_ids - in_flight <= found_ids <= expected_ids | in_flight
    # The store still takes writes after recovery.
    after.create_item({"id": "after-restart", "pk": "p0"})


def test_expiry_is_final_across_a_restart(start_server):
    """An item that expired stays gone after TTL is turned off and the server restarts, whether
    or not the sweeper got to it; an item still counting down keeps its clock across the restart."""
    server = start_server()
    database = make_client(server).create_database("ttl")
    container = database.create_container("items", partition_key=PartitionKey(path="/pk"), default_ttl=2)
    container.create_item({"id": "expires", "pk": "p"})
    container.create_item({"id": "forever", "pk": "p", "ttl": -1})
    written = time.monotonic()
    time.sleep(max(0.0, written + 2.6 - time.monotonic()))
    database.replace_container(container, partition_key=PartitionKey(path="/pk"))  # TTL off

    server.kill()
    restarted = start_server(data_dir=server.data_dir)
    after = make_client(restarted).get_database_client("ttl").get_container_client("items")
    assert "defaultTtl" not in after.read()
    with pytest.raises(CosmosResourceNotFoundError):
        after.read_item("expires", partition_key="p")
    assert sorted(item["id"] for item in after.read_all_items()) == ["forever"]
    assert list(after.query_items("SELECT VALUE COUNT(1) FROM c", partition_key="p")) == [1]


def test_a_countdown_continues_across_a_restart(start_server):
    server = start_server()
    container = (make_client(server).create_database("ttl")
                 .create_container("items", partition_key=PartitionKey(path="/pk"), default_ttl=3))
    container.create_item({"id": "counting", "pk": "p"})
    written = time.monotonic()
    # Restart a second later, so that a server restarting the clock at start-up (expiry at about
    # written + 4 s) is told apart from one that keeps it (expiry at written + 3 s).
    time.sleep(1.0)
    server.stop()

    restarted = start_server(data_dir=server.data_dir)
    after = make_client(restarted).get_database_client("ttl").get_container_client("items")
    # The restart took well under 3 s, so the item is still there, and expires on its old clock.
    assert time.monotonic() - written < 2.5, "the restart was too slow for this test's timing"
    assert after.read_item("counting", partition_key="p")["id"] == "counting"
    time.sleep(max(0.0, written + 3.6 - time.monotonic()))
    with pytest.raises(CosmosResourceNotFoundError):
        after.read_item("counting", partition_key="p")
