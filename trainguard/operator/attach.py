"""kopf glue of attach mode: DebugPolicies, the in-memory indices and the pod admission webhook.

- `validate` (create, resume, spec update): an invalid DebugPolicy gets condition Invalid with the reason and a
  Warning Event; a valid one Ready (when attach mode is on).
- `policies` (a kopf index, every DebugPolicy): the valid policies by namespace, read at admission.
- `resync_policy` (a kopf timer, every `RESYNC_SECONDS`): lists the selected workloads and their pods,
  reads each injected evaluator's /metrics (the operator pulls verdicts: the pods' ServiceAccounts are
  the users' and get no write access to anything of ours), stops a workload whose evaluator reports a
  stop rule triggered (its top-level owner, or its Kueue Workload, through `control`), posts an Event
  per notify finding, and writes the policy's status (`policy_status`): each workload's phase, rule,
  step, ranks seen, and `blind` for a workload whose pods run without the evaluator.
- `register` (called by `trainguard operator --attach` before kopf starts): one index per enabled
  workload kind (slim copies of the objects, for the owner walk at admission) and the mutating handler
  on pods carrying `trainguard.dev/watch=true`; `serve` (at startup) starts kopf's webhook server on the
  certificate the chart mounts. The handler is `inject.admit` over those indices: no API call during
  admission.

The webhook configuration itself is the chart's (`settings.admission.managed` stays None): kopf's
managed one has a fixed 30 s timeout and no namespaceSelector.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kopf
import pydantic

from trainguard.api import debugjob, debugpolicy
from trainguard.operator import build, client, inject, policy_status, status_decision, webhooks, workloads
from trainguard.operator.config import OperatorConfig
from trainguard.operator.workloads import control, declaration

POLICIES = (debugjob.GROUP, debugjob.VERSION, debugpolicy.PLURAL)
POLICY_INDEX = "attach_policies"
HANDLER_ID = "inject-pods"
"""The mutating handler's id: kopf serves it at `/<id>`, the path in the chart's webhook configuration."""
RESYNC_SECONDS = 10.0
"""How often a policy's workloads are read, its evaluators scraped and its status worked out again: a stop
follows a finding within this (the evaluator writes the stop file at once for trainers that poll it)."""
OWNER_WAIT_SECONDS = 2.0
"""How long admission waits for the operator's watches to deliver a pod's owners: a controller creates pods
moments after their Job (JobSet, Trainer: Jobs moments after their JobSet), often before the watch event
arrives, and such a pod would run unchecked. Well within the webhook's timeout (`attach.timeoutSeconds`)."""
OWNER_POLL_SECONDS = 0.05
SCRAPE_TIMEOUT_SECONDS = 2.0
"""Longest wait for one evaluator's /metrics: a pod that does not answer is left out of this round."""
TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"

log = logging.getLogger(__name__)


def index_id(adapter: declaration.WorkloadKind) -> str:
    """The kopf index (and handler kwarg) holding the workloads of one kind."""
    return f"attach_{adapter.kind.lower()}s"


