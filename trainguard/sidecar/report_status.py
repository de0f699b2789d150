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

In a DebugJob pod of a job with more than `FULL_REPORT_RANKS` ranks (`pod_index` given) the reports
stay small and few whatever the number of ranks:
only the first pod reports its first rank in full and keeps the heartbeat (progress for `kubectl get`);
every pod reports, for each rule in IssuesFound or Error, the one rank of its own that found it first,
with that rule only. The first `PROMPT_FINDING_PODS` pods do so at once; the others wait
`FINDING_CHECK_DELAY_SECONDS` and leave out what the DebugJob already shows, so that a NaN that every
rank of a data-parallel job sees at the same step costs a few writes, not one per pod.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from trainguard.api import debugjob
from trainguard.api.enums import RuleState
from trainguard.api.sidecar_config import DebugJobRef
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.verdicts import Verdict
from trainguard.stop_flag import watched

log = logging.getLogger(__name__)

REPORT_INTERVAL_SECONDS = 10.0
"""Heartbeat: the longest a moving lastStep goes unreported. One small PATCH every 10 s (from the first
pod only, in a DebugJob) keeps `kubectl get debugjobs` current without loading the API server."""
REQUEST_TIMEOUT_SECONDS = 10.0
"""Longest a report may wait for the API server: a slow server delays the next report, never the thread forever."""
FULL_REPORT_RANKS = 32
"""Jobs of up to this many ranks get every rank's full report from every pod (a few KiB per rank); larger
ones get condensed reports (`pod_index`), which stay small at any number of ranks."""
PROMPT_FINDING_PODS = 16
"""Pods (by index) that report a new finding at once. With at most this many pods writing findings, the
DebugJob's status stays far below Kubernetes' object size limits at any number of ranks."""
FINDING_CHECK_DELAY_SECONDS = 3.0
"""How long a later pod waits before checking whether the DebugJob already shows its finding: enough for
the first pods' reports to reach the operator; a finding on those later pods alone is reported this late."""
FINDING_STATES = frozenset({RuleState.ISSUES_FOUND, RuleState.ERROR})


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def finding_reports(evaluator: Evaluator, ranks: Sequence[int], *, now: float) -> dict[int, dict[str, Any]]:
    """Return, for each rule in IssuesFound or Error on one of `ranks`, the report of the rank that found it first.

    A rank that is first for several rules gets one report with those rules; each report holds only
    them (lastStep, time and ended as in a full report).
    """
    first: dict[str, tuple[int, int]] = {}
    for rank in ranks:
        for name, status in evaluator.rank_status(rank).items():
            if status.state in FINDING_STATES:
                key = (status.step if status.step is not None else 1 << 62, rank)
                first[name] = min(first.get(name, key), key)
    out: dict[int, dict[str, Any]] = {}
    for name, (_, rank) in sorted(first.items()):
        report = out.setdefault(rank, {**build_report(evaluator, now=now, rank=rank), "rules": []})
        full = build_report(evaluator, now=now, rank=rank)
        report["rules"] += [entry for entry in full["rules"] if entry["name"] == name]
    return out


def _signature(reports: dict[int, dict[str, Any]]) -> str:
    """What decides whether reports changed: the rules' states and steps and each rank's end, not the clock or
    the last step (the heartbeat carries those)."""
    return json.dumps(
        {
            rank: [rep.get("ended"), [(r["name"], r["state"], r.get("step")) for r in rep.get("rules", [])]]
            for rank, rep in reports.items()
        },
        sort_keys=True,
    )


def _unknown_findings(
    reports: dict[int, dict[str, Any]], known: dict[str, str], *, previously: set[int]
) -> dict[int, dict[str, Any]]:
    """Drop the findings the DebugJob already shows in the same state; keep emptied ranks sent before."""
    out: dict[int, dict[str, Any]] = {}
    for rank, report in reports.items():
        rules = [r for r in report.get("rules", []) if known.get(r["name"]) != r["state"]]
        if rules or rank in previously:
            out[rank] = {**report, "rules": rules}
    return out


