"""The round-robin proxy the PostgreSQL run puts in front of its two instances (round_robin.py),
tested on its own against two small standard-library HTTP servers: if it mangled a body or
stuck to one backend, the suite behind it would prove less than it claims."""

from __future__ import annotations

import hashlib
import http.client
import http.server
import json
import threading

import pytest
import requests

from postgres_cluster import Proxy, postgres_mode

pytestmark = pytest.mark.skipif(
    not postgres_mode(), reason="the proxy serves only the PostgreSQL run: scripts/test postgres")


class Echo(http.server.BaseHTTPRequestHandler):
    """Answers with its own port and a digest of the body it received; `/chunked` answers in
    chunks, `/big` with 1 MiB, HEAD with headers only, `/empty` with 204."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", ""):
            data = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                data += self.rfile.read(size)
                self.rfile.read(2)
            while self.rfile.readline() not in (b"\r\n", b""):
                pass
            return data
        return self.rfile.read(int(self.headers.get("content-length", 0)))

    def do_POST(self):
        data = self.body()
        answer = json.dumps({"port": self.server.server_port, "length": len(data),
                             "sha256": hashlib.sha256(data).hexdigest()}).encode()
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for start in range(0, len(answer), 5):
                piece = answer[start:start + 5]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_response(201)
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    def do_GET(self):
        if self.path == "/empty":
            self.send_response(204)
            self.end_headers()
            return
        data = bytes(range(256)) * 4096 if self.path == "/big" else str(self.server.server_port).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "12345")
        self.end_headers()


@pytest.fixture
def backends():
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxy(backends, tmp_path):
    proxy = Proxy(tmp_path / "proxy.log").start([f"127.0.0.1:{s.server_port}" for s in backends])
    yield proxy
    proxy.stop()


def test_each_request_on_one_keep_alive_connection_goes_to_the_next_backend(backends, proxy):
    """One client connection, kept alive: its requests alternate between the backends, and
    the proxy's counts say so."""
    ports = [s.server_port for s in backends]
    with requests.Session() as session:
        seen = [int(session.get(proxy.endpoint + "port").text) for _ in range(6)]
    assert set(seen) == set(ports)
    assert all(seen[n] != seen[n + 1] for n in range(5))
    assert proxy.counts() == [3, 3]


def test_bodies_pass_through_unchanged_whatever_their_framing(proxy):
    """Request bodies with Content-Length and chunked, responses with Content-Length,
    chunked, 1 MiB, HEAD and 204: each arrives byte for byte, and the connection stays usable."""
    payload = bytes(range(256)) * 300
    digest = hashlib.sha256(payload).hexdigest()
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    try:
        for path in ("/plain", "/chunked"):
            connection.request("POST", path, body=payload)
            assert json.loads(connection.getresponse().read())["sha256"] == digest
            connection.request("POST", path, body=iter([payload[:1000], payload[1000:]]), encode_chunked=True)
            answer = json.loads(connection.getresponse().read())
            assert (answer["length"], answer["sha256"]) == (len(payload), digest)
        connection.request("GET", "/big")
        assert connection.getresponse().read() == bytes(range(256)) * 4096
        connection.request("HEAD", "/")
        response = connection.getresponse()
        assert (response.status, response.getheader("content-length"), response.read()) == (200, "12345", b"")
        connection.request("GET", "/empty")
        response = connection.getresponse()
        assert (response.status, response.read()) == (204, b"")
        connection.request("GET", "/port")
        assert connection.getresponse().status == 200
    finally:
        connection.close()


def test_a_backend_that_is_down_answers_502_and_the_next_request_goes_on(backends, proxy):
    """With one backend gone, its turn is a 502 from the proxy and the other backend still
    serves the next request."""
    backends[1].shutdown()
    backends[1].server_close()
    statuses = []
    for _ in range(4):
        with requests.Session() as session:
            statuses.append(session.get(proxy.endpoint + "port").status_code)
    assert sorted(statuses) == [200, 200, 502, 502]
