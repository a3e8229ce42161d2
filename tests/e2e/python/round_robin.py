"""A small HTTP/1.1 reverse proxy that sends each REQUEST to the next backend in turn.

The PostgreSQL run of the end-to-end suite puts it in front of two `lethedb` instances on one
database, so that consecutive requests of one SDK client alternate between the instances. The
SDK keeps its connections alive, which is why the balancing is per request and not per
connection: each client connection is read one request at a time, and each request goes to the
next backend over a keep-alive connection of that backend's own pool.

It speaks only what the official SDKs send over plain HTTP: a request head, then a body framed
by Content-Length or by chunked transfer coding (copied through verbatim). The backend's answer
is streamed back unchanged, whatever its framing (Content-Length, chunked, or until the backend
closes). Standard library only.

`GET /_round_robin/counts` is answered by the proxy itself: how many requests each backend was
sent, so a test can check that both instances served traffic.

    python round_robin.py --listen 127.0.0.1:0 --backend 127.0.0.1:8081 --backend 127.0.0.1:8082
    python round_robin.py --fd 5 --backend ...   # serve on an already listening socket

It prints `listening on HOST:PORT` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
from typing import Optional

COUNTS_PATH = b"/_round_robin/counts"
# Heads are small; the limit only guards against a peer that never ends its head.
HEAD_LIMIT = 1 << 20
PIECE = 1 << 16
CONNECT_TIMEOUT_SECS = 10


class BadMessage(Exception):
    """The peer sent something that is not HTTP/1.1 as this proxy understands it."""


class Head:
    """A request or status line with its header lines, kept as received."""

    def __init__(self, raw: bytes):
        self.raw = raw
        lines = raw.split(b"\r\n")
        self.start = lines[0].split(b" ", 2)
        if len(self.start) < 2:
            raise BadMessage(f"bad start line {lines[0]!r}")
        self.headers: dict[bytes, list[bytes]] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(b":")
            if not sep:
                raise BadMessage(f"bad header line {line!r}")
            self.headers.setdefault(name.strip().lower(), []).append(value.strip())

    def header(self, name: bytes) -> Optional[bytes]:
        values = self.headers.get(name)
        return b",".join(values) if values else None

    def tokens(self, name: bytes) -> set[bytes]:
        value = self.header(name) or b""
        return {token.strip().lower() for token in value.split(b",") if token.strip()}

    def chunked(self) -> bool:
        return b"chunked" in self.tokens(b"transfer-encoding")

    def content_length(self) -> Optional[int]:
        value = self.header(b"content-length")
        if value is None:
            return None
        # Repeated identical values are allowed; differing ones are not.
        values = {v.strip() for v in value.split(b",")}
        only = values.pop() if len(values) == 1 else b""
        if not only.isdigit():
            raise BadMessage(f"bad content-length {value!r}")
        return int(only)

    def keep_alive(self, version: bytes) -> bool:
        connection = self.tokens(b"connection")
        if version == b"HTTP/1.0":
            return b"keep-alive" in connection
        return b"close" not in connection


async def read_head(reader: asyncio.StreamReader) -> Optional[Head]:
    """The next head, or None when the peer closed cleanly before sending one."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise BadMessage("connection closed in the middle of a head") from error
        return None
    return Head(raw[:-4])


async def copy_exactly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: int) -> None:
    while count > 0:
        piece = await reader.read(min(count, PIECE))
        if not piece:
            raise ConnectionError("peer closed in the middle of a body")
        writer.write(piece)
        count -= len(piece)
        await writer.drain()


