"""The sidecar's HTTP endpoints: `GET /metrics` (Prometheus text), `GET /healthz` (JSON) and read-only JSON documents.

A stdlib `ThreadingHTTPServer` on its own daemon thread, bound to the configured address and
port; port 0 takes a free one, readable as `MetricsServer.port`. `/metrics` renders the
registry it is given (content negotiation, OpenMetrics included, is prometheus_client's);
`/healthz` calls a function that returns (healthy, details); each path in `documents` calls its
function for the JSON body (the evaluator's `/findings`, `sidecar/findings.py`). What to report is
left to callers.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import prometheus_client
from prometheus_client import exposition
from typing_extensions import Self

from trainguard.errors import ConfigError

log = logging.getLogger(__name__)

HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]
Document = Callable[[], bytes]
"""Returns a JSON document (UTF-8 bytes), built at request time."""


class MetricsServer:
    """Serves /metrics and /healthz until `close()`; usable as a context manager."""

    def __init__(
        self,
        registry: prometheus_client.CollectorRegistry,
        *,
        health: HealthCheck,
        documents: Mapping[str, Document] | None = None,
        address: str = "0.0.0.0",
        port: int = 9400,
    ) -> None:
        self.registry = registry
        self.health = health
        self.documents = dict(documents or {})
        """Path (`/findings`) -> the function that builds its JSON body."""
        handler = _handler_class(self)
        try:
            self._httpd = ThreadingHTTPServer((address, port), handler)
        except OSError as err:
            raise ConfigError(
                f"cannot serve metrics on {address}:{port} ({err.strerror or err}); pick another metrics_port or 0"
            ) from err
        self._httpd.daemon_threads = True
        self.address = address
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="trainguard-metrics", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.address in ("0.0.0.0", "") else self.address
        return f"http://{host}:{self.port}"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler_class(server: MetricsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                output, headers = self._metrics()
                self._send(200, headers, output)
            elif path == "/healthz":
                healthy, details = server.health()
                body = json.dumps(details).encode()
                self._send(200 if healthy else 503, [("Content-Type", "application/json")], body)
            elif path in server.documents:
                self._send(200, [("Content-Type", "application/json")], server.documents[path]())
            else:
                paths = ", ".join(["/metrics", "/healthz", *sorted(server.documents)])
                self._send(404, [("Content-Type", "text/plain")], f"not found: try {paths}\n".encode())

        def _metrics(self) -> tuple[bytes, list[tuple[str, str]]]:
            encoder, content_type = exposition.choose_encoder(self.headers.get("Accept", ""))
            return encoder(server.registry), [("Content-Type", content_type)]

        def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("trainguard metrics: " + format, *args)

    return Handler
