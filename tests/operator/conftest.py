"""Operator fixtures: the emulated API server (`kube`) and the operator running against it.

`operator_runner` starts `kopf run --standalone -A -m trainguard.operator.handlers` with
KopfRunner (kopf in a thread, KMock on the test's loop) and waits for kopf's liveness endpoint,
so tests start once the operator watches. Test bodies must `await` (`eventually`). `debugjob_object`
builds the DebugJob that the pure status decision takes, for tests without the API server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import kopf.testing
import pytest
import pytest_asyncio

from tests.kube import KubeEnv, free_port, kube, wait_http  # noqa: F401  (fixture re-export)
from trainguard.api import debugjob as api
from trainguard.api.rules_config import RuleSpec


def debugjob_object(rules: list[RuleSpec], reports: dict[str, api.RankReport], **status: Any) -> api.DebugJob:
    """A DebugJob as `status_decision.decide` receives it (generation 2), its Job with two ready pods."""
    return api.DebugJob(
        metadata={"name": "dj", "namespace": "ns", "uid": "u", "generation": 2},
        spec=api.DebugJobSpec(
            template={"spec": {"containers": [{"name": "trainer"}]}},
            capture=api.CaptureSpec(uri="file:///tmp/x"),
            rules=rules,
        ),
        status=api.DebugJobStatus(reports=reports, job=api.JobSummary(active=2, ready=2), **status),
    )


class OperatorProcess:
    """One KopfRunner run of the operator; `start()`/`stop()` may be called again to restart it."""

    def __init__(self) -> None:
        self.runner: kopf.testing.KopfRunner | None = None
        self.outputs: list[str] = []

    async def start(self) -> None:
        port = free_port()
        self.runner = kopf.testing.KopfRunner(
            [
                "run",
                "--standalone",
                "-A",
                f"--liveness=http://127.0.0.1:{port}/healthz",
                "-m",
                "trainguard.operator.handlers",
            ],
            timeout=60,
        )
        self.runner.__enter__()
        await wait_http(f"http://127.0.0.1:{port}/healthz", timeout_seconds=30)

    async def stop(self) -> None:
        if self.runner is None:
            return
        runner, self.runner = self.runner, None
        await asyncio.to_thread(runner.__exit__, None, None, None)
        self.outputs.append(runner.output)
        if runner.exception is not None:
            raise AssertionError(f"the operator crashed: {runner.exception!r}\n{runner.output}")


@pytest_asyncio.fixture
async def operator_runner(kube: KubeEnv) -> AsyncIterator[OperatorProcess]:  # noqa: F811
    """The operator, healthy and watching the emulated cluster; stopped (and checked) at teardown."""
    op = OperatorProcess()
    await op.start()
    try:
        yield op
    finally:
        await op.stop()


class WebhookReceiver:
    """A real HTTP server on 127.0.0.1 that records JSON POSTs and answers with scripted statuses."""

    def __init__(self) -> None:
        import http.server
        import json
        import threading

        self.calls: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.statuses: list[int] = []  # consumed one per request; 200 once empty
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                code = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.paths.append(self.path)
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                if code == 200:
                    receiver.calls.append(json.loads(body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/secret-token-123"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    try:
        yield receiver
    finally:
        receiver.close()
