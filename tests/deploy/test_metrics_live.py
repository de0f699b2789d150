"""End to end on real parts: what the chart deploys, scraped by a real Prometheus with the chart's alerts.

- The operator runs as the chart's Deployment runs it (`trainguard` with the rendered args, only the
  ports moved to free ones on 127.0.0.1) against an emulated API server (KMock, `tests/kube.py`).
- A faulty numpy training script (`faulty_trainer.py`: NaN gradients from step 60) writes its run where
  the DebugJob "demo" captures to; the evaluator sidecar runs with the config the operator put into the
  DebugJob's ConfigMap, reports into the DebugJob's status, and the operator stops the Job.
- Prometheus scrapes both, labelled as the chart's PodMonitor/ServiceMonitor label them, and evaluates
  `charts/trainguard/files/alerts.yaml`.

Checked here: the rule-triggered, stopped and failed alerts fire for the right objects and not for
others; every metric named in the dashboards and alerts is in the live /metrics of the sidecar or the
operator, and every dashboard query returns data once its metrics have samples; the operator's API
requests use exactly the permissions of the chart's ClusterRole.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import kmock
import pytest
import pytest_asyncio
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.grafana import all_queries
from tests.deploy.prometheus import PrometheusServer, ScrapeJob
from tests.deploy.promql import grafana_to_promql, metric_names, selectors
from tests.deploy.tooling import ALERTS, ROOT, free_port, one, render
from tests.kube import (
    DEBUGJOB_RESOURCE,
    KubeEnv,
    RealisticEmulator,
    eventually,
    register_resources,
    write_kubeconfig,
)
from tests.sidecar.runs import start_pod
from trainguard.api import debugjob, debugpolicy

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

NAMESPACE = "ml"
JOBS = "batch/v1/jobs"
CONFIGMAPS = "v1/configmaps"
POLICIES = f"{debugjob.GROUP}/{debugjob.VERSION}/{debugpolicy.PLURAL}"
OPERATOR_TOKEN = "operator-token"
SIDECAR_TOKEN = "sidecar-token"
TRAINGUARD = str(Path(sys.executable).parent / "trainguard")
# What a PodMonitor/ServiceMonitor scrape adds; the dashboards' variables take these values.
EVALUATOR_LABELS = {"namespace": NAMESPACE, "debugjob": "demo", "pod": "demo-0"}
DASHBOARD_VARIABLES = {"namespace": NAMESPACE, "debugjob": "demo", "pod": "demo-0"}
NEVER_SAMPLED_HERE = {
    "trainguard_operator_reconcile_errors_total",
    "trainguard_debugpolicy_workloads",
    "trainguard_debugpolicy_blind_workloads",
    "trainguard_debugpolicy_stops_total",
}
"""Declared but without samples in this scenario: a counter whose children appear with the first handler error, and
attach mode's per-policy gauges, set by its resync only when the operator runs with `--attach` (this stack runs the
chart's default arguments; tests/operator/test_attach.py reads them from a running `trainguard operator --attach`
against KMock: `test_an_attach_mode_operator_exports_its_policy_gauges_and_announces_findings_in_full`)."""
VERBS = {
    kmock.action.FETCH: "get", kmock.action.LIST: "list", kmock.action.WATCH: "watch",
    kmock.action.CREATE: "create", kmock.action.UPDATE: "patch", kmock.action.DELETE: "delete",
}  # fmt: skip


class RecordingEmulator(RealisticEmulator):
    """The emulated API server, also logging (bearer token, group, resource[/subresource], verb) per request."""

    api_log: list[tuple[str, str, str, str]]

    async def _handle(self, request: Any) -> Any:
        if request.resource is not None and request.resource.plural and request.action in VERBS:
            token = str(request.headers.get("Authorization", "")).removeprefix("Bearer ")
            resource = request.resource.plural + (f"/{request.subresource}" if request.subresource else "")
            self.api_log.append((token, request.resource.group or "", resource, VERBS[request.action]))
        return await super()._handle(request)


class WebhookReceiver:
    """A plain HTTP server on 127.0.0.1 that keeps the JSON bodies POSTed to it."""

    def __init__(self) -> None:
        received: list[dict[str, Any]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.received = received
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclasses.dataclass
class Stack:
    kube: KubeEnv
    emulator: RecordingEmulator
    prometheus: PrometheusServer
    operator_metrics_url: str
    sidecar_url: str
    webhook: WebhookReceiver


def _kubeconfig(path: Path, url: str, token: str) -> Path:
    write_kubeconfig(path, server_url=url, namespace=NAMESPACE)
    config = json.loads(path.read_text())
    config["users"][0]["user"]["token"] = token
    path.write_text(json.dumps(config))
    return path


def _start(args: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(args, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


async def _until_serving(
    url: str, proc: subprocess.Popen[bytes], log: Path, *, timeout_seconds: float = 30
) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not await asyncio.to_thread(_http_ok, url):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{url} never answered (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
        await asyncio.sleep(0.1)


def _operator_args(*, metrics_port: int, liveness_port: int) -> list[str]:
    """The operator container's args from the chart, ports moved to free ones on 127.0.0.1."""
    (container,) = one(render(), "Deployment")["spec"]["template"]["spec"]["containers"]
    args = []
    for arg in container["args"]:
        if arg.startswith("--metrics-port="):
            arg = f"--metrics-port={metrics_port}"
        elif arg.startswith("--liveness="):
            arg = f"--liveness=http://127.0.0.1:{liveness_port}/healthz"
        args.append(arg)
    return [*args, "--metrics-address=127.0.0.1"]


