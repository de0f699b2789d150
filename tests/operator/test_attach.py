"""Attach mode in the operator: a DebugPolicy's validation and status (KMock), blind workloads, and the pod
webhook served by `trainguard operator --attach` (a real HTTPS server answering AdmissionReviews, with the
workloads read into memory from the emulated API server by kopf's watches)."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from prometheus_client import CollectorRegistry

from tests.kube import KubeEnv, eventually, free_port, terminate, wait_http
from tests.operator.conftest import OperatorProcess, WebhookReceiver
from trainguard.api import debugjob, debugpolicy, findings
from trainguard.api.enums import Action, RuleCategory, Severity
from trainguard.operator import (
    actions,
    attach,
    build,
    client,
    delivery,
    inject,
    policy_status,
    status_decision,
    webhooks,
)
from trainguard.operator.metrics import OperatorMetrics
from trainguard.operator.workloads import batch_job, jobset, trainjob
from trainguard.sidecar.server import MetricsServer

NS = "ml"
POLICIES = f"{debugjob.GROUP}/{debugjob.VERSION}/{debugpolicy.PLURAL}"
JOBS = "batch/v1/jobs"
PODS = "v1/pods"
NOW = "2026-11-27T05:00:00Z"


def _policy_body(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": debugpolicy.API_VERSION, "kind": debugpolicy.KIND,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"capture": {"uri": "file:///tmp/runs"}, **spec},
    }  # fmt: skip


def _job(name: str, uid: str, labels: dict[str, str]) -> dict[str, Any]:
    """A Job; with uid "" the server gives it one (the caller copies it back)."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": labels, **({"uid": uid} if uid else {})},
            "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2}}  # fmt: skip


def _pod(job: dict[str, Any], index: int, *, injected: bool, phase: str = "Running") -> dict[str, Any]:
    meta = job["metadata"]
    annotations = {debugpolicy.INJECTED_ANNOTATION: "watch/1"} if injected else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{meta['name']}-{index}", "namespace": NS, "annotations": annotations,
        "labels": {batch_job.CONTROLLER_UID_LABEL: meta["uid"], "batch.kubernetes.io/job-completion-index": str(index),
                   debugpolicy.WATCH_LABEL: "true"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"], "controller": True}]},
        "spec": {"containers": [{"name": "train", "image": "trainer:1"}]}, "status": {"phase": phase}}  # fmt: skip


def test_a_workload_with_a_running_training_pod_without_the_evaluator_is_blind() -> None:
    job = _job("mnist", "j-uid", {"app": "mnist"})
    pods = [_pod(job, 0, injected=True), _pod(job, 1, injected=False)]
    status = policy_status.summarize(
        [policy_status.Observed(adapter=batch_job.KIND, obj=job, pods=pods)], [], now=NOW, generation=1
    )
    (entry,) = status.workloads
    assert (entry.kind, entry.name, entry.phase, entry.ranks_seen, entry.blind) == (
        "Job",
        "mnist",
        "Running",
        1,
        True,
    )
    assert (status.workload_count, status.blind_count) == (1, 1)
    blind = next(c for c in status.conditions if c.type == debugpolicy.PolicyConditionType.BLIND)
    assert blind.status == "True" and "Job mnist" in blind.message
    # A finished pod without the evaluator checks nothing any more: it no longer makes the workload blind.
    pods[1]["status"]["phase"] = "Succeeded"
    status = policy_status.summarize(
        [policy_status.Observed(adapter=batch_job.KIND, obj=job, pods=pods)],
        status.conditions,
        now=NOW,
        generation=1,
    )
    assert status.blind_count == 0 and status.workloads[0].ranks_seen == 1
    assert (
        next(c for c in status.conditions if c.type == debugpolicy.PolicyConditionType.BLIND).status
        == "False"
    )


def test_only_the_top_level_workload_counts() -> None:
    owned = {"metadata": {"ownerReferences": [
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "t", "controller": True}]}}  # fmt: skip
    assert not policy_status.is_top_level(owned, [jobset.KIND, trainjob.KIND])
    assert policy_status.is_top_level(owned, [jobset.KIND])  # TrainJobs not enabled: the JobSet is the top
    assert policy_status.is_top_level({"metadata": {}}, [jobset.KIND])


def test_the_index_keeps_no_pod_template() -> None:
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
          "metadata": {"name": "a", "namespace": NS, "uid": "u", "managedFields": [{"big": 1}]},
          "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {
              "parallelism": 4, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}]}}  # fmt: skip
    kept = attach.slim(js)
    assert "managedFields" not in kept["metadata"]
    assert kept["spec"]["replicatedJobs"][0]["template"]["spec"] == {
        "parallelism": 4,
        "template": {"spec": {}},
    }
    assert jobset.pods_per_job(kept["spec"]["replicatedJobs"][0]) == 4


