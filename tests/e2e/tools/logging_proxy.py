#!/usr/bin/env python3
"""A logging reverse proxy for writing up end-to-end findings: what exactly did the SDK send?

    python3 tests/e2e/tools/logging_proxy.py LISTEN_PORT http://127.0.0.1:SERVER_PORT

Point an SDK client at http://127.0.0.1:LISTEN_PORT/ and every request is printed with its
method, path, the Cosmos headers that matter, the body (first 2 KiB), and the answer's status,
headers and body. Plain HTTP only; standard library only; not used by the suites themselves.
"""

import http.client
import http.server
import sys
import urllib.parse

INTERESTING = ("x-ms-", "authorization", "if-match", "if-none-match", "content-type")
BODY_SHOWN_MAX = 2048


class Proxy(http.server.BaseHTTPRequestHandler):
    upstream: urllib.parse.SplitResult

    def _forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        headers = {name: value for name, value in self.headers.items() if name.lower() != "host"}
        connection.request(self.command, self.path, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read()

        print(f">>> {self.command} {self.path}", flush=True)
        for name, value in self.headers.items():
            if name.lower().startswith(INTERESTING):
                print(f"    {name}: {value}")
        if body:
            print(f"    body: {body[:BODY_SHOWN_MAX].decode(errors='replace')}")
        print(f"<<< {response.status} {response.reason}")
        for name, value in response.getheaders():
            print(f"    {name}: {value}")
        if answer:
            print(f"    body: {answer[:BODY_SHOWN_MAX].decode(errors='replace')}", flush=True)

        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward

    def log_message(self, *args):
        pass


def main():
    listen_port, upstream = int(sys.argv[1]), urllib.parse.urlsplit(sys.argv[2])
    Proxy.upstream = upstream
    http.server.ThreadingHTTPServer(("127.0.0.1", listen_port), Proxy).serve_forever()


if __name__ == "__main__":
    main()