def slim(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return what the owner walk and the adapters read of a workload: its identity, labels, owners and spec
    without pod templates (they can be large, and admission never reads them)."""
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {
            k: copy.deepcopy(meta[k])
            for k in ("name", "namespace", "uid", "labels", "ownerReferences")
            if k in meta
        },
        "spec": _without_pod_specs(obj.get("spec") or {}),
    }


def _without_pod_specs(node: Any) -> Any:
    if isinstance(node, Mapping):
        if "containers" in node:
            return {}
        return {k: _without_pod_specs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_without_pod_specs(v) for v in node]
    return node


def _policy_of(body: Mapping[str, Any]) -> inject.Policy | pydantic.ValidationError:
    try:
        return inject.Policy.from_body(body)
    except pydantic.ValidationError as err:
        return err


def _explain(err: pydantic.ValidationError) -> str:
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"])
        parts.append(f"spec.{loc}: {e['msg']}" if loc else str(e["msg"]))
    return "; ".join(parts)


def _config(memo: Any) -> OperatorConfig:
    config: OperatorConfig = memo.get("config") or OperatorConfig()
    return config


def _conditions(body: Mapping[str, Any]) -> list[debugpolicy.PolicyCondition]:
    status = body.get("status") or {}
    return [debugpolicy.PolicyCondition.model_validate(c) for c in status.get("conditions") or []]


def _dump(conditions: Iterable[debugpolicy.PolicyCondition]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", by_alias=True) for c in conditions]


@kopf.on.resume(*POLICIES)
@kopf.on.create(*POLICIES)
@kopf.on.update(*POLICIES, field="spec")
def validate(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """Refuse an invalid policy loudly (condition Invalid, a Warning Event); mark a valid one Ready."""
    data = dict(body)
    generation = (data.get("metadata") or {}).get("generation")
    now = webhooks.now_rfc3339()
    conditions = _conditions(data)
    policy = _policy_of(data)
    if isinstance(policy, pydantic.ValidationError):
        message = _explain(policy)
        kopf.event(body, type="Warning", reason=policy_status.REASON_INVALID, message=message)
        conditions = policy_status.invalid(conditions, message, now=now, generation=generation)
    elif not _config(memo).attach:
        conditions = policy_status.set_condition(
            conditions, type=debugpolicy.PolicyConditionType.READY, status=False,
            reason=policy_status.REASON_ATTACH_DISABLED,
            message="attach mode is off in this operator (chart value attach.enabled): nothing is injected",
            now=now, generation=generation,
        )  # fmt: skip
    else:
        conditions = policy_status.summarize([], conditions, now=now, generation=generation).conditions
        conditions = [c for c in conditions if c.type != debugpolicy.PolicyConditionType.BLIND]
    patch.status["conditions"] = _dump(conditions)
    patch.status["observedGeneration"] = generation


@kopf.index(*POLICIES, id=POLICY_INDEX)
def policies(body: kopf.Body, namespace: str | None, **_: Any) -> dict[str, inject.Policy]:
    """Index the valid policies by namespace (an invalid one is left out: it selects nothing)."""
    policy = _policy_of(dict(body))
    if isinstance(policy, pydantic.ValidationError) or namespace is None:
        return {}
    return {namespace: policy}


def observe(
    kube: client.Kube, policy: inject.Policy, kinds: Iterable[declaration.WorkloadKind]
) -> list[policy_status.Observed]:
    """Read the top-level workloads of `kinds` the policy selects in its namespace, each with its pods."""
    kinds = list(kinds)
    found: list[policy_status.Observed] = []
    selector = policy.spec.selector
    for adapter in kinds:
        listed = kube.list(
            adapter.api_version,
            adapter.kind,
            policy.namespace,
            labels=dict(selector.match_labels) if selector else None,
        )
        for obj in listed:
            meta = obj.get("metadata") or {}
            api_version = str(obj.get("apiVersion") or adapter.api_version)
            if not policy.spec.selects(
                api_version, adapter.kind, str(meta.get("name", "")), declaration.labels_of(obj)
            ):
                continue
            if not policy_status.is_top_level(obj, kinds):
                continue
            wanted = adapter.pod_selector(obj)
            pods = [
                p
                for p in kube.list("v1", "Pod", policy.namespace, labels=wanted)
                # The selector again, here: a server that ignores it must not lend other workloads' pods.
                if wanted.items() <= dict(declaration.labels_of(p)).items()
            ]
            found.append(policy_status.Observed(adapter=adapter, obj=obj, pods=pods))
    return found


def scrape_pod(pod: Mapping[str, Any], *, port: int = build.SIDECAR_PORT) -> policy_status.Scrape | None:
    """Read an injected pod's evaluator /metrics; None when the pod has no IP yet or does not answer in time."""
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return None
    host = f"[{ip}]" if ":" in str(ip) else str(ip)
    try:
        with urllib.request.urlopen(
            f"http://{host}:{port}/metrics", timeout=SCRAPE_TIMEOUT_SECONDS
        ) as answer:
            return policy_status.parse_metrics(answer.read().decode("utf-8", "replace"))
    except (OSError, ValueError) as err:
        log.debug("cannot read the evaluator of pod %s: %s", (pod.get("metadata") or {}).get("name"), err)
        return None


def with_scrapes(
    observed: list[policy_status.Observed], scrape: Callable[[Mapping[str, Any]], policy_status.Scrape | None]
) -> list[policy_status.Observed]:
    """Return the workloads with what the evaluators of their injected, running pods report."""
    out = []
    for o in observed:
        pods = [
            p for p in o.pods if inject.is_injected(p) and (p.get("status") or {}).get("phase") == "Running"
        ]
        scrapes = [s for s in map(scrape, pods) if s is not None]
        out.append(dataclasses.replace(o, scrapes=scrapes))
    return out


def act(
    kube: client.Kube,
    policy: inject.Policy,
    observed: list[policy_status.Observed],
    *,
    done: set[tuple[str, str]],
) -> list[tuple[str, str, str]]:
    """Stop or notify for each workload's new findings; return the Events to post (type, reason, message).

    A stop suspends the workload's top-level owner, or deactivates its Kueue Workloads when Kueue admits it
    (`control.stop`), as for a DebugJob's Job. `done` holds the (workload uid, rule) pairs acted on already."""
    actions = status_decision.rule_actions(policy.spec.rules)
    events: list[tuple[str, str, str]] = []
    for o in observed:
        decided = policy_status.verdict(o, actions)
        where = f"{o.adapter.kind} {o.name}"
        step = o.step()
        at = f" at step {step}" if step is not None else ""
        if decided.stop is not None and (o.uid, decided.stop) not in done:
            queued = o.adapter.queue_name(o.obj) is not None
            stopped = control.stop(kube, o.adapter, policy.namespace, o.name, queued=queued)
            done.add((o.uid, decided.stop))
            how = (
                f"deactivated its Kueue Workloads {', '.join(stopped.deactivated)}"
                if stopped is not None and stopped.deactivated
                else f"suspended {where}"
            )
            if stopped is not None:
                events.append(
                    (
                        "Warning",
                        policy_status.REASON_STOPPED,
                        f"rule {decided.stop} found issues{at} in {where}: {how}",
                    )
                )
        for rule in decided.notify:
            if (o.uid, rule) not in done:
                done.add((o.uid, rule))
                events.append(
                    (
                        "Warning",
                        policy_status.REASON_RULE_TRIGGERED,
                        f"rule {rule} found issues{at} in {where}",
                    )
                )
    return events


@kopf.timer(*POLICIES, interval=RESYNC_SECONDS, initial_delay=5.0)
def resync_policy(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """Write the policy's workloads and its Blind condition, and act on its evaluators' findings (attach mode
    only: it lists pods)."""
    config = _config(memo)
    state = memo.get("state")
    data = dict(body)
    policy = _policy_of(data)
    if not config.attach or state is None or isinstance(policy, pydantic.ValidationError):
        return
    try:
        observed = with_scrapes(
            observe(state.kube, policy, workloads.enabled(config.workload_kinds)), scrape_pod
        )
        events = act(state.kube, policy, observed, done=_acted(memo))
    except client.KubeError as err:
        raise kopf.TemporaryError(
            f"cannot read or stop the workloads of DebugPolicy {policy.name}: {err}", delay=10
        ) from err
    for type_, reason, message in events:
        kopf.event(body, type=type_, reason=reason, message=message)
    status = policy_status.summarize(
        observed, _conditions(data), now=webhooks.now_rfc3339(), generation=policy.generation
    )
    # Without the nulls: the API server drops them from a merge patch, so a status holding them would never
    # equal the stored one, and every resync would patch it again.
    fields = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    previous = data.get("status") or {}
    if any(previous.get(k) != v for k, v in fields.items() if k != "conditions") or _changed(
        previous.get("conditions") or [], fields["conditions"]
    ):
        patch.status.update(fields)
    blind = [w for w in status.workloads if w.blind]
    was_blind = int(previous.get("blindCount") or 0)
    if blind and was_blind < len(blind):
        kopf.event(
            body, type="Warning", reason=policy_status.REASON_BLIND,
            message=next(c.message for c in status.conditions if c.type == debugpolicy.PolicyConditionType.BLIND),
        )  # fmt: skip


def _acted(memo: Any) -> set[tuple[str, str]]:
    """The (workload uid, rule) pairs this operator acted on; after a restart a finding is acted on once more
    (a stop of a suspended workload is skipped by `policy_status.verdict`)."""
    acted: set[tuple[str, str]] = memo.setdefault("attach_acted", set())
    return acted


def _changed(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> bool:
    def key(c: Mapping[str, Any]) -> tuple[Any, ...]:
        return (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))

    return sorted(map(key, before)) != sorted(map(key, after))


def _index_workload(
    body: kopf.Body, namespace: str | None, **_: Any
) -> dict[tuple[str, str], dict[str, Any]]:
    meta = body.get("metadata") or {}
    return {(str(namespace), str(meta.get("name"))): slim(dict(body))}


def indexed_get(
    indices: Mapping[str, Any], adapter: declaration.WorkloadKind, namespace: str, name: str
) -> Any:
    """Read one workload from the operator's in-memory indices (`owners.Get`); None when it is not there."""
    index = indices.get(index_id(adapter))
    if index is None:
        return None
    store = index.get((namespace, name))
    return next(iter(store), None) if store is not None else None


def mutate_pod(
    body: kopf.Body, patch: kopf.Patch, warnings: list[str], memo: kopf.Memo, **kwargs: Any
) -> None:
    """Inject the evaluator into a pod of a selected workload (`inject.admit`); no API call.

    An owner not in memory yet is waited for (`OWNER_WAIT_SECONDS`, in kopf's handler thread: the watches go on
    filling the indices meanwhile); a pod whose owner still did not arrive goes unchanged, with a warning, and its
    workload is reported blind."""
    config = _config(memo)
    pod = dict(body)
    namespace = str((pod.get("metadata") or {}).get("namespace") or kwargs.get("namespace") or "")
    pod.setdefault("metadata", {})["namespace"] = namespace
    policy_index = kwargs.get(POLICY_INDEX)
    kinds = tuple(workloads.enabled(config.workload_kinds))
    settings = inject.Settings(default_image=config.default_image, kinds=kinds)
    deadline = time.monotonic() + OWNER_WAIT_SECONDS
    while True:
        store = policy_index.get(namespace) if policy_index is not None else None
        admission = inject.admit(
            pod, policies=list(store or []), get=functools.partial(indexed_get, kwargs), settings=settings
        )
        if admission.pending is None or time.monotonic() >= deadline:
            break
        time.sleep(OWNER_POLL_SECONDS)
    if admission.pending is not None:
        log.info("pod %s/%s: not injected, its owner %s is not in memory yet", namespace,
                 (pod.get("metadata") or {}).get("generateName") or (pod.get("metadata") or {}).get("name"),
                 admission.pending)  # fmt: skip
        warnings.append(
            f"trainguard: not injected: the operator has not seen {admission.pending} yet; "
            "if a DebugPolicy selects it, it reports the workload blind"
        )
    warnings.extend(admission.warnings)
    state = memo.get("state")
    if state is not None:
        result = "injected" if admission.patch else "unchanged"
        state.metrics.admission_requests.labels(namespace=namespace, result=result).inc()
    if admission.patch:
        ops = admission.patch
        patch.fns.append(lambda target: _apply(target, ops))


def _apply(target: Any, ops: list[dict[str, Any]]) -> None:
    import jsonpatch

    jsonpatch.apply_patch(target, ops, in_place=True)


def register(config: OperatorConfig) -> None:
    """Register attach mode's workload indices and pod webhook handler (before kopf runs: kopf sets up its
    indices before the startup handlers, so they cannot be added later). `serve` must follow at startup."""
    registry = kopf.get_default_registry()
    kinds = workloads.enabled(config.workload_kinds)
    for adapter in workloads.readable(kinds):
        kopf.index(adapter.group, adapter.version, adapter.plural, id=index_id(adapter), registry=registry)(
            _index_workload
        )
    kopf.on.mutate(
        "", "v1", "pods",
        id=HANDLER_ID, operations=["CREATE"], ignore_failures=True, side_effects=False,
        labels={debugpolicy.WATCH_LABEL: "true"}, registry=registry,
    )(mutate_pod)  # fmt: skip
    log.info("attach mode: pods of %s", ", ".join(map(repr, kinds)))


def serve(settings: kopf.OperatorSettings, config: OperatorConfig) -> None:
    """Serve the pod webhook (startup): HTTPS on the chart's certificate, re-read when it is renewed."""
    settings.admission.managed = None
    settings.admission.server = kopf.WebhookServer(
        addr="0.0.0.0",
        port=config.attach_port,
        certfile=f"{config.attach_cert_dir}/{TLS_CERT}",
        pkeyfile=f"{config.attach_cert_dir}/{TLS_KEY}",
    )