async def test_observe_lists_the_selected_workloads_and_their_pods_through_the_api(kube: KubeEnv) -> None:
    selected, other = _job("mnist", "", {"app": "mnist"}), _job("web", "", {"app": "web"})
    for job in (selected, other):
        created = await kube.create(JOBS, {k: v for k, v in job.items() if k != "status"})
        job["metadata"]["uid"] = created["metadata"]["uid"]
    for pod in (
        _pod(selected, 0, injected=True),
        _pod(selected, 1, injected=False),
        _pod(other, 0, injected=False),
    ):
        await kube.create(PODS, pod)
    policy = inject.Policy.from_body(
        {
            **_policy_body("watch", selector={"matchLabels": {"app": "mnist"}}),
            "metadata": {"name": "watch", "namespace": NS},
        }
    )
    api = client.Kube.connect(pool_size=2)
    try:
        observed = await asyncio.to_thread(attach.observe, api, policy, [batch_job.KIND])
    finally:
        api.close()
    assert [(o.obj["metadata"]["name"], len(o.pods)) for o in observed] == [("mnist", 2)]
    status = policy_status.summarize(observed, [], now=NOW, generation=1)
    assert status.workloads[0].blind and status.workloads[0].ranks_seen == 1


async def test_an_invalid_policy_is_reported_and_a_valid_one_waits_for_attach_mode(
    kube: KubeEnv, operator_runner: OperatorProcess
) -> None:
    # The API server's CEL rules refuse this one first; the operator says the same for a CRD without them.
    await kube.create(POLICIES, _policy_body("both", selector={"matchLabels": {"a": "b"}},
                                             targetRef={"apiVersion": "batch/v1", "kind": "Job", "name": "j"}))  # fmt: skip
    await kube.create(POLICIES, _policy_body("fine", selector={"matchLabels": {"a": "b"}}))

    def condition(name: str, type: str) -> dict[str, Any] | None:
        obj = kube.get(POLICIES, NS, name) or {}
        return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type), None)

    invalid = await eventually(lambda: condition("both", "Invalid"), what="condition Invalid")
    assert invalid["status"] == "True" and "exactly one of spec.selector" in invalid["message"]
    assert condition("both", "Ready")["status"] == "False"  # type: ignore[index]
    ready = await eventually(lambda: condition("fine", "Ready"), what="condition Ready")
    assert ready["status"] == "False" and ready["reason"] == policy_status.REASON_ATTACH_DISABLED
    assert condition("fine", "Invalid") is None


def _certificate(directory: Path) -> None:
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-keyout", str(directory / attach.TLS_KEY), "-out", str(directory / attach.TLS_CERT)],
        check=True, capture_output=True,
    )  # fmt: skip


def _review(url: str, pod: dict[str, Any], *, ca: bytes | None = None) -> dict[str, Any]:
    """Send an AdmissionReview as the API server does; with `ca`, verify the server's certificate chain by it."""
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "req-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "namespace": NS, "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"}, "object": pod}}  # fmt: skip
    context = ssl.create_default_context(cadata=ca.decode() if ca else None)
    context.check_hostname = False  # the URL names 127.0.0.1; the host names are checked in test_webhook_cert
    context.verify_mode = ssl.CERT_REQUIRED if ca else ssl.CERT_NONE
    request = urllib.request.Request(
        url, data=json.dumps(review).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        response: dict[str, Any] = json.loads(answer.read())["response"]
    return response


WEBHOOK_CONFIGS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


async def _certificate_args(kube: KubeEnv, tmp_path: Path, source: str) -> list[str]:
    """The operator's certificate flags: a mounted certificate (cert-manager's), or its own self-signed one."""
    if source == "mounted":
        _certificate(tmp_path)
        return [f"--attach-cert-dir={tmp_path}"]
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
              "metadata": {"name": "tg-attach"}, "webhooks": [{"name": "pods.attach.trainguard.dev", "clientConfig": {
                  "service": {"name": "tg-webhook", "namespace": "tg", "path": f"/{attach.HANDLER_ID}"}}}]}  # fmt: skip
    async with kube.emulator.post(WEBHOOK_CONFIGS, json=config) as resp:
        assert resp.status < 400, await resp.text()
    return [f"--attach-cert-dir={tmp_path / 'certs'}", "--attach-cert-secret=tg/tg-webhook-tls",
            "--attach-service=tg-webhook", "--attach-webhook-config=tg-attach"]  # fmt: skip


