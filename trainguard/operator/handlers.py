"""kopf handlers: thin glue between watch events and the pure builders, status logic and actions.

- `reconcile` (create, resume, spec update): validate, build, create each child if absent.
- `decide_and_act` (every DebugJob event): aggregate sidecar reports, derive phase and conditions, and
  act on new rule transitions (`status_decision.decide`, `actions`).
- `job_changed` (every owned Job event): copy the Job's state into `status.job` (read by its adapter,
  `build.WORKLOAD`; every suspension, read and stop goes through the `workloads` seam).
- DebugPolicies and the pod webhook of attach mode: `attach` (registered by importing it; its webhook
  and workload indices are registered by `trainguard operator --attach`).
- `cleanup` (deletion): delete the children explicitly (owner references let the garbage
  collector do the same on a real cluster; explicit deletion also covers clusters without it).

The operator is the only writer of phase, conditions and rules, so it overlays what it last wrote
onto each event's body: a stale event can neither undo a Stopped phase nor repeat an action.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import dataclasses
import datetime
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import kopf
import pydantic
from prometheus_client import CollectorRegistry, start_http_server

from trainguard.api import debugjob
from trainguard.api.enums import Action, ConditionType, Phase
from trainguard.operator import (
    actions,
    attach,
    build,
    client,
    delivery,
    diffbase,
    end_marker,
    status_decision,
    webhooks,
)
from trainguard.operator.config import OperatorConfig
from trainguard.operator.metrics import OperatorMetrics
from trainguard.operator.workloads import control

DEBUGJOBS = (debugjob.GROUP, debugjob.VERSION, debugjob.PLURAL)
FINALIZER = f"{debugjob.GROUP}/cleanup"
_EMPTY_JOB = debugjob.JobSummary().model_dump(mode="json", by_alias=True)
RETRY_DELAY_SECONDS = 5
"""Pause before retrying a handler after an API failure (kopf's default is 60 s)."""
FINAL_PHASE_ANNOTATION = f"{debugjob.GROUP}/final-phase"
"""Set by the operator on the DebugJob itself when it enters a terminal phase. Pods may patch the status
subresource but never the object, so after a restart a terminal `status.phase` counts only when this
annotation names the same phase (a phase the operator did not write is worked out again)."""
WORKER_IDLE_SECONDS = 1.0
"""How long a kopf per-object worker waits for its object's next event before leaving (kopf's default is 5 s)."""
END_MARKER_THREADS = 2
"""Threads that write END markers of finished DebugJobs, off the handlers (a run may have thousands of ranks)."""

log = logging.getLogger(__name__)


@dataclasses.dataclass
class OperatorState:
    """Shared by all handlers through kopf's memo (per-object memos copy the reference)."""

    config: OperatorConfig
    kube: client.Kube
    metrics: OperatorMetrics
    registry: CollectorRegistry
    written: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Per DebugJob uid: the operator-owned status fields as last written."""
    jobs: dict[tuple[str, str], dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Per (namespace, DebugJob): the Job summary last copied into status."""
    deleting: set[str] = dataclasses.field(default_factory=set)
    """DebugJob uids being deleted: their Jobs' deletion is ours, not a failure to report."""
    ended: set[str] = dataclasses.field(default_factory=set)
    """DebugJob uids whose END markers were checked (after a restart they are checked once more)."""
    suspending: set[str] = dataclasses.field(default_factory=set)
    """DebugJob uids whose Job's suspension is done or scheduled (a cooperative stop waits before it)."""
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    metrics_server: Any = None
    dispatcher: delivery.Dispatcher | None = None
    """Sends webhooks from its own thread (started by `startup`)."""
    background: concurrent.futures.ThreadPoolExecutor = dataclasses.field(
        default_factory=lambda: concurrent.futures.ThreadPoolExecutor(
            max_workers=END_MARKER_THREADS, thread_name_prefix="trainguard-end"
        )
    )
    """Writes END markers, so storage latency never holds a handler thread."""


def _state(memo: Any) -> OperatorState:
    state: OperatorState = memo["state"]
    return state


def _counted(handler: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Count exceptions of a handler in trainguard_operator_reconcile_errors_total{handler}."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(**kwargs: Any) -> Any:
            try:
                return fn(**kwargs)
            except Exception:
                memo = kwargs.get("memo")
                if memo is not None and "state" in memo:
                    _state(memo).metrics.reconcile_errors.labels(handler=handler).inc()
                raise

        return run

    return wrap


def _plain(body: Any) -> dict[str, Any]:
    """Return a kopf body as plain JSON data (pydantic and the builders want dicts)."""
    data: dict[str, Any] = json.loads(json.dumps({k: body[k] for k in body}, default=dict))
    return data


def _now() -> str:
    return webhooks.now_rfc3339()


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """Use `KUBECONFIG` when set (read now, not at import), else the pod's service account."""
    if os.environ.get("KUBECONFIG"):
        return kopf.login_with_kubeconfig(**kwargs)
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def startup(
    settings: kopf.OperatorSettings,
    memo: kopf.Memo,
    logger: logging.Logger | logging.LoggerAdapter[Any],
    **_: Any,
) -> None:
    """Configure kopf, connect the API client and start the metrics server."""
    config: OperatorConfig = memo.get("config") or OperatorConfig()
    # kopf keeps its progress in annotations under our prefix, so the status stays ours alone.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=debugjob.GROUP)
    settings.persistence.diffbase_storage = diffbase.SpecDigestStorage(
        prefix=debugjob.GROUP, key="last-handled-configuration"
    )
    settings.persistence.finalizer = FINALIZER
    # kopf would post an Event per handler run; only warnings (and our own Events) are worth one.
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = config.max_workers
    # kopf starts a worker per object with pending events, and its connection pool has no bound: a burst of
    # 500 new DebugJobs held ~500 TLS connections to the API server at once (~300 MB peak). Bound the
    # workers, and let an idle one leave after 1 s instead of 5 so that the bound costs no throughput.
    settings.queueing.worker_limit = config.worker_limit
    settings.queueing.idle_timeout = WORKER_IDLE_SECONDS
    # Reconnect watches before load balancers drop idle streams (nolar/kopf#698, #204).
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    settings.watching.connect_timeout = 5
    settings.networking.request_timeout = 30
    registry = CollectorRegistry()
    metrics = OperatorMetrics(registry)
    state = OperatorState(
        config=config,
        kube=client.Kube.connect(pool_size=config.max_workers * 2),
        metrics=metrics,
        registry=registry,
        dispatcher=delivery.Dispatcher(config.delivery_settings(), metrics=metrics).start(),
    )
    if config.metrics_port is not None:
        server, _thread = start_http_server(
            config.metrics_port, addr=config.metrics_address, registry=registry
        )
        state.metrics_server = server
        logger.info("metrics on %s:%d/metrics", config.metrics_address, server.server_port)
    memo["state"] = state
    if config.attach:
        attach.serve(settings, config)


@kopf.on.cleanup()
def shutdown(memo: kopf.Memo, **_: Any) -> None:
    """Let queued webhooks finish briefly, stop the metrics server and close the API client."""
    state = memo.get("state")
    if state is None:
        return
    if state.dispatcher is not None:
        state.dispatcher.close()
    state.background.shutdown(wait=False, cancel_futures=True)
    if state.metrics_server is not None:
        state.metrics_server.shutdown()
        state.metrics_server.server_close()
    state.kube.close()


def _write(state: OperatorState, uid: str, patch: kopf.Patch, fields: dict[str, Any]) -> None:
    """Merge operator-owned status fields into this cycle's patch and remember them."""
    if not fields:
        return
    with state.lock:
        state.written.setdefault(uid, {}).update(fields)
    for key, value in fields.items():
        patch.status[key] = value


def _overlay(state: OperatorState, uid: str, status: dict[str, Any]) -> dict[str, Any]:
    """Return the body's status with what the operator last wrote on top (it may be newer than the event)."""
    with state.lock:
        written = dict(state.written.get(uid, {}))
    return {**status, **written}


def _trusted_status(state: OperatorState, data: dict[str, Any]) -> dict[str, Any]:
    """Return the DebugJob's status as the operator may act on it: its own writes on top, no forged final phase.

    The final phase is the one `FINAL_PHASE_ANNOTATION` names; a terminal `status.phase` without it
    (written by someone else) is dropped and decided again from the Job and the reports. What the
    operator wrote in this run (`_overlay`) wins over both.
    """
    meta = data.get("metadata") or {}
    status = dict(data.get("status") or {})
    final = (meta.get("annotations") or {}).get(FINAL_PHASE_ANNOTATION)
    if final in _TERMINAL:
        status["phase"] = final  # nor can a pod turn a finished DebugJob back into a running one
    elif status.get("phase") in _TERMINAL:
        del status["phase"]
    return _overlay(state, meta.get("uid", ""), status)


_TERMINAL = frozenset(p.value for p in status_decision.TERMINAL_PHASES)


def _explain(err: Exception) -> str:
    if isinstance(err, pydantic.ValidationError):
        parts = []
        for e in err.errors()[:5]:
            loc = ".".join(str(p) for p in e["loc"])
            parts.append(f"spec.{loc}: {e['msg']}" if loc else str(e["msg"]))
        return "; ".join(parts)
    return str(err)


@kopf.on.resume(*DEBUGJOBS)
@kopf.on.create(*DEBUGJOBS)
@kopf.on.update(*DEBUGJOBS, field="spec")
@_counted("reconcile")
def reconcile(
    body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, reason: str, logger: logging.Logger, **_: Any
) -> None:
    """Create what the DebugJob owns (each child only if absent); report an invalid spec as condition Invalid."""
    state = _state(memo)
    data = _plain(body)
    owner = build.Owner.from_body(data)
    status = _trusted_status(state, data)
    conditions = [debugjob.Condition.model_validate(c) for c in status.get("conditions") or []]
    generation = data["metadata"].get("generation")
    if status.get("phase") in _TERMINAL:
        # A final DebugJob never runs again, even if its Job is gone (ttlSecondsAfterFinished).
        logger.debug(
            "DebugJob %s/%s is %s; nothing to reconcile", owner.namespace, owner.name, status["phase"]
        )
        return
    try:
        spec = debugjob.DebugJobSpec.model_validate(data.get("spec") or {})
        children = build.build_children(spec, owner, default_image=state.config.default_image)
    except (pydantic.ValidationError, build.TemplateError, build.InvalidName) as err:
        message = _explain(err)
        logger.warning("invalid DebugJob %s/%s, nothing created: %s", owner.namespace, owner.name, message)
        kopf.event(body, type="Warning", reason=status_decision.REASON_INVALID_SPEC, message=message)
        conditions = status_decision.set_condition(
            conditions, type=ConditionType.INVALID, status=True, reason=status_decision.REASON_INVALID_SPEC,
            message=message, now=_now(), generation=generation,
        )  # fmt: skip
        _write(state, owner.uid, patch, {
            "phase": status.get("phase") or Phase.PENDING.value,
            "conditions": [c.model_dump(mode="json", by_alias=True) for c in conditions],
        })  # fmt: skip
        state.metrics.observe(owner.namespace, owner.name, _overlay(state, owner.uid, status))
        return

    try:
        for child in children:
            if state.kube.create(child):
                logger.info("created %s %s", child["kind"], child["metadata"]["name"])
            else:
                _converge(state.kube, child, spec=spec, status=status, reason=reason)
    except client.KubeError as err:
        raise kopf.TemporaryError(
            f"{err}; retrying in {RETRY_DELAY_SECONDS} s", delay=RETRY_DELAY_SECONDS
        ) from err

    fields: dict[str, Any] = {"jobName": build.Names.of(owner.name).job}
    if any(c.type == ConditionType.INVALID and c.status == "True" for c in conditions):
        conditions = status_decision.set_condition(
            conditions, type=ConditionType.INVALID, status=False, reason="Valid", message="the spec is valid",
            now=_now(), generation=generation,
        )  # fmt: skip
        fields["conditions"] = [c.model_dump(mode="json", by_alias=True) for c in conditions]
    # Decide the first phase and conditions here too, so `decide_and_act` has nothing to add (one patch, not two).
    current = {**status, **fields}
    decision = status_decision.decide(
        debugjob.DebugJob.model_validate({**data, "spec": spec.model_dump(by_alias=True), "status": current}),
        now=_now(),
    )
    if decision.stop is None and not decision.notify:  # transitions are acted on by `decide_and_act` alone
        fields.update(decision.status)
    _write(state, owner.uid, patch, {k: v for k, v in fields.items() if status.get(k) != v})
    state.metrics.observe(owner.namespace, owner.name, _overlay(state, owner.uid, status))


def _converge(
    kube: client.Kube,
    child: dict[str, Any],
    *,
    spec: debugjob.DebugJobSpec,
    status: dict[str, Any],
    reason: str,
) -> None:
    """Bring an existing child in line where it may change: the ConfigMap's rules and the workload's suspension."""
    meta = child["metadata"]
    workload = build.WORKLOAD
    if child["kind"] == "ConfigMap" and reason == "update":
        kube.patch("v1", "ConfigMap", meta["namespace"], meta["name"], {"data": child["data"]})
    elif workload.matches(child["apiVersion"], child["kind"]):
        queued = workload.queue_name(child) is not None
        if spec.suspend or (reason == "update" and not queued):
            control.set_suspended(kube, workload, meta["namespace"], meta["name"], suspend=spec.suspend)


@kopf.on.event(*DEBUGJOBS)
@_counted("decide_and_act")
def decide_and_act(
    body: kopf.Body, type: str | None, patch: kopf.Patch, memo: kopf.Memo, logger: logging.Logger, **_: Any
) -> None:
    """Aggregate reports into status; stop or notify on each rule's transition to IssuesFound, once."""
    state = _state(memo)
    data = _plain(body)
    meta = data.get("metadata") or {}
    if type == "DELETED" or meta.get("deletionTimestamp") or "uid" not in meta:
        return
    status = _trusted_status(state, data)
    if not status.get("jobName"):
        return  # not reconciled yet, or invalid: `reconcile` owns those states
    try:
        dj = debugjob.DebugJob.model_validate({**data, "status": status})
    except pydantic.ValidationError:
        return  # `reconcile` reports the invalid spec
    owner = build.Owner.from_body(data)
    decision = status_decision.decide(dj, now=_now())

    for rule in [decision.stop, *decision.notify]:
        if rule is None:
            continue
        state.metrics.rule_triggered(owner.namespace, owner.name, rule.name)
        action = Action.STOP if rule is decision.stop else Action.NOTIFY
        if action == Action.STOP:
            _suspend(state, dj, owner, since=_now())
        state.metrics.actions.labels(action=action.value).inc()
        sign = decision.earlier_sign if action == Action.STOP else None
        event = actions.rule_event(
            rule,
            action=action,
            namespace=owner.namespace,
            uid=owner.uid,
            time=_now(),
            earlier=sign,
            debugjob_name=owner.name,
        )
        assert state.dispatcher is not None, "startup creates the dispatcher"
        actions.announce(
            state.kube, body=actions.reference(data), event=event, hooks=dj.spec.actions.notify.webhooks,
            metrics=state.metrics, emit=actions.emitter(), dispatcher=state.dispatcher,
        )  # fmt: skip

    job = dj.status.job
    if (
        decision.stop is None
        and decision.phase == Phase.STOPPED
        and job is not None
        and job.active
        and not job.suspended
    ):
        # stopped earlier and not suspended yet (a cooperative stop whose timer an operator restart lost)
        stopped = next((c for c in dj.status.conditions if c.type == ConditionType.STOPPED), None)
        _suspend(state, dj, owner, since=stopped.last_transition_time if stopped else None)
    # END markers once the pods are gone, terminating ones included: a stopped trainer may still close its run
    # cleanly within its grace period.
    if decision.phase in status_decision.TERMINAL_PHASES and (
        job is None or job.active + job.terminating == 0
    ):
        with state.lock:
            first = owner.uid not in state.ended
            state.ended.add(owner.uid)
        if first:
            # In this handler's context, so kopf's logger can still post its Events from the other thread.
            context = contextvars.copy_context()
            stopped_by = decision.triggered_rule if decision.phase == Phase.STOPPED else None
            state.background.submit(
                context.run, _write_end_markers, state, dj, owner, decision.phase, stopped_by, logger
            )
    if decision.phase in status_decision.TERMINAL_PHASES and decision.status.get("phase"):
        # On the object, where pods cannot write: after a restart this proves the final phase is ours.
        patch.metadata.annotations[FINAL_PHASE_ANNOTATION] = decision.phase.value
    # Sidecars write only `reports` and the Job watcher only `job`: every other field is the operator's.
    fields = dict(decision.status)
    if (data.get("status") or {}).get("phase") != decision.phase.value:
        fields["phase"] = (
            decision.phase.value
        )  # the stored phase is not the one acted on (someone else wrote it)
    _write(state, owner.uid, patch, fields)
    state.metrics.observe(owner.namespace, owner.name, {**status, **fields})


def _suspend(state: OperatorState, dj: debugjob.DebugJob, owner: build.Owner, *, since: str | None) -> None:
    """Suspend the Job for a stop verdict given at `since` (RFC 3339): at once, or, when a trainer polls the stop
    file (its sidecar reports `stopWatched`), `cooperativeSeconds` after the verdict, so that it can save its work
    and exit first. Once per DebugJob per operator process; the suspension is idempotent anyway."""
    with state.lock:
        if owner.uid in state.suspending:
            return
        state.suspending.add(owner.uid)
    wait = dj.spec.actions.stop.cooperative_seconds
    if wait and any(r.stop_watched for r in dj.status.reports.values()):
        started = _parse_time(since) if since else time.time()
        left = started + wait - time.time()
        if left > 0:
            log.info(
                "DebugJob %s/%s: a trainer polls the stop file; suspending the Job in %.0f s",
                owner.namespace, owner.name, left,
            )  # fmt: skip
            timer = threading.Timer(left, actions.stop, args=(state.kube, owner))
            timer.daemon = True
            timer.start()
            return
    actions.stop(state.kube, owner)


def _parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _write_end_markers(
    state: OperatorState,
    dj: debugjob.DebugJob,
    owner: build.Owner,
    phase: Phase,
    stopped_by: str | None,
    logger: logging.Logger,
) -> None:
    """Write END.json for ranks that have none (on a background thread); a failure is logged, never raised.

    The reason names the final phase and, for Stopped, the stop rule (`stopped_by`, as in `triggeredRule`)."""
    uri = build.run_uri(dj.spec, owner)
    try:
        credentials = None
        ref = dj.spec.capture.secret_ref
        if ref is not None:  # each credential the URI's backend declares, read from its key of the Secret
            credentials = {
                c.env: state.kube.secret_value(owner.namespace, ref.name, ref.key_of(c))
                for c in dj.spec.capture.backend().credentials
            } or None
        store = end_marker.open_run_store(uri, dj.spec.capture, credentials=credentials)
        ranks = end_marker.write_missing(
            store,
            workers=dj.spec.workers * dj.spec.nproc_per_node,
            last_steps=end_marker.last_steps(dj.status.reports),
            status=end_marker.end_status(phase),
            reason=f"the operator wrote END: the DebugJob became {phase.value}"
            + (f" (stopped by rule {stopped_by})" if stopped_by else ""),
            wall_time=time.time(),
        )
    except Exception as err:  # noqa: BLE001  (storage trouble must not block the status update)
        logger.warning("could not write END markers under %s: %s: %s", uri, type(err).__name__, err)
        return
    if ranks:
        logger.info("wrote END.json for ranks %s under %s", ranks, uri)


@kopf.on.event(
    build.WORKLOAD.group,
    build.WORKLOAD.version,
    build.WORKLOAD.plural,
    labels={build.LABEL_DEBUGJOB: kopf.PRESENT},
)
@_counted("job")
def job_changed(body: kopf.Body, type: str | None, memo: kopf.Memo, **_: Any) -> None:
    """Copy an owned Job's state into its DebugJob's `status.job` (only when it changed).

    A Job deleted before it finished fails its DebugJob (reason JobDeleted); deleting a finished
    Job (its TTL) changes nothing, and neither does deleting a DebugJob's children on its deletion.
    """
    data = _plain(body)
    meta = data.get("metadata") or {}
    owner = next(
        (
            r
            for r in meta.get("ownerReferences") or []
            if r.get("kind") == debugjob.KIND and r.get("apiVersion") == debugjob.API_VERSION
        ),
        None,
    )
    if owner is None:
        return
    state = _state(memo)
    key = (meta["namespace"], owner["name"])
    deleted = type == "DELETED"
    with state.lock:
        if deleted and owner.get("uid") in state.deleting:
            return
    summary = status_decision.summarize_job(data, deleted=deleted, workload=build.WORKLOAD).model_dump(
        mode="json", by_alias=True
    )
    if deleted and not summary["deleted"]:
        return
    with state.lock:
        # A new Job's empty summary says nothing a missing one does not (phase Pending either way).
        if state.jobs.get(key, _EMPTY_JOB) == summary:
            return
    result = state.kube.patch(
        debugjob.API_VERSION,
        debugjob.KIND,
        key[0],
        key[1],
        {"status": {"job": summary}},
        subresource="status",
    )
    if result is not None:
        with state.lock:
            state.jobs[key] = summary


@kopf.on.delete(*DEBUGJOBS)
@_counted("cleanup")
def cleanup(body: kopf.Body, memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    """Delete every child of the DebugJob (the Job with its pods, in the background) and forget it."""
    state = _state(memo)
    data = _plain(body)
    owner = build.Owner.from_body(data)
    names = build.Names.of(owner.name)
    with state.lock:
        state.deleting.add(owner.uid)
    for api_version, kind, name in (
        (build.WORKLOAD.api_version, build.WORKLOAD.kind, names.job),
        ("v1", "Service", names.service),
        ("v1", "ConfigMap", names.config_map),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", names.role_binding),
        ("rbac.authorization.k8s.io/v1", "Role", names.role),
        ("v1", "ServiceAccount", names.service_account),
    ):
        child = state.kube.get(api_version, kind, owner.namespace, name)
        if child is None or not _owned_by(child, owner):
            continue  # never delete what another object owns
        if state.kube.delete(api_version, kind, owner.namespace, name):
            logger.info("deleted %s %s", kind, name)
    with state.lock:
        state.written.pop(owner.uid, None)
        state.ended.discard(owner.uid)
        state.jobs.pop((owner.namespace, owner.name), None)
    state.metrics.forget(owner.namespace, owner.name)


def _owned_by(child: dict[str, Any], owner: build.Owner) -> bool:
    refs = (child.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == owner.uid for r in refs)