def _debugjob(name: str, *, capture_root: str, rules: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainguard.dev/v1alpha1", "kind": "DebugJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "workers": 1,
            "template": {"spec": {"containers": [{"name": "trainer", "image": "python:3.11-slim",
                                                  "command": ["python", "tests/deploy/faulty_trainer.py"]}]}},
            "capture": {"uri": capture_root},
            "rules": rules,
            **spec,
        },
    }  # fmt: skip


def _phase(kube: KubeEnv, name: str) -> str | None:
    obj = kube.get(DEBUGJOB_RESOURCE, NAMESPACE, name) or {}
    return (obj.get("status") or {}).get("phase")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    tmp = tmp_path_factory.mktemp("live")
    procs: list[subprocess.Popen[bytes]] = []
    async with contextlib.AsyncExitStack() as exits:
        emulator = RecordingEmulator()
        emulator.api_log = []
        await exits.enter_async_context(emulator)
        await exits.enter_async_context(kmock.Server(emulator, host="127.0.0.1"))
        register_resources(emulator)
        url = str(emulator.url).rstrip("/")
        kube = KubeEnv(emulator=emulator, url=url, kubeconfig=_kubeconfig(tmp / "test.kubeconfig", url, "test-token"),
                       kubectl_cache_dir=tmp)  # fmt: skip
        webhook = WebhookReceiver()
        exits.callback(webhook.close)
        exits.callback(lambda: [_stop(p) for p in reversed(procs)])

        # The operator, started with the chart's args.
        metrics_port, liveness_port = free_port(), free_port()
        log = tmp / "operator.log"
        procs.append(
            _start(
                [TRAINGUARD, *_operator_args(metrics_port=metrics_port, liveness_port=liveness_port)],
                env={"KUBECONFIG": str(_kubeconfig(tmp / "op.kubeconfig", url, OPERATOR_TOKEN))},
                log=log,
            )
        )
        await _until_serving(f"http://127.0.0.1:{liveness_port}/healthz", procs[-1], log)

        # DebugJobs: "demo" is evaluated (stop + notify with a webhook), "crash" fails, "steady" runs and gets
        # its rules changed, "gone" is deleted.
        root = f"file://{tmp / 'runs'}"
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hooks", "namespace": NAMESPACE},
                  "data": {"url": base64.b64encode(webhook.url.encode()).decode()}}  # fmt: skip
        await kube.create("v1/secrets", secret)
        nan_rules = [{"type": "exploding_tensor", "action": "stop"},
                     {"type": "exploding_tensor", "name": "nan-notice", "action": "notify"}]  # fmt: skip
        hooks = {"notify": {"webhooks": [{"name": "team", "urlSecretRef": {"name": "hooks", "key": "url"}}]}}
        await kube.create(
            DEBUGJOB_RESOURCE, _debugjob("demo", capture_root=root, rules=nan_rules, actions=hooks)
        )
        for name in ("crash", "steady", "gone"):
            await kube.create(
                DEBUGJOB_RESOURCE, _debugjob(name, capture_root=root, rules=[{"type": "overtraining"}])
            )
        # A DebugPolicy: with attach mode off (the chart's default) the operator still validates it and says so in
        # its status, with the permissions the chart always grants for policies.
        await kube.create(POLICIES, {"apiVersion": debugpolicy.API_VERSION, "kind": debugpolicy.KIND,
                                     "metadata": {"name": "watch", "namespace": NAMESPACE},
                                     "spec": {"capture": {"uri": root}, "selector": {"matchLabels": {"team": "ml"}}}})  # fmt: skip
        for name in ("demo", "crash", "steady", "gone"):
            await eventually(lambda n=name: kube.get(JOBS, NAMESPACE, n), what=f"the Job of {name}")
        await eventually(
            lambda: (kube.get(POLICIES, NAMESPACE, "watch") or {}).get("status"), what="watch's status"
        )
        for name in ("demo", "steady"):
            await kube.patch(
                JOBS, NAMESPACE, name, {"status": {"active": 1, "ready": 1}}, subresource="status"
            )
        await kube.patch(JOBS, NAMESPACE, "crash", {"status": {"failed": 1, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "rank 0 exited 1"}]}},
            subresource="status")  # fmt: skip
        config_map = await eventually(lambda: kube.get(CONFIGMAPS, NAMESPACE, "steady-trainguard")
                                      or kube.get(CONFIGMAPS, NAMESPACE, "steady"), what="steady's ConfigMap")  # fmt: skip
        await kube.patch(DEBUGJOB_RESOURCE, NAMESPACE, "steady", {"spec": {"rules": [{"type": "overfit"}]}})
        await eventually(lambda: (kube.get(CONFIGMAPS, NAMESPACE, config_map["metadata"]["name"]) or {}).get("data")
                         != config_map["data"], what="steady's ConfigMap updated")  # fmt: skip
        await kube.delete(DEBUGJOB_RESOURCE, NAMESPACE, "gone")
        await eventually(lambda: kube.get(DEBUGJOB_RESOURCE, NAMESPACE, "gone") is None, what="gone deleted")

        # The faulty run, written where the demo pod's trainer would write it, and the demo pod's sidecar.
        demo_map = await eventually(
            lambda: next((c for c in kube.list(CONFIGMAPS, NAMESPACE)
                          if c["metadata"].get("labels", {}).get("trainguard.dev/debugjob") == "demo"), None),
            what="demo's ConfigMap")  # fmt: skip
        sidecar = yaml.safe_load(demo_map["data"]["sidecar.yaml"])
        stop_file = start_pod(tmp)  # the pod's sidecar starts before its trainer
        trainer = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "tests" / "deploy" / "faulty_trainer.py"), "120",
            env={**os.environ, "TRAINGUARD_OUT": sidecar["run_uri"], "RANK": "0", "WORLD_SIZE": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)  # fmt: skip
        out, _ = await trainer.communicate()
        assert trainer.returncode == 0, out.decode()
        sidecar_port = free_port()
        sidecar.update(metrics_port=sidecar_port, metrics_address="127.0.0.1", stop_file=str(stop_file))
        (tmp / "sidecar.yaml").write_text(yaml.safe_dump(sidecar))
        log = tmp / "sidecar.log"
        procs.append(
            _start(
                [TRAINGUARD, "sidecar", "--config", str(tmp / "sidecar.yaml")],
                log=log,
                env={
                    "KUBECONFIG": str(_kubeconfig(tmp / "sidecar.kubeconfig", url, SIDECAR_TOKEN)),
                    "JOB_COMPLETION_INDEX": "0",
                },
            )
        )
        sidecar_url = f"http://127.0.0.1:{sidecar_port}"
        await _until_serving(f"{sidecar_url}/healthz", procs[-1], log)

        prometheus = await asyncio.to_thread(PrometheusServer, tmp / "prometheus", rule_files=[ALERTS], jobs=[
            ScrapeJob("trainguard-operator", [f"127.0.0.1:{metrics_port}"], honor_labels=True),
            ScrapeJob("trainguard-evaluator", [f"127.0.0.1:{sidecar_port}"], labels=EVALUATOR_LABELS),
        ])  # fmt: skip
        exits.callback(prometheus.stop)
        yield Stack(kube=kube, emulator=emulator, prometheus=prometheus, webhook=webhook,
                    operator_metrics_url=f"http://127.0.0.1:{metrics_port}/metrics", sidecar_url=sidecar_url)  # fmt: skip


