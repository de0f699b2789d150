"""Attach mode's pod injection: a pure function from a pod being admitted to the JSONPatch that adds the evaluator.

`admit(pod, policies=..., get=..., settings=...)` finds the pod's top-level workload with the owner walk
(`workloads.owners.walk`) over objects the operator already holds in memory (`get` reads its indices,
never the API: admission makes no API call), the first policy of the pod's namespace that selects that
workload, and the pod's node rank from its labels through the workload's adapter (`pod_rank`; an
injected container gets none of the rank env the controllers write into the template's containers).
It then adds what a DebugJob's pod gets from `build`: the evaluator as a native sidecar (its `RANK`
set to the node rank), the hook's env and the stop flag's mount on the training container, the
sidecar's volumes and bound token, the policy's stop grace period when it gives one, and annotations:
`trainguard.dev/injected` (the idempotence marker; a pod that has it is returned unchanged),
`trainguard.dev/workload` (`<kind>/<name>`, which the chart's PodMonitor turns into the `workload`
label of the evaluator's series) and the sidecar's configuration, which a downward-API volume hands
to the sidecar as its config file. A pod it cannot inject into is allowed
unchanged, with a warning saying why: admission never fails because of us. A pod whose owner of an enabled
kind is not in memory yet is answered `pending` (the caller may wait for its watch and admit it again).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

import jsonpatch
import pydantic
import yaml

from trainguard.api import debugjob, debugpolicy
from trainguard.api.sidecar_config import SidecarConfig
from trainguard.operator import build
from trainguard.operator.workloads import declaration, owners

SIDECAR_CONFIG_ANNOTATION = f"{debugjob.GROUP}/sidecar-config"
"""The injected pod's sidecar configuration (YAML): the downward-API volume makes it the sidecar's config file."""
POLICY_LABEL = f"{debugjob.GROUP}/debugpolicy"
"""Label on an injected pod: the policy that injected it (the chart's PodMonitor selects the pods by it)."""
WORKLOAD_ANNOTATION = f"{debugjob.GROUP}/workload"
"""Annotation on an injected pod: `<kind>/<name>` of its top-level workload (an annotation, since a name may be
longer than a label value may be)."""
DEFAULT_CONTAINERS = {"TrainJob": "node", "PyTorchJob": "pytorch"}
"""The training container of each kind's pods (Trainer's runtimes name it `node`, the training-operator
`pytorch`); any other kind's is its first container."""


@dataclasses.dataclass(frozen=True)
class Policy:
    """A valid DebugPolicy as the operator holds it in memory."""

    name: str
    namespace: str
    uid: str
    generation: int
    spec: debugpolicy.DebugPolicySpec

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Policy:
        """Return the policy of an object; raise `pydantic.ValidationError` for an invalid spec."""
        meta = body.get("metadata") or {}
        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            uid=str(meta.get("uid", "")),
            generation=int(meta.get("generation") or 0),
            spec=debugpolicy.DebugPolicySpec.model_validate(body.get("spec") or {}),
        )


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the operator was told that injection needs."""

    default_image: str
    kinds: tuple[declaration.WorkloadKind, ...]
    """The workload kinds enabled in the chart: the owner walk reads those, and the policies select among them."""


@dataclasses.dataclass(frozen=True)
class Admission:
    """What to answer the API server: a JSONPatch (empty: the pod unchanged) and warnings for the user."""

    patch: list[dict[str, Any]]
    warnings: tuple[str, ...] = ()
    policy: str | None = None
    """The policy that injected the pod, if one did."""
    pending: str | None = None
    """An owner of an enabled kind that `get` did not find (`Kind name`): the operator's watch has not delivered it
    yet (a JobSet's Jobs, a Job's pods are created moments after their owner). The caller may wait and admit again."""


def selecting(policies: Iterable[Policy], workload: owners.Link) -> Policy | None:
    """Return the policy that supervises the workload: the first by name of those selecting it."""
    obj = workload.obj
    meta = obj.get("metadata") or {}
    api_version = str(obj.get("apiVersion") or workload.adapter.api_version)
    for policy in sorted(policies, key=lambda p: p.name):
        if policy.spec.selects(
            api_version, workload.adapter.kind, str(meta.get("name", "")), declaration.labels_of(obj)
        ):
            return policy
    return None


def run_uri(policy: Policy, workload: owners.Link) -> str:
    """Return the run root of the workload's trainers: `<capture.uri>/<namespace>/<policy>/<kind>-<name>/<uid>/`."""
    meta = workload.obj.get("metadata") or {}
    kind = workload.adapter.kind.lower()
    return f"{policy.spec.capture.uri}/{policy.namespace}/{policy.name}/{kind}-{meta.get('name')}/{meta.get('uid')}/"


def sidecar_config(policy: Policy, workload: owners.Link) -> SidecarConfig:
    """Return the injected evaluator's configuration: this pod's ranks (from its RANK), the policy's rules."""
    return SidecarConfig(
        run_uri=run_uri(policy, workload),
        ranks_per_pod=policy.spec.nproc_per_node,
        ranks_from_env=True,
        store=policy.spec.capture.store_settings(),
        rules=list(policy.spec.rules),
        metrics_port=build.SIDECAR_PORT,
        stop_file=build.STOP_FILE,
    )