def reports_patch(reports: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Return the merge patch that sets these ranks' reports and leaves every other key alone."""
    return {
        "status": {"reports": {debugjob.report_key(rank): report for rank, report in sorted(reports.items())}}
    }


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
        pod_index: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if (rank is None) == (ranks is None) or ranks == []:
            raise ValueError("pass the rank or the ranks to report")
        self.ref = ref
        self.ranks: tuple[int, ...] = (rank,) if rank is not None else tuple(sorted(set(ranks or ())))
        self.pod_index = pod_index
        """The pod's index in its Job: then only the first pod reports in full (see the module docstring)."""
        self.full_ranks: tuple[int, ...] = (
            self.ranks if pod_index is None else self.ranks[:1] if pod_index == 0 else ()
        )
        self._finding_keys: set[int] = set()
        self._finding_seen_at: float | None = None
        self._sent_signature: str | None = None
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
        self._sent_step: int | None = None
        self._sent_at = float("-inf")
        self._thread: threading.Thread | None = None

    def on_verdict(self, verdict: Verdict) -> None:
        """Ask for a report now (called for each transition; the report itself runs on the thread)."""
        self._wake.set()

    def report(self, *, force: bool = False) -> bool:
        """Send the report if a rule's state changed, if `force`, or when the heartbeat is due; return whether sent.

        The heartbeat is due when `interval_seconds` passed since the last report and lastStep moved
        (only for reporters of full reports: every rank without `pod_index`, the first pod's first rank with).
        """
        if self.refused is not None:
            return False
        now = self.clock()
        reports = {r: build_report(self.evaluator, now=now, rank=r) for r in self.full_ranks}
        if self.pod_index is not None:
            findings = finding_reports(self.evaluator, [r for r in self.ranks if r not in reports], now=now)
            # A rank reported before but no longer first for any rule: its report is emptied, not left stale.
            for r in sorted(self._finding_keys - findings.keys()):
                findings[r] = {**build_report(self.evaluator, now=now, rank=r), "rules": []}
            reports.update(findings)
        if not reports:
            return False
        signature = _signature(reports)
        last_step = self.evaluator.last_step
        changed = signature != self._sent_signature
        due = (
            bool(self.full_ranks)
            and now - self._sent_at >= self.interval_seconds
            and last_step != self._sent_step
        )
        if not (force or changed or due):
            return False
        if changed and self.pod_index is not None and self.pod_index >= PROMPT_FINDING_PODS:
            if self._finding_seen_at is None:
                self._finding_seen_at = now
            if now - self._finding_seen_at < FINDING_CHECK_DELAY_SECONDS:
                return False
            known = self._known_rules()
            if known is None:
                return False
            reports = _unknown_findings(reports, known, previously=self._finding_keys)
            if not reports:
                self._sent_signature, self._finding_seen_at = signature, None
                return False
        body = reports_patch(reports)
        try:
            api = self._connect()
            if api is None:
                return False
            api.patch_namespaced_custom_object_status(
                debugjob.GROUP, debugjob.VERSION, self.ref.namespace, debugjob.PLURAL, self.ref.name, body,
                _content_type="application/merge-patch+json", _request_timeout=REQUEST_TIMEOUT_SECONDS,
            )  # fmt: skip
        except Exception as err:  # noqa: BLE001 - API, network or config failures: logged, retried at the next report
            self._failed(err)
            return False
        self.last_error = None
        self._sent_signature, self._sent_step, self._sent_at = signature, last_step, now
        self._finding_seen_at = None
        self._finding_keys |= {r for r in reports if r not in self.full_ranks}
        self.reports_sent += 1
        return True

    def _known_rules(self) -> dict[str, str] | None:
        """Return each rule's state as the DebugJob's status shows it (None when it cannot be read now)."""
        try:
            api = self._connect()
            if api is None:
                return None
            obj = api.get_namespaced_custom_object(
                debugjob.GROUP,
                debugjob.VERSION,
                self.ref.namespace,
                debugjob.PLURAL,
                self.ref.name,
                _request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except Exception as err:  # noqa: BLE001 - as for a report: logged, tried again at the next tick
            self._failed(err)
            return None
        rules = (obj.get("status") or {}).get("rules") or []
        return {str(r.get("name")): str(r.get("state")) for r in rules}

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
