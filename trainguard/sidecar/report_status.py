"""Reports the rule statuses of a pod's ranks into its DebugJob's status subresource.

Used by `trainguard sidecar` when the config names a DebugJob. Each followed rank has its own key,
`status.reports.rank-NNNNN`, and a pod writes only the keys of its own ranks (all of them in one
JSON merge patch), so ranks never overwrite each other; the
operator aggregates the reports and decides what to do from the DebugJob's own spec. A report is
sent at once after each verdict transition and otherwise at most every `interval_seconds` while
the last step moves (a heartbeat). The report is rebuilt from the evaluator's current state each
time, so a report lost to a crash or an API error is repaired by the next one. The official
`kubernetes` client is configured at call time (`custom_objects_api`): on a cluster from the
projected token the operator mounts into the sidecar alone.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from trainguard.api import debugjob
from trainguard.api.sidecar_config import DebugJobRef
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.verdicts import Verdict
from trainguard.stop_flag import watched

log = logging.getLogger(__name__)

REPORT_INTERVAL_SECONDS = 10.0
"""Heartbeat: the longest a moving lastStep goes unreported. One small PATCH per rank every 10 s
keeps `kubectl get debugjobs` current without loading the API server."""


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rank_key(rank: int) -> str:
    """The key of one rank in `status.reports`, e.g. `rank-00003`."""
    return f"rank-{rank:05d}"


def build_report(evaluator: Evaluator, *, now: float, rank: int | None = None) -> dict[str, Any]:
    """Return one rank's report (`debugjob.RankReport` as JSON): lastStep, time, ended, one entry per rule.

    With `rank`, the states, last step and end of that followed rank; without, the evaluator's
    states over every rank it follows.
    """
    if rank is None:
        last_step, ended, statuses = evaluator.last_step, evaluator.ended, evaluator.rule_status
    else:
        (last_step, ended), statuses = evaluator.rank_progress(rank), evaluator.rank_status(rank)
    report = debugjob.RankReport(
        last_step=last_step,
        time=_iso(now),
        ended=ended,
        stop_watched=bool(evaluator.stop_file and watched(evaluator.stop_file)),
        rules=[
            debugjob.RankRuleReport(
                name=name,
                state=status.state,
                step=status.step,
                severity=status.severity,
                message=status.message,
                time=_iso(status.time),
            )
            for name, status in statuses.items()
        ],
    )
    doc: dict[str, Any] = report.model_dump(mode="json", by_alias=True, exclude_none=True)
    return doc


def reports_patch(reports: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Return the merge patch that sets these ranks' reports and leaves every other key alone."""
    return {"status": {"reports": {rank_key(rank): report for rank, report in sorted(reports.items())}}}


def custom_objects_api(service_account_dir: str | None = None) -> Any:
    """Return a CustomObjectsApi configured now (not at import).

    In order: `KUBECONFIG` when set (tests, local runs); the token and CA in `service_account_dir`
    (the projected token the operator mounts into the sidecar alone, re-read as the kubelet rotates
    it); the standard in-cluster path; `~/.kube/config`.
    """
    from kubernetes import client, config
    from kubernetes.config import incluster_config

    configuration = client.Configuration()
    kubeconfig = os.environ.get("KUBECONFIG")
    if kubeconfig:
        config.load_kube_config(
            config_file=kubeconfig, client_configuration=configuration, persist_config=False
        )
    elif service_account_dir:
        incluster_config.InClusterConfigLoader(
            token_filename=os.path.join(service_account_dir, "token"),
            cert_filename=os.path.join(service_account_dir, "ca.crt"),
            try_refresh_token=True,
        ).load_and_set(configuration)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(client_configuration=configuration, persist_config=False)
    return client.CustomObjectsApi(client.ApiClient(configuration))


