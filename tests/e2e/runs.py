"""Helpers of the end-to-end runs: submit a training DebugJob, follow its phase, read its run, check its end.

`PhaseLog` follows `kubectl get -w` so that every phase the DebugJob ever had is seen (a poll could
miss a short flicker). `check_stopped_once` checks a stop by its rule and its single action, whatever
notify rules also fired. `delete_and_check_nothing_is_left` deletes a DebugJob and waits until nothing
it owned is left.
"""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.conftest import SeaweedServer
from tests.e2e.cluster import Cluster, eventually
from tests.e2e.debugjobs import training_debugjob
from trainguard.store import run_format
from trainguard.store.backends import Store, open_store

OWNED = "jobs,pods,services,configmaps,serviceaccounts,roles,rolebindings"
TERMINAL = {"Succeeded", "Stopped", "Failed"}


@dataclass
class PhaseLog:
    """Every phase a DebugJob reported, in order, from a watch (`kubectl get -w`, started once it exists)."""

    process: subprocess.Popen[str]
    phases: list[str] = field(default_factory=list)
    thread: threading.Thread | None = None

    @classmethod
    def follow(cls, cluster: Cluster, namespace: str, name: str) -> PhaseLog:
        cmd = ["kubectl", "--kubeconfig", cluster.kubeconfig, "--cache-dir", str(cluster.kubectl_cache), "get",
               "debugjob", name, "-n", namespace, "-w", "--output-watch-events",
               "-o", "jsonpath={.object.status.phase}{\"\\n\"}"]  # fmt: skip
        log = cls(process=subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        log.thread = threading.Thread(target=log._read, daemon=True)
        log.thread.start()
        return log

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            phase = line.strip()
            if phase and (not self.phases or self.phases[-1] != phase):
                self.phases.append(phase)

    def stop(self) -> list[str]:
        self.process.terminate()
        self.process.wait(10)
        if self.thread is not None:
            self.thread.join(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.phases


@dataclass
class Run:
    """One submitted training DebugJob."""

    cluster: Cluster
    namespace: str
    name: str
    s3: SeaweedServer
    bucket: str

    def debugjob(self) -> dict[str, Any]:
        obj = self.cluster.debugjob(self.namespace, self.name)
        assert obj is not None, f"DebugJob {self.namespace}/{self.name} is gone"
        return obj

    def status(self) -> dict[str, Any]:
        return dict(self.debugjob().get("status") or {})

    def condition(self, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.status().get("conditions") or [] if c["type"] == kind), None)

    def wait_phase(self, *phases: str, timeout_seconds: float) -> dict[str, Any]:
        """Wait until the phase is one of `phases`; return the status."""
        return eventually(
            lambda: (s := self.status()).get("phase") in phases and s,
            timeout_seconds=timeout_seconds,
            what=f"DebugJob {self.name} in phase {' or '.join(phases)}",
        )

    def pods(self) -> list[dict[str, Any]]:
        return self.cluster.pods(self.namespace, self.name)

    def job(self) -> dict[str, Any] | None:
        return self.cluster.get(f"/apis/batch/v1/namespaces/{self.namespace}/jobs/{self.name}")

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.cluster.events(self.namespace, self.name) if e.get("reason") == reason]

    def store(self) -> Store:
        uid = self.debugjob()["metadata"]["uid"]
        return open_store(
            f"s3://{self.bucket}/runs/{self.namespace}/{self.name}/{uid}", client=self.s3.client()
        )

    def end(self, rank: int) -> dict[str, Any] | None:
        """The rank's END.json, or None while it has none."""
        store = self.store()
        try:
            doc: dict[str, Any] = json.loads(store.get(run_format.end_key(rank)))
        except Exception:  # noqa: BLE001 - missing (NotFound) reads as "not yet"
            return None
        return doc

    def logs(self) -> str:
        """Every container's log of every pod (for failure messages)."""
        out = []
        for pod in self.pods():
            name = pod["metadata"]["name"]
            proc = self.cluster.kubectl("logs", "-n", self.namespace, name, "--all-containers", "--prefix",
                                        "--tail=40", check=False)  # fmt: skip
            out.append(proc.stdout + proc.stderr)
        return "\n".join(out)