def _trusted(kube: KubeEnv, source: str) -> bytes | None:
    """The CA bundle the API server would trust: the operator's own in its webhook configuration's caBundle."""
    if source == "mounted":
        return None
    config = kube.get("admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", None, "tg-attach")
    return base64.b64decode(config["webhooks"][0]["clientConfig"]["caBundle"]) if config else None


@pytest.mark.slow
@pytest.mark.parametrize("source", ["mounted", "operator"])
async def test_the_operator_serves_the_pod_webhook_from_memory(
    kube: KubeEnv, tmp_path: Path, source: str
) -> None:
    cert_args = await _certificate_args(kube, tmp_path, source)
    port, liveness = free_port(), free_port()
    job = _job("mnist", "", {"app": "mnist"})
    created = await kube.create(JOBS, job)
    job["metadata"]["uid"] = created["metadata"]["uid"]
    await kube.create(
        POLICIES, _policy_body("watch", selector={"matchLabels": {"app": "mnist"}}, containerName="train")
    )
    log = (tmp_path / "operator.log").open("w")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainguard", "operator", "-A", "--metrics-port=0", "--metrics-address=127.0.0.1",
        f"--liveness=http://127.0.0.1:{liveness}/healthz", "--attach", f"--attach-port={port}",
        *cert_args, "--workload-kind=jobSet",
        env={**os.environ, "KUBECONFIG": str(kube.kubeconfig)}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        await wait_http(f"http://127.0.0.1:{liveness}/healthz")
        url = f"https://127.0.0.1:{port}/{attach.HANDLER_ID}"
        pod = _pod(job, 1, injected=False)
        del pod["status"]

        response: dict[str, Any] = {}
        for _ in range(
            300
        ):  # the server listens once kopf has scanned the resources; the Job is indexed soon after
            try:
                response = await asyncio.to_thread(_review, url, pod, ca=_trusted(kube, source))
            except OSError:
                response = {}
            if response.get("patch"):
                break
            await asyncio.sleep(0.1)
        assert response["allowed"] is True and response["patchType"] == "JSONPatch"
        after = jsonpatch.apply_patch(pod, json.loads(base64.b64decode(response["patch"])))
        sidecar = after["spec"]["initContainers"][-1]
        assert sidecar["name"] == build.SIDECAR_NAME and {"name": "RANK", "value": "1"} in sidecar["env"]
        assert after["metadata"]["annotations"][debugpolicy.INJECTED_ANNOTATION] == "watch/1"
        # Re-invoked on the injected pod (another webhook changed it): nothing more to add.
        again = await asyncio.to_thread(_review, url, after, ca=_trusted(kube, source))
        assert again["allowed"] is True and "patch" not in again
        # The status: the policy is Ready, and its Job (the pod above was never created) has no blind pod.
        ready = await eventually(
            lambda: next((c for c in ((kube.get(POLICIES, NS, "watch") or {}).get("status") or {}).get("conditions")
                          or [] if c["type"] == "Ready" and c["status"] == "True"), None), what="Ready")  # fmt: skip
        assert ready["reason"] == policy_status.REASON_VALID
    finally:
        await terminate(proc)
        log.close()
    assert "Traceback" not in (tmp_path / "operator.log").read_text()


def _serve_evaluator(
    tmp_path: Path,
    *,
    nan_at: tuple[int, ...],
    stop_file: str | None = None,
    findings_endpoint: bool = True,
    address: str = "127.0.0.1",
    port: int = 0,
) -> tuple[MetricsServer, int]:
    """A real evaluator over a real run (NaN at `nan_at`), served as `trainguard sidecar` serves it; without
    `findings_endpoint`, as an evaluator older than /findings (its /metrics only)."""
    from tests.sidecar.runs import registered, write_run
    from trainguard.sidecar import findings as sidecar_findings
    from trainguard.sidecar.evaluator import Evaluator
    from trainguard.store.backends import open_store

    uri = f"file://{tmp_path}/run"
    write_run(open_store(uri), segments=2, nan_at=nan_at)
    registry = CollectorRegistry()
    ev = registered(Evaluator(uri, checkpoint=False, stop_file=stop_file), registry)
    while not ev.ended:
        ev.poll()
    documents = {findings.PATH: lambda: sidecar_findings.document_bytes(ev)} if findings_endpoint else {}
    server = MetricsServer(
        registry, health=lambda: (True, {}), documents=documents, address=address, port=port
    )
    return server, server.port