async def _wait(
    stack: Stack, expr: str, until: Callable[[list[dict[str, Any]]], bool] = bool
) -> list[dict[str, Any]]:
    return await asyncio.to_thread(stack.prometheus.wait_for, expr, until=until, timeout_seconds=45)


def _firing(alert: str) -> str:
    return f'ALERTS{{alertname="{alert}", alertstate="firing"}}'


async def test_the_rule_triggered_alert_fires_for_the_scraped_evaluator(stack: Stack) -> None:
    firing = await _wait(stack, _firing("TrainGuardRuleTriggered"))
    assert {(a["metric"]["rule"], a["metric"]["debugjob"], a["metric"]["pod"]) for a in firing} == {
        ("exploding_tensor", "demo", "demo-0"),
        ("nan-notice", "demo", "demo-0"),
    }
    # The alert's expression itself, as Grafana or a person would run it.
    (rule_file,) = [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]
                    if r.get("alert") == "TrainGuardRuleTriggered"]  # fmt: skip
    assert len(await asyncio.to_thread(stack.prometheus.query, rule_file["expr"])) == 2


async def test_the_sidecar_report_stops_the_debugjob_and_the_stopped_alert_fires(stack: Stack) -> None:
    await eventually(lambda: _phase(stack.kube, "demo") == "Stopped", timeout_seconds=30, what="demo Stopped")
    assert (stack.kube.get(JOBS, NAMESPACE, "demo") or {})["spec"]["suspend"] is True
    firing = await _wait(stack, _firing("TrainGuardDebugJobStopped"))
    assert [(a["metric"]["namespace"], a["metric"]["debugjob"]) for a in firing] == [(NAMESPACE, "demo")]
    # Both rules' transitions reach the webhook: the stop and the notify one.
    rules = lambda: {hook["event"]["rule"] for hook in stack.webhook.received}
    await eventually(lambda: rules() == {"exploding_tensor", "nan-notice"}, what="webhooks for both rules")


