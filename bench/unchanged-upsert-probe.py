#!/usr/bin/env python3
"""Instructions per upsert of an unchanged item: starts LETHEDB_BINARY under callgrind on a
scratch store, creates 50 items of ~1 KiB through the official Python SDK, then upserts each of
them ten times with the same body and prints the server's instructions per upsert (every
thread). One client, so each upsert is its own commit.

Usage: bench/unchanged-upsert-probe.py LETHEDB_BINARY   (run it with
tests/e2e/python/.venv/bin/python)
"""
import sys, subprocess, time, os, tempfile, random
from azure.cosmos import CosmosClient, PartitionKey
binary = sys.argv[1]
d = tempfile.mkdtemp()
port = random.randint(20000, 40000)
server = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.out", binary, "serve",
    "--bind", f"127.0.0.1:{port}", "--data-dir", f"{d}/data", "--no-rate-limit", "--no-metrics"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
key = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
for _ in range(200):
    try:
        client = CosmosClient(f"http://127.0.0.1:{port}", key)
        db = client.create_database_if_not_exists("d")
        break
    except Exception:
        time.sleep(0.5)
c = db.create_container_if_not_exists("c", PartitionKey("/pk"))
items = [{"id": f"i{n}", "pk": f"p{n % 16}", "value": n, "payload": "x" * 950} for n in range(50)]
for item in items:
    c.upsert_item(item)
subprocess.run(["callgrind_control", "-z", str(server.pid)], stdout=subprocess.DEVNULL)
rounds = 10
for _ in range(rounds):
    for item in items:
        c.upsert_item(item)
subprocess.run(["callgrind_control", "-d", str(server.pid)], stdout=subprocess.DEVNULL)
time.sleep(1)
server.terminate(); server.wait()
total = 0
for name in os.listdir(d):
    if name.startswith("cg.out.1"):
        for line in open(os.path.join(d, name)):
            if line.startswith("summary:"):
                total += int(line.split()[1])
print(binary, "instructions per unchanged upsert:", total // (rounds * len(items)))
