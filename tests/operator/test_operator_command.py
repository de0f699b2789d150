"""`trainguard operator` as a process: kubeconfig login, liveness, metrics port; `trainguard crd` prints the CRD."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kube import (
    DEBUGJOB_RESOURCE,
    KubeEnv,
    debugjob_manifest,
    eventually,
    free_port,
    terminate,
    wait_http,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


async def test_operator_process_serves_liveness_and_metrics(kube: KubeEnv, tmp_path: Path) -> None:
    metrics_port, liveness_port = free_port(), free_port()
    log = (tmp_path / "operator.log").open("w")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainguard", "operator", "-A", f"--metrics-port={metrics_port}",
        "--metrics-address=127.0.0.1", f"--liveness=http://127.0.0.1:{liveness_port}/healthz",
        env={**os.environ, "KUBECONFIG": str(kube.kubeconfig)}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        await wait_http(f"http://127.0.0.1:{liveness_port}/healthz")
        await kube.create(DEBUGJOB_RESOURCE, debugjob_manifest("dj1", capture_uri=f"file://{tmp_path}/runs"))
        await eventually(
            lambda: kube.get("batch/v1/jobs", "default", "dj1"), timeout_seconds=30, what="the Job"
        )
        await kube.patch(DEBUGJOB_RESOURCE, "default", "dj1", {"status": {"reports": {"rank-00000": {
            "lastStep": 7, "rules": [{"name": "exploding_tensor", "state": "IssuesFound", "step": 7}]}}}},
            subresource="status")  # fmt: skip
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        want = 'trainguard_debugjob_phase{debugjob="dj1",namespace="default",phase="Stopped"} 1.0'

        async def scraped() -> str:
            deadline = time.monotonic() + 30
            while want not in (text := await wait_http(url)):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{want!r} never appeared in:\n{text}")
                await asyncio.sleep(0.1)
            return text

        text = await scraped()
        assert 'trainguard_operator_actions_total{action="stop"} 1.0' in text
        assert (
            'trainguard_debugjob_rules_triggered_total{debugjob="dj1",namespace="default",rule="exploding_tensor"} 1.0'
            in text
        )
        assert 'trainguard_debugjob_last_step{debugjob="dj1",namespace="default"} 7.0' in text
        assert (
            'trainguard_debugjob_condition{condition="Stopped",debugjob="dj1",namespace="default",status="True"} 1.0'
            in text
        )
    finally:
        await terminate(proc)
        log.close()
    assert proc.returncode == 0, (tmp_path / "operator.log").read_text()[-3000:]


def test_crd_command_prints_the_checked_in_crd() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trainguard", "crd"], capture_output=True, text=True, check=True
    )
    assert out.stdout == (ROOT / "crds" / "debugjob.yaml").read_text()


def test_worker_limit_and_idle_timeout_reach_kopf(kube: KubeEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """kopf's per-object workers are bounded (each may hold a TLS connection), and idle ones leave after 1 s."""
    import kopf

    from trainguard.operator import handlers
    from trainguard.operator.config import OperatorConfig

    monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig))
    settings = kopf.OperatorSettings()
    assert settings.queueing.worker_limit is None  # kopf's default: as many workers as objects
    memo = kopf.Memo(config=OperatorConfig(worker_limit=7))
    handlers.startup(settings=settings, memo=memo, logger=logging.getLogger("test"))
    try:
        assert settings.queueing.worker_limit == 7
        assert settings.queueing.idle_timeout == handlers.WORKER_IDLE_SECONDS == 1.0
    finally:
        handlers.shutdown(memo=memo)


def test_worker_limit_below_one_is_refused_with_the_setting_named(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trainguard", "operator", "--worker-limit=0", "--liveness=none"],
        check=False, capture_output=True, text=True, env={**os.environ, "KUBECONFIG": str(tmp_path / "none")},
    )  # fmt: skip
    assert out.returncode != 0
    assert "worker_limit" in out.stderr and "greater than or equal to 1" in out.stderr, out.stderr