def _running(pod: dict[str, Any], ip: str = "127.0.0.1") -> dict[str, Any]:
    pod["status"] = {"phase": "Running", "podIP": ip}
    return pod


def _mnist_pod() -> dict[str, Any]:
    return _pod(_job("mnist", "j-uid", {}), 0, injected=True)


def test_the_operator_reads_a_real_evaluators_findings_document(tmp_path: Path) -> None:
    with _serve_evaluator(tmp_path, nan_at=(7,))[0] as server:
        scrape = attach.scrape_pod(_running(_mnist_pod()), port=server.port)
    assert scrape is not None and scrape.undetailed is None
    assert (scrape.step, scrape.triggered, scrape.stop_watched) == (9, frozenset({"exploding_tensor"}), False)
    (found,) = scrape.findings
    assert (found.rule, found.step, found.rank, found.severity, found.category) == (
        "exploding_tensor", 7, 0, Severity.CRITICAL, RuleCategory.NON_FINITE,
    )  # fmt: skip
    assert "NaN" in found.message and "at step 7 on rank 0" in found.message
    # A pod without an IP yet, or whose evaluator does not answer, is left out of the round.
    assert attach.scrape_pod(_mnist_pod(), port=server.port) is None
    assert attach.scrape_pod(_running(_mnist_pod()), port=server.port) is None


def test_an_evaluator_without_the_findings_endpoint_still_gives_the_rule_and_step_and_says_why(
    tmp_path: Path,
) -> None:
    with _serve_evaluator(tmp_path, nan_at=(7,), findings_endpoint=False)[0] as server:
        scrape = attach.scrape_pod(_running(_mnist_pod()), port=server.port)
    assert scrape is not None and scrape.findings == ()
    assert (scrape.step, scrape.triggered) == (9, frozenset({"exploding_tensor"}))
    assert scrape.undetailed == (
        "the evaluator of pod ml/mnist-0 serves no /findings (an image older than the operator's); its /metrics "
        "give the rule and the step only"
    )
    observed = policy_status.Observed(adapter=batch_job.KIND, obj=_job("mnist", "j-uid", {}), pods=[],
                                      scrapes=[scrape])  # fmt: skip
    entry = policy_status.workload_status(observed)
    assert (entry.rule, entry.finding_step, entry.rank, entry.severity) == ("exploding_tensor", 9, None, None)
    assert entry.message is not None and entry.message.startswith(
        "no details: the evaluator of pod ml/mnist-0"
    )


