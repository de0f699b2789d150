"""Fixtures of the store tests: an HTTP fault proxy in front of the real S3 server, a store wrapper that records calls.

The proxy forwards every request unchanged to SeaweedFS (the Host header too, so SigV4
signatures stay valid) unless a planned fault is due: then it answers with that HTTP status and
S3 error code itself. It is how the retry tests get real 503 SlowDown answers from a real socket.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from trainguard.store.backends import Store


@dataclass
class FaultProxy:
    """An HTTP proxy on 127.0.0.1 that injects planned S3 errors before forwarding."""

    upstream: str
    url: str = ""
    faults: list[tuple[int, str, str]] = field(default_factory=list)
    """(HTTP status, S3 error code, path part) answered, in order, to the next requests whose path
    contains the path part ("" matches every request); an empty code sends no error body."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """(method, path) of every request received, faulted or forwarded."""
    down: bool = False
    """While True every request is answered 503 ServiceUnavailable: the store is down."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_next(
        self, count: int, status: int = 503, code: str = "SlowDown", *, path_contains: str = ""
    ) -> None:
        with self.lock:
            self.faults.extend([(status, code, path_contains)] * count)

    def _next_fault(self, path: str) -> tuple[int, str] | None:
        with self.lock:
            if self.down:
                return 503, "ServiceUnavailable"
            for i, (status, code, part) in enumerate(self.faults):
                if part in path:
                    del self.faults[i]
                    return status, code
            return None


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    upstream = urlsplit(proxy.upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the base class's parameter name
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if self.headers.get("Transfer-Encoding"):
                raise RuntimeError("the fault proxy forwards only requests with Content-Length")
            body = self.rfile.read(length) if length else b""
            with proxy.lock:
                proxy.requests.append((self.command, self.path))
            fault = proxy._next_fault(self.path)
            if fault is not None:
                status, code = fault
                payload = b""
                if code and self.command != "HEAD":
                    payload = (
                        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                        f"<Message>injected by the test proxy</Message></Error>"
                    ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    return Handler


@pytest.fixture
def fault_proxy(s3_server: Any) -> Iterator[FaultProxy]:
    """A FaultProxy in front of the session's SeaweedFS, stopped after the test."""
    proxy = FaultProxy(upstream=s3_server.endpoint_url)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fault-proxy", daemon=True
    )
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class RecordingStore:
    """Delegates to a real store and records each `list` call (prefix, start_after, delimiter) and its result.

    `before_get` runs a callback (once) just before the first `get` of a given key, so a test can
    make an object land at an exact moment of a reader's sequence.
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.uri = inner.uri
        self.list_calls: list[tuple[str, str | None, str | None]] = []
        self.list_results: list[list[str]] = []
        self._before_get: dict[str, Callable[[], None]] = {}

    def before_get(self, key: str, callback: Callable[[], None]) -> None:
        self._before_get[key] = callback

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)

    def get(self, key: str) -> bytes:
        callback = self._before_get.pop(key, None)
        if callback is not None:
            callback()
        return self.inner.get(key)

    def list(
        self,
        prefix: str = "",
        *,
        start_after: str | None = None,
        delimiter: str | None = None,
        limit: int | None = None,
    ) -> list[str]:
        self.list_calls.append((prefix, start_after, delimiter))
        keys = self.inner.list(prefix, start_after=start_after, delimiter=delimiter, limit=limit)
        self.list_results.append(keys)
        return keys

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def delete(self, key: str) -> None:
        self.inner.delete(key)


@pytest.fixture
def recording_store() -> type[RecordingStore]:
    """The RecordingStore class, to wrap a real store: `recording_store(open_store(uri))`."""
    return RecordingStore
