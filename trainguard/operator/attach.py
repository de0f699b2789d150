"""kopf glue of attach mode: DebugPolicies, the in-memory indices and the pod admission webhook.

- `validate` (create, resume, spec update): an invalid DebugPolicy gets condition Invalid with the reason and a
  Warning Event; a valid one Ready (when attach mode is on).
- `policies` (a kopf index, every DebugPolicy): the valid policies by namespace, read at admission.
- `resync_policy` (a kopf timer, every `RESYNC_SECONDS`): lists the selected workloads and their pods,
  reads each injected evaluator's findings document, /findings (`scrape_pod`; /metrics from an older one; the
  operator pulls verdicts: the pods' ServiceAccounts are the users' and get no write access to anything of
  ours), stops a workload whose evaluator reports a
  stop rule triggered (its top-level owner, or its Kueue Workload, through `control`; after
  `cooperativeSeconds` when its trainer polls the stop file), announces each finding as a DebugJob's
  are announced (`actions.rule_event`, `actions.announce`: an Event, the webhooks, with the finding's step, rank,
  severity, message and earlier sign), and writes the policy's status (`policy_status`): each workload's phase,
  first finding, step, ranks seen, and `blind` for a workload whose pods run without the evaluator.
- `register` (called by `trainguard operator --attach` before kopf starts): one index per enabled
  workload kind (slim copies of the objects, for the owner walk at admission) and the mutating handler
  on pods carrying `trainguard.dev/watch=true`; `serve` (at startup) starts kopf's webhook server on the
  certificate in `--attach-cert-dir`: cert-manager's, mounted, or, with `--attach-cert-secret`, the operator's
  own self-signed one (`keep_certificate`, `webhook_tls`), issued, renewed and trusted by the operator. The handler is `inject.admit` over those indices: no API call during
  admission.

The webhook configuration itself is the chart's (`settings.admission.managed` stays None): kopf's
managed one has a fixed 30 s timeout and no namespaceSelector.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime
import functools
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kopf
import pydantic

from trainguard.api import debugjob, debugpolicy, findings
from trainguard.api.enums import Action
from trainguard.operator import (
    actions,
    build,
    client,
    inject,
    policy_status,
    status_decision,
    webhook_tls,
    webhooks,
    workloads,
)
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
"""Longest wait for one evaluator's /findings (or /metrics): a pod that does not answer is left out of this round."""
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
    """Read what an injected pod's evaluator found: its findings document (`GET /findings`), or, from an evaluator
    that serves none (an older image) or a broken one, its /metrics (the rule and the step only; the Scrape says
    why). None when the pod has no IP yet or does not answer in time: it is read again next round, so a finding
    it holds is acted on then."""
    meta = pod.get("metadata") or {}
    where = f"the evaluator of pod {meta.get('namespace')}/{meta.get('name')}"
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return None
    host = f"[{ip}]" if ":" in str(ip) else str(ip)
    base = f"http://{host}:{port}"
    try:
        try:
            with urllib.request.urlopen(base + findings.PATH, timeout=SCRAPE_TIMEOUT_SECONDS) as answer:
                return policy_status.from_document(
                    policy_status.parse_findings(answer.read(findings.MAX_BYTES + 1))
                )
        except urllib.error.HTTPError as err:
            err.close()
            why = (
                f"{where} serves no {findings.PATH} (an image older than the operator's)"
                if err.code == 404
                else f"{where} answered {findings.PATH} with HTTP {err.code}"
            )
        except ValueError as err:
            why = f"{where} answered {findings.PATH} with {err}"
            log.warning("%s; reading the rule and the step from its /metrics instead", why)
        with urllib.request.urlopen(base + "/metrics", timeout=SCRAPE_TIMEOUT_SECONDS) as answer:
            scrape = policy_status.parse_metrics(answer.read().decode("utf-8", "replace"))
    except (OSError, ValueError) as err:
        log.info("cannot read %s (%s); trying again in %.0f s", where, err, RESYNC_SECONDS)
        return None
    return dataclasses.replace(scrape, undetailed=f"{why}; its /metrics give the rule and the step only")


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


@dataclasses.dataclass
class Acted:
    """What this operator did about one policy's findings, kept in the policy's memo between timer runs."""

    done: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    """(workload uid, rule) pairs announced (a stop's also suspended, or scheduled in `suspend_at`). After a
    restart a finding is announced once more, with the same idempotency key; a suspended workload is not
    stopped again (`policy_status.verdict`)."""
    suspend_at: dict[str, float] = dataclasses.field(default_factory=dict)
    """Workload uid -> when (Unix time) a cooperative stop suspends it, unless it ended by itself."""