class _BrokenEvaluator:
    """An HTTP server whose /findings answers `body` and whose /metrics is a real evaluator's page."""

    def __init__(self, body: bytes, metrics_page: bytes) -> None:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                out = body if self.path == findings.PATH else metrics_page
                self.send_response(200)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _document(**fields: Any) -> bytes:
    return json.dumps({"kind": findings.KIND, "version": findings.VERSION, **fields}).encode()


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"<html>proxy error</html>", "a body that is not JSON"),
        (b"[1, 2]", "JSON that is not a TrainGuardFindings document"),
        (_document(version="v9"), "a TrainGuardFindings document of version 'v9'; this operator reads v1"),
        (_document(findings=[{"rule": "x", "message": "m" * 600}]),
         "an invalid TrainGuardFindings document (findings.0.message: String should have at most 512 characters)"),
        (_document(findings=[{"rule": "x", "message": "m" * 300}] * 8000), f"a document larger than {findings.MAX_BYTES} bytes"),
    ],
    ids=["not-json", "not-a-document", "other-version", "out-of-bounds", "oversized"],
)  # fmt: skip
def test_a_broken_findings_document_falls_back_to_the_metrics_and_says_why(
    tmp_path: Path, body: bytes, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    from prometheus_client import generate_latest

    with _serve_evaluator(tmp_path, nan_at=(7,))[0] as real:
        page = generate_latest(real.registry)
    broken = _BrokenEvaluator(body, page)
    try:
        scrape = attach.scrape_pod(_running(_mnist_pod()), port=broken.port)
    finally:
        broken.close()
    # Nothing lost: the rule and the step still come from /metrics, and the finding says why there is no more.
    assert scrape is not None and (scrape.step, scrape.triggered) == (9, frozenset({"exploding_tensor"}))
    assert scrape.undetailed is not None
    assert scrape.undetailed.startswith(f"the evaluator of pod ml/mnist-0 answered /findings with {why}")
    assert scrape.undetailed.endswith("; its /metrics give the rule and the step only")
    assert why in caplog.text


def test_the_verdict_follows_the_policys_actions() -> None:
    job = _job("mnist", "j-uid", {})
    found = policy_status.Scrape(
        step=12,
        triggered=frozenset({"exploding_tensor", "loss_not_decreasing"}),
        undetailed="an old evaluator",
    )
    observed = policy_status.Observed(adapter=batch_job.KIND, obj=job, pods=[], scrapes=[found])
    policy = inject.Policy.from_body({"metadata": {"name": "p", "namespace": NS}, "spec": {
        "capture": {"uri": "file:///r"}, "selector": {"matchLabels": {"a": "b"}},
        "rules": [{"type": "exploding_tensor", "action": "notify"}, {"type": "loss_not_decreasing", "action": "stop"}]}})  # fmt: skip
    actions = status_decision.rule_actions(policy.spec.rules)
    assert policy_status.verdict(observed, actions) == policy_status.Verdict(
        stop="loss_not_decreasing", notify=("exploding_tensor",)
    )
    # The default set (no rules listed): exploding_tensor stops; a suspended workload is not stopped again.
    defaults = status_decision.rule_actions([])
    assert policy_status.verdict(observed, defaults).stop == "exploding_tensor"
    job["spec"]["suspend"] = True
    assert policy_status.verdict(observed, defaults).stop is None
    entry = policy_status.workload_status(observed)
    assert (entry.rule, entry.step, entry.phase) == ("exploding_tensor", 12, "Suspended")


async def _stop_rounds(
    kube: KubeEnv, tmp_path: Path, *, stop_file: str | None = None, **actions: Any
) -> tuple[Any, Any, Any]:
    """A selected Job with one running injected pod whose real evaluator found a NaN at step 3, and a function
    that runs one round of the policy timer's work (observe, scrape, act) at a given Unix time."""
    job = _job("mnist", "", {"app": "mnist"})
    created = await kube.create(JOBS, job)
    job["metadata"]["uid"] = created["metadata"]["uid"]
    await kube.create(PODS, _running(_pod(job, 0, injected=True)))
    body = _policy_body("watch", selector={"matchLabels": {"app": "mnist"}}, actions=actions)
    policy = inject.Policy.from_body(body)
    server, port = _serve_evaluator(tmp_path, nan_at=(3,), stop_file=stop_file)
    api = client.Kube.connect(pool_size=2)
    acted = attach.Acted()

    def one_round(now: float) -> list[webhooks.RuleEvent]:
        observed = attach.observe(api, policy, [batch_job.KIND])
        observed = attach.with_scrapes(observed, lambda pod: attach.scrape_pod(pod, port=port))
        return attach.act(api, policy, observed, acted=acted, now=now)

    def close() -> None:
        api.close()
        server.close()

    return one_round, close, api


def _suspended(kube: KubeEnv) -> bool:
    stored = kube.get(JOBS, NS, "mnist")
    assert stored is not None
    return batch_job.KIND.is_suspended(stored)


async def test_a_stop_finding_suspends_the_top_level_workload_once(kube: KubeEnv, tmp_path: Path) -> None:
    one_round, close, _api = await _stop_rounds(kube, tmp_path)
    try:
        (event,) = await asyncio.to_thread(one_round, 1_000.0)
        assert (event.debugpolicy, event.workload, event.rule, event.action) == (
            "watch", webhooks.Workload(kind="Job", name="mnist"), "exploding_tensor", Action.STOP,
        )  # fmt: skip
        # What a DebugJob's finding carries: the finding's step and rank, severity, message (and the category).
        assert (event.step, event.rank, event.severity, event.category) == (
            3, 0, "critical", RuleCategory.NON_FINITE,
        )  # fmt: skip
        assert "NaN" in event.message and event.earlier_sign is None
        summary = webhooks.summary(event)
        assert summary.startswith(
            "DebugPolicy ml/watch: rule exploding_tensor found issues at step 3 on rank 0 in Job mnist: "
        )
        assert event.message in summary and summary.endswith("(the workload was suspended)")
        assert _suspended(kube)
        assert await asyncio.to_thread(one_round, 1_010.0) == []  # acted on once
    finally:
        close()


async def test_an_evaluator_that_does_not_answer_loses_nothing(kube: KubeEnv, tmp_path: Path) -> None:
    job = _job("mnist", "", {"app": "mnist"})
    job["metadata"]["uid"] = (await kube.create(JOBS, job))["metadata"]["uid"]
    await kube.create(PODS, _running(_pod(job, 0, injected=True)))
    policy = inject.Policy.from_body(_policy_body("watch", selector={"matchLabels": {"app": "mnist"}}))
    api = client.Kube.connect(pool_size=2)
    acted = attach.Acted()

    def one_round(port: int, now: float) -> list[webhooks.RuleEvent]:
        observed = attach.observe(api, policy, [batch_job.KIND])
        observed = attach.with_scrapes(observed, lambda pod: attach.scrape_pod(pod, port=port))
        return attach.act(api, policy, observed, acted=acted, now=now)

    try:
        # Nothing listens yet (the evaluator is still starting): the round skips the pod and acts on nothing.
        assert await asyncio.to_thread(one_round, free_port(), 1_000.0) == [] and not _suspended(kube)
        with _serve_evaluator(tmp_path, nan_at=(3,))[0] as server:
            (event,) = await asyncio.to_thread(one_round, server.port, 1_010.0)
        assert (event.rule, event.step, event.rank) == ("exploding_tensor", 3, 0) and _suspended(kube)
    finally:
        api.close()


async def test_a_stop_names_the_earlier_sign_another_evaluator_of_the_workload_found(kube: KubeEnv) -> None:
    job = _job("mnist", "", {"app": "mnist"})
    job["metadata"]["uid"] = (await kube.create(JOBS, job))["metadata"]["uid"]
    policy = inject.Policy.from_body(_policy_body("watch", selector={"matchLabels": {"app": "mnist"}}))

    def document(**fields: Any) -> policy_status.Scrape:
        return policy_status.from_document(findings.FindingsDocument.model_validate(fields))

    # Two pods' evaluators (as their /findings documents say): rank 1 saw the loss diverge at step 40, rank 0 the NaN
    # at step 52 (rank 1 too, later); an older evaluator on a third pod reports the NaN rule without details.
    spike = {"rule": "loss_spike", "step": 40, "rank": 1, "severity": "warning", "message": "loss jumped 9x"}
    scrapes = [
        document(last_step=60, findings=[{"rule": "exploding_tensor", "step": 52, "rank": 0, "severity": "critical",
                                          "message": "NaN in fc.weight", "category": "non-finite values"}]),
        document(last_step=60, findings=[spike, {"rule": "exploding_tensor", "step": 55, "rank": 1}]),
        policy_status.Scrape(step=60, triggered=frozenset({"exploding_tensor"}), undetailed="an old one"),
    ]  # fmt: skip
    api = client.Kube.connect(pool_size=2)
    try:
        observed = await asyncio.to_thread(attach.observe, api, policy, [batch_job.KIND])
        observed = [dataclasses.replace(o, scrapes=scrapes) for o in observed]
        events = await asyncio.to_thread(attach.act, api, policy, observed, acted=attach.Acted(), now=1_000.0)
    finally:
        api.close()
    stop, notice = sorted(events, key=lambda e: e.action.value, reverse=True)
    assert (stop.rule, stop.action, stop.step, stop.rank, stop.message) == (
        "exploding_tensor", Action.STOP, 52, 0, "NaN in fc.weight",
    )  # fmt: skip
    assert stop.earlier_sign == webhooks.EarlierSign(
        rule="loss_spike", step=40, rank=1, message="loss jumped 9x"
    )
    assert "; earlier sign: rule loss_spike at step 40 on rank 1" in webhooks.summary(stop)
    assert (notice.rule, notice.action, notice.severity, notice.earlier_sign) == (
        "loss_spike", Action.NOTIFY, "warning", None,
    )  # fmt: skip
    entry = policy_status.workload_status(observed[0])
    assert (entry.rule, entry.finding_step, entry.rank, entry.severity, entry.message) == (
        "loss_spike", 40, 1, Severity.WARNING, "loss jumped 9x",
    )  # fmt: skip


async def test_a_trainer_that_polls_the_stop_file_gets_the_cooperative_seconds_before_the_suspension(
    kube: KubeEnv, tmp_path: Path
) -> None:
    stop_file = tmp_path / "stop" / "STOP"
    stop_file.parent.mkdir()
    (tmp_path / "stop" / "STOP.watched").touch()  # what hook.should_stop() leaves on its first poll
    one_round, close, _api = await _stop_rounds(
        kube, tmp_path, stop_file=str(stop_file), stop={"cooperativeSeconds": 20}
    )
    try:
        (event,) = await asyncio.to_thread(one_round, 1_000.0)
        assert (
            event.suspend_in_seconds == 20
            and "is suspended in 20 s unless it ends first" in webhooks.summary(event)
        )
        assert stop_file.exists(), "the evaluator asked the trainer to stop at once"
        assert await asyncio.to_thread(one_round, 1_019.0) == [] and not _suspended(kube)
        assert await asyncio.to_thread(one_round, 1_020.0) == [] and _suspended(kube)
    finally:
        close()


async def test_a_trainer_that_does_not_poll_the_stop_file_is_suspended_at_once(
    kube: KubeEnv, tmp_path: Path
) -> None:
    stop_file = tmp_path / "STOP"  # no STOP.watched: the trainer never called should_stop()
    one_round, close, _api = await _stop_rounds(
        kube, tmp_path, stop_file=str(stop_file), stop={"cooperativeSeconds": 20}
    )
    try:
        (event,) = await asyncio.to_thread(one_round, 1_000.0)
        assert event.suspend_in_seconds is None and _suspended(kube)
    finally:
        close()


async def test_a_policys_findings_reach_its_webhooks_as_a_debugjobs_do(
    kube: KubeEnv, tmp_path: Path, webhook_receiver: WebhookReceiver
) -> None:
    await kube.create("v1/secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hooks", "namespace": NS},
                                     "data": {"url": base64.b64encode(webhook_receiver.url.encode()).decode()}})  # fmt: skip
    hooks = [{"name": "team", "format": "generic", "urlSecretRef": {"name": "hooks", "key": "url"}},
             {"name": "missing", "urlSecretRef": {"name": "nope", "key": "url"}}]  # fmt: skip
    one_round, close, api = await _stop_rounds(kube, tmp_path, notify={"webhooks": hooks})
    registry = CollectorRegistry()
    metrics = OperatorMetrics(registry)
    dispatcher = delivery.Dispatcher(delivery.Settings(base_backoff_seconds=0.01), metrics=metrics).start()
    emitted: list[dict[str, Any]] = []
    policy = inject.Policy.from_body(_policy_body("watch", selector={"matchLabels": {"app": "mnist"}},
                                                  actions={"notify": {"webhooks": hooks}}))  # fmt: skip
    reference = {"apiVersion": debugpolicy.API_VERSION, "kind": debugpolicy.KIND,
                 "metadata": {"name": "watch", "namespace": NS, "uid": "p-uid"}}  # fmt: skip
    try:
        (event,) = await asyncio.to_thread(one_round, 1_000.0)
        for _ in range(2):  # an operator restarted before it recorded the finding announces it again
            await asyncio.to_thread(
                actions.announce, api, body=reference, event=event, hooks=policy.spec.actions.notify.webhooks,
                metrics=metrics, emit=lambda body, **kw: emitted.append(kw), dispatcher=dispatcher,
            )  # fmt: skip
        await eventually(lambda: len(webhook_receiver.calls) == 2, what="two deliveries")
    finally:
        dispatcher.close()
        close()
    first, second = webhook_receiver.calls
    assert first == second, "the same transition, the same payload"
    assert first["event"]["debugpolicy"] == "watch" and first["event"]["debugjob"] is None
    assert first["event"]["workload"] == {"kind": "Job", "name": "mnist"}
    assert (
        first["idempotency_key"]
        == webhook_receiver.headers[0]["idempotency-key"]
        == webhooks.idempotency_key(event)
    )
    assert first["summary"].startswith("DebugPolicy ml/watch: rule exploding_tensor found issues")
    reasons = [e["reason"] for e in emitted]
    assert (
        reasons.count("Stopped") == 2 and reasons.count("WebhookFailed") == 2
    )  # the missing Secret, each time
    assert "secret-token-123" not in json.dumps(emitted)