def training_container(pod_spec: Mapping[str, Any], policy: Policy, kind: str) -> int | None:
    """Return the index of the training container: the policy's `containerName`, else the kind's default."""
    containers = list(pod_spec.get("containers") or [])
    name = policy.spec.container_name or DEFAULT_CONTAINERS.get(kind)
    if name is None:
        return 0 if containers else None
    return next((i for i, c in enumerate(containers) if c.get("name") == name), None)


def injected(
    pod: declaration.Object, policy: Policy, workload: owners.Link, rank: int, *, default_image: str
) -> dict[str, Any]:
    """Return the pod with the evaluator added (a deep copy; `pod` is left as it is).

    Raises `build.TemplateError` when the pod has no training container of the expected name."""
    out: dict[str, Any] = copy.deepcopy(dict(pod))
    meta = out.setdefault("metadata", {})
    spec = out.setdefault("spec", {})
    index = training_container(spec, policy, workload.adapter.kind)
    if index is None:
        found = ", ".join(str(c.get("name")) for c in spec.get("containers") or []) or "none"
        wanted = policy.spec.container_name or DEFAULT_CONTAINERS.get(workload.adapter.kind)
        raise build.TemplateError(
            f"DebugPolicy {policy.name}: the pod has no container named {wanted!r} (found: {found}); "
            "set spec.containerName to the training container"
        )
    trainer = spec["containers"][index]
    uid = str((workload.obj.get("metadata") or {}).get("uid", ""))
    trainer["env"] = build.merge_env(
        build.hook_env(policy.spec.capture, out=run_uri(policy, workload), run_id=uid), trainer.get("env")
    )
    trainer["volumeMounts"] = [*(trainer.get("volumeMounts") or []), dict(build.STOP_MOUNT)]
    spec["initContainers"] = [
        *(spec.get("initContainers") or []),
        build.sidecar_container(
            policy.spec.evaluator,
            policy.spec.capture,
            rank_env={"name": "RANK", "value": str(rank)},
            default_image=default_image,
        ),
    ]
    config_file = {
        "path": build.SIDECAR_CONFIG_KEY,
        "fieldRef": {"fieldPath": f"metadata.annotations['{SIDECAR_CONFIG_ANNOTATION}']"},
    }
    spec["volumes"] = [
        *(spec.get("volumes") or []),
        *build.sidecar_volumes({"downwardAPI": {"items": [config_file]}}),
    ]
    config = sidecar_config(policy, workload).model_dump(mode="json", exclude_none=True)
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        debugpolicy.INJECTED_ANNOTATION: f"{policy.name}/{policy.generation}",
        SIDECAR_CONFIG_ANNOTATION: yaml.safe_dump(config, sort_keys=False),
    }
    meta["annotations"][WORKLOAD_ANNOTATION] = (
        f"{workload.adapter.kind}/{(workload.obj.get('metadata') or {}).get('name')}"
    )
    meta["labels"] = {**(meta.get("labels") or {}), POLICY_LABEL: policy.name}
    grace = policy.spec.actions.stop.grace_period_seconds
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return out


def is_injected(pod: declaration.Object) -> bool:
    """Whether the webhook already injected into the pod (its marker annotation is there)."""
    return debugpolicy.INJECTED_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def admit(
    pod: declaration.Object, *, policies: Iterable[Policy], get: owners.Get, settings: Settings
) -> Admission:
    """Return the JSONPatch that injects the evaluator into the pod, or an empty one with the reason as a warning.

    Never raises for a pod it cannot handle (malformed, not of a supervised workload, no training
    container): the pod is allowed unchanged."""
    if is_injected(pod):
        return Admission(patch=[])
    try:
        chain = owners.walk(pod, get=get, readable=settings.kinds)
    except (AttributeError, TypeError, ValueError, KeyError) as err:
        return Admission(patch=[], warnings=(f"trainguard: not injected, the pod could not be read ({err})",))
    missing = chain.beyond
    if missing is not None and any(k.matches(missing.api_version, missing.kind) for k in settings.kinds):
        return Admission(patch=[], pending=f"{missing.kind} {missing.name}")
    workload = chain.top(settings.kinds)
    if workload is None:
        return Admission(
            patch=[]
        )  # no workload the operator knows: not ours (or not yet indexed: reported blind)
    policy = selecting(policies, workload)
    if policy is None:
        return Admission(patch=[])
    name = (workload.obj.get("metadata") or {}).get("name")
    try:
        rank = workload.adapter.pod_rank(pod, workload.obj)
    except (AttributeError, TypeError, ValueError, KeyError) as err:
        return Admission(
            patch=[],
            warnings=(
                f"trainguard: not injected, the rank of this pod of {workload.adapter.kind} {name} could not be read ({err})",
            ),
        )
    if rank is None:
        return Admission(patch=[])  # an initializer's or a launcher's pod: it runs no rank
    try:
        after = injected(pod, policy, workload, rank, default_image=settings.default_image)
    except build.TemplateError as err:
        return Admission(patch=[], warnings=(f"trainguard: not injected: {err}",))
    except (AttributeError, TypeError, ValueError, KeyError, pydantic.ValidationError) as err:
        return Admission(patch=[], warnings=(f"trainguard: not injected, the pod could not be read ({err})",))
    ops: list[dict[str, Any]] = jsonpatch.JsonPatch.from_diff(json.loads(json.dumps(pod)), after).patch
    return Admission(patch=ops, policy=policy.name)