async def copy_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copies a chunked body verbatim: size lines, data, the last chunk and any trailers."""
    while True:
        line = await reader.readuntil(b"\r\n")
        writer.write(line)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError as error:
            raise BadMessage(f"bad chunk size line {line!r}") from error
        if size == 0:
            while True:
                trailer = await reader.readuntil(b"\r\n")
                writer.write(trailer)
                if trailer == b"\r\n":
                    await writer.drain()
                    return
        await copy_exactly(reader, writer, size + 2)


async def copy_until_closed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while piece := await reader.read(PIECE):
        writer.write(piece)
        await writer.drain()


class Backend:
    """One upstream address with its pool of idle keep-alive connections."""

    def __init__(self, address: str):
        host, _, port = address.rpartition(":")
        self.address, self.host, self.port = address, host, int(port)
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.requests = 0

    async def connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self.idle:
            reader, writer = self.idle.pop()
            # A connection the backend closed while it sat idle has seen its EOF by now.
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=HEAD_LIMIT), CONNECT_TIMEOUT_SECS)

    def release(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.idle.append((reader, writer))


class Proxy:
    def __init__(self, backends: list[str]):
        if not backends:
            raise ValueError("at least one backend")
        self.backends = [Backend(address) for address in backends]
        self.turn = 0

    def counts(self) -> dict:
        return {"backends": [b.address for b in self.backends],
                "requests": [b.requests for b in self.backends]}

    def next_backend(self) -> Backend:
        backend = self.backends[self.turn % len(self.backends)]
        self.turn += 1
        backend.requests += 1
        return backend

    async def serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await read_head(reader)
                if head is None or not await self.one_request(head, reader, writer):
                    break
        except (BadMessage, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                asyncio.TimeoutError, OSError) as error:
            print(f"round_robin: client connection ended: {error!r}", file=sys.stderr, flush=True)
        finally:
            writer.close()

    async def one_request(self, head: Head, client_reader, client_writer) -> bool:
        """Forwards one request and its answer; False when the client connection must close."""
        method, target, version = head.start[0], head.start[1], head.start[2] if len(head.start) > 2 else b""
        client_keeps = head.keep_alive(version)
        if target == COUNTS_PATH and method == b"GET":
            await answer_locally(client_writer, 200, json.dumps(self.counts()).encode())
            return client_keeps
        chunked, length = head.chunked(), head.content_length()
        backend = self.next_backend()
        try:
            up_reader, up_writer = await backend.connection()
        except (OSError, asyncio.TimeoutError) as error:
            # The request body was not read, so the connection cannot be reused.
            await answer_locally(client_writer, 502, f"backend {backend.address}: {error!r}".encode(),
                                 close=True)
            return False
        try:
            up_writer.write(head.raw + b"\r\n\r\n")
            if chunked:
                await copy_chunked(client_reader, up_writer)
            elif length:
                await copy_exactly(client_reader, up_writer, length)
            await up_writer.drain()
            backend_keeps = await self.relay_response(method, up_reader, client_writer)
        except BaseException:
            up_writer.close()
            raise
        if backend_keeps:
            backend.release(up_reader, up_writer)
        else:
            up_writer.close()
        return client_keeps and backend_keeps

    async def relay_response(self, method: bytes, up_reader, client_writer) -> bool:
        """Streams the backend's answer back; True if the backend connection can be reused."""
        while True:
            head = await read_head(up_reader)
            if head is None:
                raise ConnectionError("backend closed before answering")
            client_writer.write(head.raw + b"\r\n\r\n")
            status = int(head.start[1])
            if 100 <= status < 200 and status != 101:
                continue  # an interim answer; the final one follows
            break
        version = head.start[0]
        keeps = head.keep_alive(version)
        if method == b"HEAD" or status in (204, 304):
            pass
        elif head.chunked():
            await copy_chunked(up_reader, client_writer)
        elif (length := head.content_length()) is not None:
            await copy_exactly(up_reader, client_writer, length)
        else:
            await copy_until_closed(up_reader, client_writer)
            keeps = False
        await client_writer.drain()
        return keeps


async def answer_locally(writer: asyncio.StreamWriter, status: int, body: bytes, close: bool = False) -> None:
    reason = {200: "OK", 502: "Bad Gateway"}[status]
    lines = [f"HTTP/1.1 {status} {reason}",
             f"content-type: {'application/json' if status == 200 else 'text/plain'}",
             f"content-length: {len(body)}"]
    if close:
        lines.append("connection: close")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()


async def serve(backends: list[str], listen: Optional[str], fd: Optional[int]) -> None:
    proxy = Proxy(backends)
    if fd is not None:
        sock = socket.socket(fileno=fd)
        server = await asyncio.start_server(proxy.serve_client, sock=sock, limit=HEAD_LIMIT)
    else:
        host, _, port = (listen or "127.0.0.1:0").rpartition(":")
        server = await asyncio.start_server(proxy.serve_client, host, int(port), limit=HEAD_LIMIT)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"listening on {host}:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", action="append", required=True, help="HOST:PORT, repeatable")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--listen", help="HOST:PORT to listen on (port 0: any free one)")
    where.add_argument("--fd", type=int, help="an inherited, already listening socket")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.backend, args.listen, args.fd))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