async def test_the_failed_alert_fires_only_for_the_failed_debugjob(stack: Stack) -> None:
    await eventually(lambda: _phase(stack.kube, "crash") == "Failed", timeout_seconds=30, what="crash Failed")
    firing = await _wait(stack, _firing("TrainGuardDebugJobFailed"))
    assert [(a["metric"]["namespace"], a["metric"]["debugjob"]) for a in firing] == [(NAMESPACE, "crash")]
    running = await _wait(stack, 'trainguard_debugjob_phase{phase="Running"} == 1')
    assert {a["metric"]["debugjob"] for a in running} == {"steady"}
    # "gone" was deleted: its series went with it (the operator's collector forgets deleted objects).
    assert not await asyncio.to_thread(stack.prometheus.query, 'trainguard_debugjob_phase{debugjob="gone"}')


def _exposition(url: str) -> tuple[set[str], set[str]]:
    """Return (every metric name a /metrics declares, the names that have samples) from the live text."""
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    declared: set[str] = set()
    sampled: set[str] = set()
    for family in text_string_to_metric_families(text):
        suffixes = {
            "counter": ["_total"],
            "histogram": ["_bucket", "_sum", "_count"],
            "summary": ["_sum", "_count"],
        }
        declared.update(family.name + s for s in suffixes.get(family.type, [""]))
        sampled.update(s.name for s in family.samples)
    return declared, sampled


async def _live_names(stack: Stack) -> tuple[set[str], set[str]]:
    await _wait(stack, "up == 1", until=lambda r: len(r) == 2)
    op = await asyncio.to_thread(_exposition, stack.operator_metrics_url)
    ev = await asyncio.to_thread(_exposition, f"{stack.sidecar_url}/metrics")
    return op[0] | ev[0] | {"up"}, op[1] | ev[1] | {"up"}