def act(
    kube: client.Kube,
    policy: inject.Policy,
    observed: list[policy_status.Observed],
    *,
    acted: Acted,
    now: float,
) -> list[webhooks.RuleEvent]:
    """Stop for each workload's new stop finding, and return every new finding as a rule transition to announce.

    A stop suspends the workload's top-level owner, or deactivates its Kueue Workloads when Kueue admits it
    (`control.stop`), as for a DebugJob's Job: at once, or, when a trainer of the workload polls the stop file
    (its evaluator says so), `cooperativeSeconds` after the verdict, so that it can save its work and
    exit first. `now` is the Unix time of this round."""
    rules = status_decision.rule_actions(policy.spec.rules)
    wait = policy.spec.actions.stop.cooperative_seconds
    events: list[webhooks.RuleEvent] = []
    for o in observed:
        decided = policy_status.verdict(o, rules)
        if decided.stop is not None and (o.uid, decided.stop) not in acted.done:
            acted.done.add((o.uid, decided.stop))
            if wait and o.stop_watched():
                acted.suspend_at.setdefault(o.uid, now + wait)
                log.info(
                    "DebugPolicy %s/%s: a trainer of %s %s polls the stop file; suspending it in %d s",
                    policy.namespace, policy.name, o.adapter.kind, o.name, wait,
                )  # fmt: skip
                events.append(_event(policy, o, decided.stop, Action.STOP, now=now, suspend_in=wait))
            elif _suspend(kube, policy, o):
                events.append(_event(policy, o, decided.stop, Action.STOP, now=now))
        due = acted.suspend_at.get(o.uid)
        if due is not None and now >= due:
            del acted.suspend_at[o.uid]
            if o.running():  # else the trainers ended by themselves, or someone suspended it
                _suspend(kube, policy, o)
        for rule in decided.notify:
            if (o.uid, rule) not in acted.done:
                acted.done.add((o.uid, rule))
                events.append(_event(policy, o, rule, Action.NOTIFY, now=now))
    seen = {o.uid for o in observed}
    for uid in [u for u in acted.suspend_at if u not in seen]:  # deleted, or no longer selected
        del acted.suspend_at[uid]
    return events


def _suspend(kube: client.Kube, policy: inject.Policy, o: policy_status.Observed) -> bool:
    """Suspend the workload (or deactivate its Kueue Workloads); False when it is gone."""
    queued = o.adapter.queue_name(o.obj) is not None
    stopped = control.stop(kube, o.adapter, policy.namespace, o.name, queued=queued)
    if stopped is None:
        log.warning("DebugPolicy %s/%s: %s %s is gone; nothing to suspend", policy.namespace, policy.name,
                    o.adapter.kind, o.name)  # fmt: skip
        return False
    how = (
        f"deactivated its Kueue Workloads {', '.join(stopped.deactivated)}"
        if stopped.deactivated
        else "suspended it"
    )
    log.info("DebugPolicy %s/%s: %s %s: %s", policy.namespace, policy.name, o.adapter.kind, o.name, how)
    return True


def _event(
    policy: inject.Policy,
    o: policy_status.Observed,
    rule: str,
    action: Action,
    *,
    now: float,
    suspend_in: int | None = None,
) -> webhooks.RuleEvent:
    """The transition to announce for one rule of a workload: its first finding over the workload's evaluators,
    and for a stop the earlier sign, as for a DebugJob (`actions.rule_event`)."""
    found = o.findings()
    finding = next(f for f in found if f.name == rule)
    earlier = status_decision.earlier_sign(found, finding) if action == Action.STOP else None
    return actions.rule_event(
        finding, action=action, namespace=policy.namespace, uid=o.uid, time=webhooks.rfc3339(now),
        earlier=earlier, debugpolicy=policy.name, workload=webhooks.Workload(kind=o.adapter.kind, name=o.name),
        category=o.category(rule), suspend_in_seconds=suspend_in,
    )  # fmt: skip


