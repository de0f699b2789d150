"""`trainguard run --metrics-port` serves the evaluator's Prometheus metrics while CMD runs."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from trainguard.local import supervise
from trainguard.sidecar import metrics

WAITING_SCRIPT = """
import os, time
import numpy as np
import trainguard
with trainguard.Recorder(flush_interval_seconds=0.2) as rec:
    for step in range(200):
        rec.record_tensor("fc.weight", np.full((4, 4), 0.5, np.float32), collection="weights")
        rec.record_scalar("loss", 1.0 / (step + 1))
        rec.step()
    rec.flush()
    while not os.path.exists("go"):   # keep running until the test has scraped
        time.sleep(0.05)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_metrics_are_served_while_the_command_runs_and_the_port_is_freed_after(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(WAITING_SCRIPT)
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainguard",
            "run",
            "--metrics-port",
            str(port),
            "--no-report",
            "--",
            sys.executable,
            "train.py",
        ],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        body = ""
        while time.monotonic() < deadline:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                body = ""
            if "trainguard_training_step 199.0" in body:
                break
            time.sleep(0.1)
        assert "trainguard_training_step 199.0" in body, body[-2000:]
        assert 'trainguard_rule_triggered{rule="exploding_tensor"} 0.0' in body
        health = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
        assert health.status == 200 and b'"last_step": 199' in health.read()
    finally:
        (tmp_path / "go").write_text("")
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", port))  # the server is gone with the run


def test_local_mode_registers_its_collector_for_the_run_and_unregisters_it_after(tmp_path: Path) -> None:
    # the caller owns the registry (the `trainguard run` command serves it); the supervisor registers a
    # collector over its evaluator while CMD runs and leaves the registry as it found it
    (tmp_path / "train.py").write_text(WAITING_SCRIPT)
    registry = CollectorRegistry()
    sup = supervise.Supervisor(
        [sys.executable, "train.py"],
        run_uri=f"file://{tmp_path}/run",
        cwd=str(tmp_path),
        registry=registry,
        progress=supervise.Progress(io.StringIO(), tty=False),
    )
    outcome: list[supervise.Outcome] = []
    thread = threading.Thread(target=lambda: outcome.append(sup.run()))
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and registry.get_sample_value("trainguard_training_step") != 199.0:
            time.sleep(0.1)
        assert registry.get_sample_value("trainguard_training_step") == 199.0
    finally:
        (tmp_path / "go").write_text("")
        thread.join(timeout=60)
    assert not thread.is_alive() and outcome[0].exit_code == 0
    assert registry.get_sample_value("trainguard_training_step") is None
    assert sup.evaluator is not None
    registry.register(metrics.EvaluatorCollector(sup.evaluator))  # registers again without a duplicate error
