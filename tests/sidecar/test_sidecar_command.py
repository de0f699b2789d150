"""`trainguard sidecar --config FILE` as in a DebugJob pod: rank from the environment, status reports, stop file, SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, debugjob_manifest, eventually
from tests.sidecar.runs import RunBuilder, custom, start_pod
from trainguard.api import findings
from trainguard.api.enums import RuleCategory, RuleState, Severity
from trainguard.commands.sidecar import rank_from_env
from trainguard.errors import ConfigError
from trainguard.store.backends import open_store

REPO = Path(__file__).resolve().parents[2]


def _config(path: Path, **fields: Any) -> Path:
    doc = {
        "rules": [
            {"type": custom("NonFinite"), "name": "nan-guard", "action": "stop"},
            {"type": custom("StepLedger"), "name": "ledger"},
        ],
        "metrics_port": 0,
        "metrics_address": "127.0.0.1",
        "poll_interval_seconds": 0.05,
        **fields,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _get_json(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


async def _healthz(log: Path) -> tuple[int, dict[str, Any]]:
    """GET the sidecar's /healthz on the port its log line announced."""
    port = int(re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", log.read_text()).group(1))  # type: ignore[union-attr]
    return await asyncio.to_thread(_get_json, f"http://127.0.0.1:{port}/healthz")


async def _start_sidecar(config: Path, log: Path, kube: KubeEnv, **index: str) -> asyncio.subprocess.Process:
    """Start `trainguard sidecar` as in a pod: the pod index only from the variable given (RANK or JOB_COMPLETION_INDEX)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), KUBECONFIG=str(kube.kubeconfig), **index)
    for name in {"RANK", "JOB_COMPLETION_INDEX"} - set(index):
        env.pop(name, None)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "trainguard", "sidecar", "--config", str(config),
            stdout=out, stderr=asyncio.subprocess.STDOUT, env=env, cwd=str(REPO),
        )  # fmt: skip
    finally:
        os.close(out)


async def test_in_a_debugjob_pod_the_sidecar_reports_stops_and_serves_until_sigterm(
    kube: KubeEnv, file_uri: str, tmp_path: Path
) -> None:
    created = await kube.create(DEBUGJOB_RESOURCE, debugjob_manifest("train"))
    stop_file = start_pod(tmp_path / "shared")  # the sidecar starts before its pod's trainer writes
    b = RunBuilder(open_store(file_uri), rank=2)
    b.segment(range(5))
    b.segment(range(5, 10), nan_at=[8])
    b.end(last_step=9)
    config = _config(
        tmp_path / "sidecar.yaml",
        run_uri=file_uri,
        stop_file=str(stop_file),
        debugjob={"namespace": "default", "name": "train", "uid": created["metadata"]["uid"]},
    )
    log = tmp_path / "sidecar.log"
    proc = await _start_sidecar(config, log, kube, JOB_COMPLETION_INDEX="2")
    try:

        def report() -> dict[str, Any] | None:
            obj = kube.get(DEBUGJOB_RESOURCE, "default", "train") or {}
            rep = ((obj.get("status") or {}).get("reports") or {}).get("rank-00002")
            return rep if rep and rep.get("ended") else None

        rep = await eventually(report, timeout_seconds=30, what="an ended report of rank 2")
        states = {r["name"]: (r["state"], r.get("step")) for r in rep["rules"]}
        assert states == {"nan-guard": ("IssuesFound", 8), "ledger": ("NoIssuesFound", 9)}
        assert rep["lastStep"] == 9
        assert json.loads(stop_file.read_text())["rule"] == "nan-guard"

        status, health = await _healthz(log)
        assert status == 200 and health["rank"] == 2 and health["ended"] is True and health["last_step"] == 9
        assert proc.returncode is None  # a native sidecar keeps serving after the run ended
        verdicts = [
            json.loads(line)["verdict"]
            for line in log.read_text().splitlines()
            if line.startswith('{"verdict"')
        ]
        assert [(v["rule"], v["state"], v["action"]) for v in verdicts] == [
            ("nan-guard", "IssuesFound", "stop"),
            ("ledger", "NoIssuesFound", "none"),
        ]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_an_injected_sidecar_serves_its_verdicts_until_sigterm_after_the_run_ended(
    kube: KubeEnv, file_uri: str, tmp_path: Path
) -> None:
    # Attach mode: no DebugJob to report to; the operator reads /metrics. Exiting after the run ended would
    # have the kubelet restart the native sidecar, which fails the Job of an OnFailure pod (a JobSet's).
    stop_file = start_pod(tmp_path / "shared")
    b = RunBuilder(open_store(file_uri), rank=1)
    b.segment(range(5), nan_at=[3])
    b.end(last_step=4)
    config = _config(
        tmp_path / "sidecar.yaml", run_uri=file_uri, stop_file=str(stop_file), ranks_from_env=True
    )
    log = tmp_path / "sidecar.log"
    proc = await _start_sidecar(config, log, kube, RANK="1")
    try:

        def ended() -> dict[str, Any] | None:
            found = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", log.read_text())
            if found is None:
                return None  # not serving yet
            status, health = _get_json(f"http://127.0.0.1:{found.group(1)}/healthz")
            return health if status == 200 and health["ended"] else None

        health = await eventually(ended, timeout_seconds=30, what="the run ended")
        assert health["ranks"] == [1]
        await asyncio.sleep(1)  # an evaluator that exits when the run ended would be gone by now
        assert proc.returncode is None
        port = int(re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", log.read_text()).group(1))  # type: ignore[union-attr]
        page = await asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read()
        )
        assert re.search(rb'trainguard_rule_triggered\{[^}]*rule="nan-guard"[^}]*\} 1\.0', page), page[-2000:]
        # The findings document the operator's policy timer reads: what /metrics cannot carry.
        status, doc = await asyncio.to_thread(_get_json, f"http://127.0.0.1:{port}{findings.PATH}")
        document = findings.FindingsDocument.model_validate(doc)
        assert status == 200 and (document.kind, document.version) == (findings.KIND, findings.VERSION)
        assert (document.last_step, document.ranks, document.stop_watched) == (4, [1], False)
        (found,) = document.findings
        assert (found.rule, found.state, found.step, found.rank) == (
            "nan-guard",
            RuleState.ISSUES_FOUND,
            3,
            1,
        )
        assert (found.severity, found.category) == (Severity.CRITICAL, RuleCategory.WATCHPOINT)
        assert "NaN/Inf values at step 3" in found.message and found.message.endswith(
            "lower the learning rate"
        )
        assert file_uri not in json.dumps(doc), "the document carries findings, not the configuration"
        with pytest.raises(urllib.error.HTTPError) as missing:
            await asyncio.to_thread(urllib.request.urlopen, f"http://127.0.0.1:{port}/nothing")
        assert missing.value.code == 404 and findings.PATH.encode() in missing.value.read()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_with_several_processes_per_pod_the_sidecar_follows_its_nodes_global_ranks(
    kube: KubeEnv, file_uri: str, tmp_path: Path
) -> None:
    # torchrun on node 1 of 2 with 2 processes each: the pod's processes write ranks 2 and 3.
    created = await kube.create(DEBUGJOB_RESOURCE, debugjob_manifest("ddp"))
    stop_file = start_pod(tmp_path / "shared")
    store = open_store(file_uri)
    runs = {r: RunBuilder(store, rank=r, world_size=4) for r in range(4)}
    for r, b in runs.items():
        b.segment(range(5), nan_at=[4] if r == 3 else [])
        b.end(last_step=4)
    config = _config(
        tmp_path / "sidecar.yaml",
        run_uri=file_uri,
        stop_file=str(stop_file),
        ranks_per_pod=2,
        debugjob={"namespace": "default", "name": "ddp", "uid": created["metadata"]["uid"]},
    )
    log = tmp_path / "sidecar.log"
    proc = await _start_sidecar(config, log, kube, RANK="1")
    try:

        def reports() -> dict[str, Any] | None:
            obj = kube.get(DEBUGJOB_RESOURCE, "default", "ddp") or {}
            found = (obj.get("status") or {}).get("reports") or {}
            return (
                found
                if all((found.get(k) or {}).get("ended") for k in ("rank-00002", "rank-00003"))
                else None
            )

        found = await eventually(reports, timeout_seconds=30, what="ended reports of ranks 2 and 3")
        assert set(found) == {"rank-00002", "rank-00003"}, "each rank of the node, and only those"
        states = {
            key: {r["name"]: (r["state"], r.get("step")) for r in rep["rules"]} for key, rep in found.items()
        }
        assert states["rank-00003"] == {"nan-guard": ("IssuesFound", 4), "ledger": ("NoIssuesFound", 4)}
        assert states["rank-00002"] == {"nan-guard": ("NoIssuesFound", 4), "ledger": ("NoIssuesFound", 4)}
        assert json.loads(stop_file.read_text())["rule"] == "nan-guard"
        status, health = await _healthz(log)
        assert status == 200 and health["ranks"] == [2, 3] and health["ended"] is True
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_outside_kubernetes_the_sidecar_exits_when_the_run_ended(file_uri: str, tmp_path: Path) -> None:
    from trainguard.cli import main

    b = RunBuilder(open_store(file_uri))
    b.segment(range(5))
    b.end()
    config = _config(tmp_path / "sidecar.yaml", run_uri=file_uri, rank=0)
    assert main(["sidecar", "--config", str(config)]) == 0


def test_the_rank_comes_from_rank_or_the_job_completion_index() -> None:
    assert rank_from_env({"RANK": "3", "JOB_COMPLETION_INDEX": "5"}) == 3
    assert rank_from_env({"JOB_COMPLETION_INDEX": "5"}) == 5
    assert rank_from_env({}) is None
    with pytest.raises(ConfigError, match="RANK='x' is not a rank"):
        rank_from_env({"RANK": "x"})


def test_a_debugjob_config_without_any_rank_is_refused(
    file_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainguard.cli import main

    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("JOB_COMPLETION_INDEX", raising=False)
    config = _config(
        tmp_path / "sidecar.yaml", run_uri=file_uri, debugjob={"namespace": "default", "name": "x"}
    )
    assert main(["sidecar", "--config", str(config)]) == 2
