"""Misbehaving webhook receivers: real TCP servers on 127.0.0.1 that answer at the socket level.

`RawReceiver(behaviour)` reads each HTTP request whole, records it, then answers as told:

- `ok` / `status:503`: a complete response with that status;
- `trickle`: a status line and one endless header, one byte every `interval_seconds`;
- `hang`: nothing at all, until the client gives up;
- `truncated`: half a status line, then closes;
- `incomplete-body`: 200 with a Content-Length it never sends in full, then closes;
- `redirect:<url>`: 302 to another URL.

Used by the webhook tests and by `benchmarks/stop_latency.py`. `close()` ends every connection.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from typing import Any


class RawReceiver:
    """One scripted receiver; `url` has a token-like path so tests can check it never leaks."""

    def __init__(self, behaviour: str, *, interval_seconds: float = 0.2) -> None:
        self.behaviour = behaviour
        self.interval_seconds = interval_seconds
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.connections = 0
        self.open_connections = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        receiver = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with receiver._lock:
                    receiver.connections += 1
                    receiver.open_connections += 1
                try:
                    request = _read_request(self.request)
                    if request is None:
                        return
                    with receiver._lock:
                        receiver.requests.append(request)
                    receiver._answer(self.request)
                except OSError:
                    return  # the client went away: that is what several behaviours wait for
                finally:
                    with receiver._lock:
                        receiver.open_connections -= 1

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/hooks/secret-token-123"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _answer(self, conn: socket.socket) -> None:
        kind, _, arg = self.behaviour.partition(":")
        if kind == "ok" or kind == "status":
            code = int(arg or 200)
            conn.sendall(f"HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
        elif kind == "redirect":
            conn.sendall(
                f"HTTP/1.1 302 Found\r\nLocation: {arg}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
            )
        elif kind == "truncated":
            conn.sendall(b"HTTP/1.1 2")
        elif kind == "incomplete-body":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        elif kind == "trickle":
            for byte in b"HTTP/1.1 200 OK\r\nX-Trickle: " + b"a" * 8000:
                if self._closing.wait(self.interval_seconds):
                    return
                conn.sendall(bytes([byte]))
        elif kind == "hang":
            conn.settimeout(0.1)
            while not self._closing.is_set():
                try:
                    if not conn.recv(1):
                        return  # the client closed the connection
                except TimeoutError:
                    continue
        else:
            raise ValueError(f"unknown behaviour {self.behaviour!r}")

    def headers(self) -> list[dict[str, str]]:
        """Return the headers of every request received so far (names lower-cased)."""
        with self._lock:
            return [h for h, _ in self.requests]

    def wait_connected(self, *, timeout_seconds: float = 15.0) -> None:
        """Block until a client has sent a request and still holds its connection open."""
        deadline = time.monotonic() + timeout_seconds
        while self.open_connections == 0 or not self.requests:
            if time.monotonic() > deadline:
                raise AssertionError(f"no client connected to the {self.behaviour} receiver")
            time.sleep(0.01)

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def _read_request(conn: socket.socket) -> tuple[dict[str, str], bytes] | None:
    """Read one HTTP request (headers and a Content-Length body); None when the client sent nothing."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    headers: dict[str, Any] = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return headers, body
