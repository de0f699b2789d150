"""A real Prometheus server for tests: static scrape jobs every second, optional rule files, HTTP queries.

Started on 127.0.0.1 on a free port with its own data directory, polled on `/-/ready` (never a fixed
sleep), stopped by its PID. The first scrape comes about 5 s after start (Prometheus throttles
target updates), so callers poll with `wait_for`. Blocking calls: from async tests, wrap them in
`asyncio.to_thread` so that a KMock on the event loop keeps serving.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from typing_extensions import Self

from tests.deploy.tooling import find_tool, free_port

READY_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True)
class ScrapeJob:
    """One static scrape job: its targets (host:port), target labels, and whether scraped labels win."""

    name: str
    targets: Sequence[str]
    labels: dict[str, str] = field(default_factory=dict)
    honor_labels: bool = False


class PrometheusServer:
    """A running `prometheus`; use as a context manager or call `stop()`."""

    def __init__(self, workdir: Path, *, jobs: Sequence[ScrapeJob], rule_files: Sequence[Path] = ()) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [
                {"job_name": job.name, "honor_labels": job.honor_labels,
                 "static_configs": [{"targets": list(job.targets), "labels": job.labels}]}
                for job in jobs
            ],
        }  # fmt: skip
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "prometheus.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [find_tool("prometheus"), f"--config.file={workdir / 'prometheus.yml'}",
                 f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"prometheus was not ready within {READY_TIMEOUT_SECONDS} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path> and return `data`; fail with Prometheus's error message."""
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as err:
            body = json.load(err)
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Return the result vector of an instant query."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", f"{expr!r} returned a {data['resultType']}"
        return list(data["result"])

    def wait_for(
        self,
        expr: str,
        *,
        until: Callable[[list[dict[str, Any]]], bool] = bool,
        timeout_seconds: float = 30.0,
    ) -> list[dict[str, Any]]:
        """Poll `expr` until `until(result)` holds and return the result; fail with the last one."""
        deadline = time.monotonic() + timeout_seconds
        while True:
            result = self.query(expr)
            if until(result):
                return result
            if time.monotonic() > deadline:
                targets = self.api("targets")["activeTargets"]
                health = [(t["labels"].get("job"), t["health"], t.get("lastError")) for t in targets]
                raise AssertionError(f"{expr!r} did not hold within {timeout_seconds} s; last result {result}; "
                                     f"targets {health}\n{self.log_tail(10)}")  # fmt: skip
            time.sleep(0.25)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