@kopf.timer(*POLICIES, interval=RESYNC_SECONDS, initial_delay=5.0)
def resync_policy(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """Write the policy's workloads and its Blind condition, and act on its evaluators' findings (attach mode
    only: it lists pods): stop, and announce each finding as for a DebugJob (an Event, the webhooks)."""
    config = _config(memo)
    state = memo.get("state")
    data = dict(body)
    policy = _policy_of(data)
    if isinstance(policy, pydantic.ValidationError) and state is not None:
        meta = data.get("metadata") or {}  # an invalid policy selects nothing: no workloads to count
        state.metrics.forget_policy(str(meta.get("namespace")), str(meta.get("name")))
    if not config.attach or state is None or isinstance(policy, pydantic.ValidationError):
        return
    try:
        observed = with_scrapes(
            observe(state.kube, policy, workloads.enabled(config.workload_kinds)), scrape_pod
        )
        events = act(state.kube, policy, observed, acted=_acted(memo), now=time.time())
    except client.KubeError as err:
        raise kopf.TemporaryError(
            f"cannot read or stop the workloads of DebugPolicy {policy.name}: {err}", delay=10
        ) from err
    for event in events:
        state.metrics.actions.labels(action=event.action.value).inc()
        if event.action == Action.STOP:
            state.metrics.policy_stopped(policy.namespace, policy.name)
        actions.announce(
            state.kube, body=actions.reference(data), event=event, hooks=policy.spec.actions.notify.webhooks,
            metrics=state.metrics, emit=actions.emitter(), dispatcher=state.dispatcher,
        )  # fmt: skip
    status = policy_status.summarize(
        observed, _conditions(data), now=webhooks.now_rfc3339(), generation=policy.generation
    )
    state.metrics.observe_policy(
        policy.namespace, policy.name, workloads=status.workload_count, blind=status.blind_count
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


@kopf.on.delete(*POLICIES, optional=True)
def forget_policy(name: str | None, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    """Drop a deleted policy's metrics (no finalizer: nothing else needs cleaning up)."""
    state = memo.get("state")
    if state is not None and name and namespace:
        state.metrics.forget_policy(namespace, name)


def _acted(memo: Any) -> Acted:
    """What this operator did about the policy's findings (the memo is the policy's own)."""
    acted: Acted = memo.setdefault("attach_acted", Acted())
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
    if config.attach_cert_secret:
        kopf.on.startup(registry=registry)(keep_certificate)
        kopf.on.cleanup(registry=registry)(stop_certificate)
    log.info("attach mode: pods of %s", ", ".join(map(repr, kinds)))


def cert_target(config: OperatorConfig) -> webhook_tls.Target:
    """Return where the operator keeps the self-signed certificate (`--attach-cert-secret` is set)."""
    namespace, _, secret = str(config.attach_cert_secret).partition("/")
    return webhook_tls.Target(
        namespace=namespace, secret=secret, webhook_config=config.attach_webhook_config,
        service=config.attach_service, cert_dir=config.attach_cert_dir, days=config.attach_cert_days,
    )  # fmt: skip


async def keep_certificate(memo: kopf.Memo, **_: Any) -> None:
    """Startup (after the operator's own): have a valid certificate on disk before kopf's webhook server reads it,
    then check it every hour in the background. kopf retries this handler while the API refuses."""
    state = memo.get("state")
    if state is None:
        raise kopf.TemporaryError("the operator's state is not set up yet", delay=1)
    target = cert_target(_config(memo))
    try:
        await asyncio.to_thread(
            webhook_tls.ensure, state.kube, target, now=datetime.datetime.now(tz=datetime.timezone.utc)
        )
    except client.KubeError as err:
        raise kopf.TemporaryError(f"cannot set up the webhook certificate: {err}", delay=10) from err
    memo["attach_cert_task"] = asyncio.create_task(webhook_tls.rotate_forever(state.kube, target))


async def stop_certificate(memo: kopf.Memo, **_: Any) -> None:
    """Cleanup: stop the certificate's background check."""
    task = memo.get("attach_cert_task")
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def serve(settings: kopf.OperatorSettings, config: OperatorConfig) -> None:
    """Serve the pod webhook (startup): HTTPS on the chart's certificate, re-read when it is renewed."""
    settings.admission.managed = None
    settings.admission.server = kopf.WebhookServer(
        addr="0.0.0.0",
        port=config.attach_port,
        certfile=f"{config.attach_cert_dir}/{TLS_CERT}",
        pkeyfile=f"{config.attach_cert_dir}/{TLS_KEY}",
    )