def _alert_exprs() -> list[str]:
    return [r["expr"] for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]


async def test_every_metric_in_dashboards_and_alerts_is_exported_live(stack: Stack) -> None:
    declared, _ = await _live_names(stack)
    used = {name for expr in _alert_exprs() + all_queries() for name in metric_names(grafana_to_promql(expr))}
    assert len(used) >= 20
    assert not used - declared, f"names no exporter declares: {sorted(used - declared)}"


def _substitute(expr: str) -> str:
    for name in ("$__rate_interval", "$__interval", "$__range"):
        expr = expr.replace(name, "1m")
    for name, value in DASHBOARD_VARIABLES.items():
        expr = re.sub(rf"\$\{{?{name}\}}?", value, expr)
    return expr


async def test_every_dashboard_query_returns_data_when_its_metrics_have_samples(stack: Stack) -> None:
    _, sampled = await _live_names(stack)
    # Rates need two samples in their window, and the demo DebugJob must have been stopped.
    await _wait(stack, "rate(trainguard_sidecar_read_bytes_total[1m]) >= 0")
    await eventually(lambda: _phase(stack.kube, "demo") == "Stopped", timeout_seconds=30, what="demo Stopped")
    await _wait(stack, 'trainguard_debugjob_phase{debugjob="demo", phase="Stopped"} == 1')
    empty = []
    for expr in all_queries():
        query = _substitute(expr)
        unsampled = {sel.split("{", 1)[0] for sel in selectors(query)} - sampled
        if unsampled:
            assert unsampled <= NEVER_SAMPLED_HERE, f"{query}: no samples of {unsampled} in this scenario"
            continue
        try:  # a counter that appeared a moment ago needs a second sample before increase() has one
            await asyncio.to_thread(stack.prometheus.wait_for, query, timeout_seconds=15)
        except AssertionError:
            empty.append(query)
    assert not empty, "dashboard queries without data:\n" + "\n".join(empty)


def _permissions(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    """Return a Role's or ClusterRole's (apiGroup, resource, verb) triples."""
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}  # fmt: skip


async def test_the_operator_uses_exactly_the_permissions_its_cluster_role_grants(stack: Stack) -> None:
    await eventually(lambda: _phase(stack.kube, "demo") == "Stopped", timeout_seconds=30, what="demo Stopped")
    roles = {r["metadata"]["name"]: r for r in render() if r["kind"] == "ClusterRole"}
    granted = _permissions(roles["tg-trainguard"])
    granted_crds = _permissions(roles["tg-trainguard-crds"])
    used = {
        (group, resource, verb)
        for token, group, resource, verb in stack.emulator.api_log
        if token == OPERATOR_TOKEN
    }
    assert not used - granted - granted_crds, (
        f"the operator used permissions the chart does not grant: {used - granted}"
    )
    # Granted but not seen: only `get` on debugjobs and their status, which the operator needs in order to grant
    # them to each DebugJob's sidecar Role (RBAC forbids granting what one does not hold).
    escalation_only = {("trainguard.dev", "debugjobs", "get"), ("trainguard.dev", "debugjobs/status", "get")}
    # ... and Kueue's Workloads, used only where Kueue runs (this stack has none): tests/e2e/test_kueue.py
    # stops a queued Job through them on the real cluster, with these permissions and no more.
    kueue_only = {("kueue.x-k8s.io", "workloads", "list"), ("kueue.x-k8s.io", "workloads", "patch")}
    unused = granted - used
    assert unused == (escalation_only | kueue_only) - used, f"granted but never used: {sorted(unused)}"
    # ... and indeed every sidecar Role the operator created stays within what it holds.
    for sidecar_role in stack.kube.list("rbac.authorization.k8s.io/v1/roles", NAMESPACE):
        assert _permissions(sidecar_role) <= granted, (
            f"{sidecar_role['metadata']['name']} grants more than the operator holds"
        )
    assert {
        ("apiextensions.k8s.io", "customresourcedefinitions", v) for v in ("list", "watch")
    } <= used | granted_crds