class StatusReporter:
    """Sends the reports of the followed ranks on each verdict and as a heartbeat, from its own thread."""

    def __init__(
        self,
        ref: DebugJobRef,
        *,
        rank: int | None = None,
        ranks: Sequence[int] | None = None,
        evaluator: Evaluator,
        interval_seconds: float = REPORT_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if (rank is None) == (ranks is None) or ranks == []:
            raise ValueError("pass the rank or the ranks to report")
        self.ref = ref
        self.ranks: tuple[int, ...] = (rank,) if rank is not None else tuple(sorted(set(ranks or ())))
        self.evaluator = evaluator
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.reports_sent = 0
        self.last_error: str | None = None
        self._api: Any = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.refused: str | None = None
        """Why this reporter will not report (the DebugJob was recreated), else None."""
        self._sent_states: tuple[Any, ...] | None = None
        self._sent_step: int | None = None
        self._sent_at = float("-inf")
        self._thread: threading.Thread | None = None

    def on_verdict(self, verdict: Verdict) -> None:
        """Ask for a report now (called for each transition; the report itself runs on the thread)."""
        self._wake.set()

    def report(self, *, force: bool = False) -> bool:
        """Send the report if a rule's state changed, if `force`, or when the heartbeat is due; return whether sent.

        The heartbeat is due when `interval_seconds` passed since the last report and lastStep moved.
        """
        if self.refused is not None:
            return False
        now = self.clock()
        states = tuple(
            (
                tuple((n, s.state, s.step) for n, s in self.evaluator.rank_status(r).items()),
                self.evaluator.rank_progress(r)[1],
            )
            for r in self.ranks
        )
        last_step = self.evaluator.last_step
        changed = states != self._sent_states
        due = now - self._sent_at >= self.interval_seconds and last_step != self._sent_step
        if not (force or changed or due):
            return False
        body = reports_patch({r: build_report(self.evaluator, now=now, rank=r) for r in self.ranks})
        try:
            api = self._connect()
            if api is None:
                return False
            api.patch_namespaced_custom_object_status(
                debugjob.GROUP, debugjob.VERSION, self.ref.namespace, debugjob.PLURAL, self.ref.name, body,
                _content_type="application/merge-patch+json",
            )  # fmt: skip
        except Exception as err:  # noqa: BLE001 - API, network or config failures: logged, retried at the next report
            self._failed(err)
            return False
        self.last_error = None
        self._sent_states, self._sent_step, self._sent_at = states, last_step, now
        self.reports_sent += 1
        return True

    def _connect(self) -> Any:
        """Return the API client; the first time, check that the DebugJob is the one configured (uid)."""
        if self._api is None:
            api = custom_objects_api(self.ref.service_account_dir)
            try:
                obj = api.get_namespaced_custom_object(
                    debugjob.GROUP, debugjob.VERSION, self.ref.namespace, debugjob.PLURAL, self.ref.name
                )
            except Exception:
                api.api_client.close()
                raise
            uid = (obj.get("metadata") or {}).get("uid")
            if self.ref.uid and uid != self.ref.uid:
                api.api_client.close()
                self.refused = (
                    f"DebugJob {self.ref.namespace}/{self.ref.name} has uid {uid}, not {self.ref.uid} as configured: "
                    "it was deleted and created again; this pod belongs to the old one and reports nothing"
                )
                log.error("trainguard: %s", self.refused)
                return None
            self._api = api
        return self._api

    def _failed(self, err: Exception) -> None:
        text = str(err).strip()
        message = f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"
        if message != self.last_error:
            log.warning(
                "trainguard: cannot report to DebugJob %s/%s (%s); retrying",
                self.ref.namespace,
                self.ref.name,
                message,
            )
        self.last_error = message

    def start(self) -> StatusReporter:
        """Report once now, then on each verdict and heartbeat until `close()`."""
        self._thread = threading.Thread(target=self._loop, name="trainguard-status", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        tick = min(1.0, self.interval_seconds)
        force = True
        while not self._stop.is_set():
            sent = self.report(force=force)
            force = force and not sent  # keep forcing until the first report went through
            self._wake.wait(tick)
            self._wake.clear()

    def close(self) -> None:
        """Send a last report (the final states) and stop the thread."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)
        self.report()
        if self._api is not None:
            self._api.api_client.close()
            self._api = None