def test_a_policys_idempotency_key_leaves_out_the_step_it_was_seen_at() -> None:
    def event(step: int, debugpolicy: str = "watch") -> webhooks.RuleEvent:
        return webhooks.RuleEvent(namespace=NS, debugpolicy=debugpolicy, workload=webhooks.Workload(kind="Job", name="a"),
                                  uid="w-uid", rule="nan", action=Action.STOP, step=step, time=NOW)  # fmt: skip

    # The evaluator's step moves on between rounds (and restarts): the finding stays the same transition.
    assert webhooks.idempotency_key(event(10)) == webhooks.idempotency_key(event(90))
    assert webhooks.idempotency_key(event(10)) != webhooks.idempotency_key(event(10, debugpolicy="other"))
    job_event = webhooks.RuleEvent(namespace=NS, debugjob="watch", uid="w-uid", rule="nan", action=Action.STOP,
                                   step=10, time=NOW)  # fmt: skip
    assert webhooks.idempotency_key(job_event) != webhooks.idempotency_key(event(10))


def test_the_operator_reads_the_metric_names_the_evaluator_serves() -> None:
    source = (Path(__file__).resolve().parents[2] / "trainguard" / "sidecar" / "metrics.py").read_text()
    for name in (policy_status.STEP_METRIC, policy_status.TRIGGERED_METRIC, policy_status.WATCHED_METRIC):
        assert f'"{name}"' in source