def submit(
    cluster: Cluster,
    namespace: str,
    name: str,
    *,
    s3: SeaweedServer,
    bucket: str | None = None,
    **kwargs: Any,
) -> Run:
    """Create a bucket and a training DebugJob writing to it; return the run."""
    bucket = bucket or s3.create_bucket()
    body = training_debugjob(name, namespace=namespace, bucket=bucket, endpoint=s3.endpoint_url, **kwargs)
    cluster.apply(body)
    return Run(cluster=cluster, namespace=namespace, name=name, s3=s3, bucket=bucket)


def webhook_secret(cluster: Cluster, namespace: str, url: str, name: str = "webhook") -> str:
    cluster.kubectl("create", "secret", "generic", name, "-n", namespace, f"--from-literal=url={url}")
    return name


def submit_diverging(
    cluster: Cluster, namespace: str, name: str, *, s3: SeaweedServer, webhook_url: str, **kwargs: Any
) -> Run:
    """Submit a run that diverges (NaN about 35 steps after `diverge_from`) and calls a webhook on actions."""
    secret = webhook_secret(cluster, namespace, webhook_url)
    kwargs.setdefault("grace_period_seconds", 15)
    return submit(
        cluster, namespace, name, s3=s3, mode="diverging", steps=5000, webhook_secret=secret, **kwargs
    )


STOP_RULE = "exploding_tensor"
"""The stop rule of `training_debugjob`'s default rules: the one a diverging trainer's NaN trips."""


def check_stopped_once(
    run: Run, webhook_calls: list[dict[str, Any]], *, rule: str = STOP_RULE, pods_gone_seconds: float = 90
) -> dict[str, Any]:
    """Check that the Stopped run names `rule` and was acted on once; return its status.

    The DebugJob names the stop rule (`triggeredRule`, the Stopped condition), its Job is suspended, every
    pod ends, and there is one Stopped Event and one stop webhook call, both for `rule`. The notify rules
    a diverging trainer also trips (their Events and webhook calls, in whatever order they came) are no
    part of it. Waits for the Event and the webhook call themselves, never for "some call".
    """
    status = run.status()
    assert status.get("phase") == "Stopped" and status.get("triggeredRule") == rule, status
    stopped = run.condition("Stopped")
    assert stopped is not None and stopped["status"] == "True" and stopped["reason"] == "RuleTriggered", (
        stopped
    )
    assert stopped["message"].startswith(f"rule {rule} found issues at step "), stopped
    job = run.job()
    assert job is not None and job["spec"]["suspend"] is True, "the stop suspends the Job"
    eventually(
        lambda: run.pods() == [] or None,
        timeout_seconds=pods_gone_seconds,
        what="every pod of the stopped Job gone",
    )
    events = eventually(lambda: run.events("Stopped"), timeout_seconds=30, what="the Stopped Event")
    assert len(events) == 1 and events[0].get("count") in (None, 1), events
    assert events[0]["type"] == "Warning" and f"rule {rule} found issues" in events[0]["message"], events

    def stops() -> list[dict[str, Any]]:
        return [
            call["event"]
            for call in webhook_calls
            if call["event"]["action"] == "stop" and call["event"]["debugjob"] == run.name
        ]

    calls = eventually(stops, timeout_seconds=60, what=f"the stop's webhook call for {run.name}")
    assert len(calls) == 1 and calls[0]["rule"] == rule and calls[0]["namespace"] == run.namespace, (
        webhook_calls
    )
    return status


def delete_and_check_nothing_is_left(run: Run, *, timeout_seconds: float = 120) -> None:
    """Delete the DebugJob; wait until it and everything it owned are gone (its run data in S3 stays)."""
    run.cluster.kubectl("delete", "debugjob", run.name, "-n", run.namespace, "--wait=false")
    eventually(
        lambda: run.cluster.debugjob(run.namespace, run.name) is None,
        timeout_seconds=timeout_seconds,
        what=f"DebugJob {run.name} gone (the operator removes its finalizer)",
    )

    def left() -> list[str]:
        out = run.cluster.kubectl("get", OWNED, "-n", run.namespace, "-l", f"trainguard.dev/debugjob={run.name}",
                                  "-o", "name").stdout.split()  # fmt: skip
        return out

    eventually(
        lambda: left() == [] or None, timeout_seconds=timeout_seconds, what="no object of the DebugJob left"
    )