def _loopback_evaluator(tmp_path: Path) -> tuple[MetricsServer, str]:
    """A real evaluator (NaN at step 3) served on the injected sidecar's port, 9400, of a loopback address of its
    own (127.x.y.z: the operator reads `<podIP>:9400`, and 127.0.0.1:9400 may be taken on this machine)."""
    import random

    from trainguard.errors import ConfigError

    for _ in range(20):
        ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(1, 254)}"
        try:
            server, _port = _serve_evaluator(tmp_path, nan_at=(3,), address=ip, port=build.SIDECAR_PORT)
        except ConfigError:  # that address's port 9400 is taken: another one
            continue
        return server, ip
    raise AssertionError("no loopback address with port 9400 free")


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.mark.slow
async def test_an_attach_mode_operator_exports_its_policy_gauges_and_announces_findings_in_full(
    kube: KubeEnv, tmp_path: Path
) -> None:
    # The operator as `trainguard operator --attach` runs it; a policy selecting two Jobs: "mnist", whose pod runs
    # an injected evaluator that found a NaN (a stop rule), and "legacy", whose pod was admitted without it (blind).
    _certificate(tmp_path)
    evaluator, ip = await asyncio.to_thread(_loopback_evaluator, tmp_path)
    jobs = {}
    for name in ("mnist", "legacy"):
        job = _job(name, "", {"team": "vision"})
        job["metadata"]["uid"] = (await kube.create(JOBS, job))["metadata"]["uid"]
        jobs[name] = job
    await kube.create(PODS, _running(_pod(jobs["mnist"], 0, injected=True), ip=ip))
    await kube.create(PODS, _running(_pod(jobs["legacy"], 0, injected=False)))
    await kube.create(POLICIES, _policy_body("vision", selector={"matchLabels": {"team": "vision"}}))
    metrics_port, liveness = free_port(), free_port()
    log = (tmp_path / "operator.log").open("w")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainguard", "operator", "-A", f"--metrics-port={metrics_port}",
        "--metrics-address=127.0.0.1", f"--liveness=http://127.0.0.1:{liveness}/healthz", "--attach",
        f"--attach-port={free_port()}", f"--attach-cert-dir={tmp_path}",
        env={**os.environ, "KUBECONFIG": str(kube.kubeconfig)}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    labels = (("debugpolicy", "vision"), ("namespace", NS))
    try:
        await wait_http(f"http://127.0.0.1:{liveness}/healthz")

        async def gauges() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
            found = _samples(await wait_http(f"http://127.0.0.1:{metrics_port}/metrics"))
            return found if found.get(("trainguard_debugpolicy_stops_total", labels)) else None

        found = None
        for _ in range(300):  # the policy timer starts 5 s after the policy is seen, then runs every 10 s
            if (found := await gauges()) is not None:
                break
            await asyncio.sleep(0.1)
        assert found is not None, "trainguard_debugpolicy_stops_total never counted the stop"
        assert found[("trainguard_debugpolicy_workloads", labels)] == 2.0
        assert found[("trainguard_debugpolicy_blind_workloads", labels)] == 1.0
        assert found[("trainguard_debugpolicy_stops_total", labels)] == 1.0
        assert batch_job.KIND.is_suspended(kube.get(JOBS, NS, "mnist") or {})
        # The policy's status and its Event carry the finding as a DebugJob's do.
        status = await eventually(
            lambda: ((kube.get(POLICIES, NS, "vision") or {}).get("status") or {}).get("workloads"),
            what="workloads",
        )
        legacy, mnist = status  # blind ones first
        assert (legacy["name"], legacy["blind"], mnist["name"], mnist["blind"]) == (
            "legacy",
            True,
            "mnist",
            False,
        )
        assert (mnist["rule"], mnist["findingStep"], mnist["rank"], mnist["severity"]) == (
            "exploding_tensor", 3, 0, "critical",
        )  # fmt: skip
        assert "NaN" in mnist["message"]
        (stopped,) = await eventually(
            lambda: [e for e in kube.list("v1/events", NS) if e.get("reason") == "Stopped"],
            what="a Stopped Event",
        )
        assert stopped["message"].startswith(
            "DebugPolicy ml/vision: rule exploding_tensor found issues at step 3 on rank 0 in Job mnist: "
        )
        assert mnist["message"] in stopped["message"]
    finally:
        await terminate(proc)
        log.close()
        evaluator.close()
    assert "Traceback" not in (tmp_path / "operator.log").read_text()
