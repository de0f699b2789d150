"""Pure builders: a DebugJob in, the manifests it owns out (Job, Service, ConfigMap, RBAC, sidecar).

No API calls and no clock: each function takes the validated spec and the owner's identity and
returns a plain dict, so tests diff manifests directly and handlers stay thin. Every child
carries an owner reference to its DebugJob (controller) and the `trainguard.dev/debugjob` label;
the operator relies on both to find and delete children. The references do not set
blockOwnerDeletion: the operator's finalizer deletes the children itself, and with the flag the
OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift) would refuse every child
unless the operator may update DebugJob finalizers, and for up to 30 s after the CRD is installed
even then (the plugin learns new kinds every 30 s).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import yaml

from trainguard.api import debugjob
from trainguard.api.rules_config import RulesConfig
from trainguard.api.sidecar_config import DebugJobRef, SidecarConfig
from trainguard.capture import config as capture_config
from trainguard.operator.workloads import batch_job, declaration

LABEL_DEBUGJOB = f"{debugjob.GROUP}/debugjob"
"""Label on every child (and on the pods): the owning DebugJob's name."""
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
KUEUE_QUEUE_LABEL = declaration.KUEUE_QUEUE_LABEL
"""Copied from the DebugJob to the Job; the Job is then created suspended and Kueue admits it."""
COMPLETION_INDEX_ANNOTATION = declaration.COMPLETION_INDEX
WORKLOAD = batch_job.KIND
"""The kind of workload that runs a DebugJob's pods: an Indexed batch Job, stopped and read through its adapter."""

SIDECAR_NAME = "trainguard-evaluator"
SIDECAR_PORT = 9400
SIDECAR_PORT_NAME = "metrics"
RENDEZVOUS_PORT_NAME = "rendezvous"
CONFIG_DIR = "/etc/trainguard"
SIDECAR_CONFIG_KEY = "sidecar.yaml"
RULES_KEY = "rules.yaml"
STOP_DIR = "/var/run/trainguard"
STOP_FILE = f"{STOP_DIR}/stop"
STOP_VOLUME = "trainguard-stop"
CONFIG_VOLUME = "trainguard-config"
SIDECAR_TMP_VOLUME = "trainguard-tmp"
TOKEN_VOLUME = "trainguard-token"
TOKEN_DIR = f"/var/run/secrets/{debugjob.GROUP}/serviceaccount"
"""Where the sidecar alone finds its ServiceAccount token (and ca.crt, namespace): no other container mounts it."""
TOKEN_EXPIRATION_SECONDS = 3600
"""Lifetime of the projected token; the kubelet renews it at 80% and the sidecar's client re-reads it."""
SIDECAR_USER_ID = 10001
"""Numeric non-root user of the sidecar (the image's `trainguard` user); restricted PSS needs a number."""


@dataclasses.dataclass(frozen=True)
class Owner:
    """Identity of the DebugJob that owns the children."""

    name: str
    namespace: str
    uid: str
    labels: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_body(cls, body: Any) -> Owner:
        meta = body["metadata"]
        return cls(
            name=meta["name"],
            namespace=meta["namespace"],
            uid=meta["uid"],
            labels=dict(meta.get("labels") or {}),
        )


@dataclasses.dataclass(frozen=True)
class Names:
    """Names of the children of one DebugJob (Job and Service share the DebugJob's name: pod DNS needs it)."""

    job: str
    service: str
    config_map: str
    service_account: str
    role: str
    role_binding: str

    @classmethod
    def of(cls, debugjob_name: str) -> Names:
        aux = f"{debugjob_name}-trainguard"
        return cls(
            job=debugjob_name,
            service=debugjob_name,
            config_map=aux,
            service_account=aux,
            role=aux,
            role_binding=aux,
        )


def run_uri(spec: debugjob.DebugJobSpec, owner: Owner) -> str:
    """Return the run root the hook writes to: `<capture.uri>/<namespace>/<debugjob>/<uid>/`."""
    return f"{spec.capture.uri}/{owner.namespace}/{owner.name}/{owner.uid}/"


def _metadata(owner: Owner, name: str, *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": owner.namespace,
        "labels": {LABEL_DEBUGJOB: owner.name, LABEL_MANAGED_BY: "trainguard", **(labels or {})},
        "ownerReferences": [
            {
                "apiVersion": debugjob.API_VERSION,
                "kind": debugjob.KIND,
                "name": owner.name,
                "uid": owner.uid,
                "controller": True,
            }
        ],
    }


def build_sidecar_config(spec: debugjob.DebugJobSpec, owner: Owner) -> SidecarConfig:
    """Return the evaluator's configuration; the ranks come from the pod's RANK at run time.

    Each pod runs `nprocPerNode` processes with global ranks `index * n + local_rank`, so its
    sidecar follows all of them (`ranks_per_pod`); one stop file serves the whole pod.
    """
    return SidecarConfig(
        run_uri=run_uri(spec, owner),
        rank=None,
        ranks_per_pod=spec.nproc_per_node,
        world_size=spec.workers * spec.nproc_per_node,
        store=spec.capture.store_settings(),
        rules=list(spec.rules),
        metrics_port=SIDECAR_PORT,
        stop_file=STOP_FILE,
        debugjob=DebugJobRef(
            namespace=owner.namespace, name=owner.name, uid=owner.uid, service_account_dir=TOKEN_DIR
        ),
    )


def build_configmap(spec: debugjob.DebugJobSpec, owner: Owner) -> dict[str, Any]:
    """Return the ConfigMap with `sidecar.yaml` (SidecarConfig) and `rules.yaml` (the rules file)."""
    sidecar = build_sidecar_config(spec, owner).model_dump(mode="json", exclude_none=True)
    rules = RulesConfig(rules=list(spec.rules)).model_dump(mode="json", exclude_none=True)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(owner, Names.of(owner.name).config_map),
        "data": {
            SIDECAR_CONFIG_KEY: yaml.safe_dump(sidecar, sort_keys=False),
            RULES_KEY: yaml.safe_dump(rules, sort_keys=False),
        },
    }


def build_service(spec: debugjob.DebugJobSpec, owner: Owner) -> dict[str, Any]:
    """Return the headless Service that gives each rank a stable DNS name (`<job>-<index>.<service>`)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(owner, Names.of(owner.name).service),
        "spec": {
            "clusterIP": "None",
            # Ranks must resolve each other before any of them is ready, or rendezvous never starts.
            "publishNotReadyAddresses": True,
            "selector": {LABEL_DEBUGJOB: owner.name},
            "ports": [
                {"name": RENDEZVOUS_PORT_NAME, "port": spec.master_port, "targetPort": spec.master_port},
                # By number: Kubernetes before 1.32 resolves named ports of regular containers only, and
                # the evaluator is a native sidecar (an init container).
                {"name": SIDECAR_PORT_NAME, "port": SIDECAR_PORT, "targetPort": SIDECAR_PORT},
            ],
        },
    }


def build_serviceaccount(spec: debugjob.DebugJobSpec, owner: Owner) -> dict[str, Any]:
    """Return the pods' ServiceAccount (used unless the template names its own); its token is never automounted."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(owner, Names.of(owner.name).service_account),
        "automountServiceAccountToken": False,
    }


def build_role(spec: debugjob.DebugJobSpec, owner: Owner) -> dict[str, Any]:
    """Return a Role that lets the pods read this DebugJob and patch its status, and nothing else."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(owner, Names.of(owner.name).role),
        "rules": [
            # The sidecar reads its DebugJob once to check the uid it was configured with.
            {
                "apiGroups": [debugjob.GROUP],
                "resources": [debugjob.PLURAL],
                "resourceNames": [owner.name],
                "verbs": ["get"],
            },
            # ... and merge-patches status.reports["rank-NNNNN"] with each verdict transition.
            {
                "apiGroups": [debugjob.GROUP],
                "resources": [f"{debugjob.PLURAL}/status"],
                "resourceNames": [owner.name],
                "verbs": ["get", "patch"],
            },
        ],
    }


def pod_service_account(spec: debugjob.DebugJobSpec, owner: Owner) -> str:
    """Return the ServiceAccount the pods run as: the template's own (e.g. for IRSA) or ours."""
    named = (spec.template.get("spec") or {}).get("serviceAccountName")
    return str(named) if named else Names.of(owner.name).service_account


def build_rolebinding(spec: debugjob.DebugJobSpec, owner: Owner) -> dict[str, Any]:
    """Return the RoleBinding of the Role to the pods' ServiceAccount."""
    names = Names.of(owner.name)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(owner, names.role_binding),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.role},
        "subjects": [
            {"kind": "ServiceAccount", "name": pod_service_account(spec, owner), "namespace": owner.namespace}
        ],
    }


def _rank_env(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"}},
    }


def store_env(cap: debugjob.CaptureSpec) -> list[dict[str, Any]]:
    """The variables the run's storage backend declares, shared by the trainer and the sidecar: its settings by
    value (s3: `AWS_ENDPOINT_URL`, `AWS_REGION`), its credentials as references to the Secret (never copied)."""
    backend = cap.backend()
    env: list[dict[str, Any]] = [
        {"name": name, "value": value} for name, value in backend.env(cap.store_settings()).items()
    ]
    if cap.secret_ref is not None:
        ref = cap.secret_ref
        for credential in backend.credentials:
            env.append(
                {
                    "name": credential.env,
                    "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key_of(credential)}},
                }
            )
    return env


def trainer_env(spec: debugjob.DebugJobSpec, owner: Owner) -> list[dict[str, Any]]:
    """Return the rendezvous (`MASTER_*`, `RANK`, `WORLD_SIZE`, `PET_*`), the hook's `TRAINGUARD_*` variables
    (named by `capture.config.to_env`, which `CaptureConfig.from_env` reads back) and the store's."""
    names = Names.of(owner.name)
    master = f"{names.job}-0.{names.service}"
    env: list[dict[str, Any]] = [
        {"name": "MASTER_ADDR", "value": master},
        {"name": "MASTER_PORT", "value": str(spec.master_port)},
        {"name": "WORLD_SIZE", "value": str(spec.workers * spec.nproc_per_node)},
        _rank_env("RANK"),
        _rank_env("PET_NODE_RANK"),
        {"name": "PET_NNODES", "value": str(spec.workers)},
        {"name": "PET_NPROC_PER_NODE", "value": str(spec.nproc_per_node)},
        {"name": "PET_MASTER_ADDR", "value": master},
        {"name": "PET_MASTER_PORT", "value": str(spec.master_port)},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    return env + hook_env(spec.capture, out=run_uri(spec, owner), run_id=owner.uid)


def hook_env(cap: debugjob.CaptureSpec, *, out: str, run_id: str) -> list[dict[str, Any]]:
    """Return the hook's `TRAINGUARD_*` variables (named by `capture.config.to_env`, which
    `CaptureConfig.from_env` reads back) and the store's, for a trainer writing its run to `out`."""
    hook = capture_config.to_env(
        out=out,
        run_id=run_id,
        save_interval=cap.save_interval,
        stop_file=STOP_FILE,
        collections=cap.collections or None,
    )
    return [{"name": name, "value": value} for name, value in hook.items()] + store_env(cap)


def merge_env(ours: list[dict[str, Any]], theirs: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Keep every variable the user set; add ours that the user did not set (the user wins on a clash)."""
    theirs = list(theirs or [])
    taken = {e.get("name") for e in theirs}
    return [e for e in ours if e["name"] not in taken] + theirs


def build_sidecar_container(
    spec: debugjob.DebugJobSpec, owner: Owner, *, default_image: str
) -> dict[str, Any]:
    """Return the evaluator as a native sidecar (an init container with `restartPolicy: Always`); its RANK
    is the pod's completion index."""
    return sidecar_container(
        spec.evaluator, spec.capture, rank_env=_rank_env("RANK"), default_image=default_image
    )


def sidecar_container(
    ev: debugjob.EvaluatorSpec,
    cap: debugjob.CaptureSpec,
    *,
    rank_env: dict[str, Any],
    default_image: str,
) -> dict[str, Any]:
    """Return the evaluator as a native sidecar with its `RANK` variable (the pod's node rank) as given:
    DebugJobs' pods and the pods the attach webhook injects into get the same container."""
    container: dict[str, Any] = {
        "name": SIDECAR_NAME,
        "image": ev.image or default_image,
        "restartPolicy": "Always",
        "command": ["trainguard", "sidecar", "--config", f"{CONFIG_DIR}/{SIDECAR_CONFIG_KEY}"],
        "env": [rank_env, {"name": "PYTHONUNBUFFERED", "value": "1"}, *store_env(cap)],
        "ports": [{"name": SIDECAR_PORT_NAME, "containerPort": SIDECAR_PORT, "protocol": "TCP"}],
        # The trainer starts once the evaluator follows the run, so no early step goes unchecked.
        "startupProbe": {
            "httpGet": {"path": "/healthz", "port": SIDECAR_PORT_NAME},
            "periodSeconds": 1,
            "failureThreshold": 120,
        },
        "resources": json.loads(json.dumps(ev.resources)),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": SIDECAR_USER_ID,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": STOP_VOLUME, "mountPath": STOP_DIR},
            {"name": SIDECAR_TMP_VOLUME, "mountPath": "/tmp"},
            {"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True},
        ],
    }
    if ev.image_pull_policy:
        container["imagePullPolicy"] = ev.image_pull_policy
    return container


def build_token_volume() -> dict[str, Any]:
    """Return the projected volume with the pod's ServiceAccount token, as the kubelet's own kube-api-access has.

    Only the sidecar mounts it (at `TOKEN_DIR`). The token is bound to the pod, so the API server
    knows which pod calls (`authentication.kubernetes.io/pod-name`), and the chart's admission
    policy lets that pod write its own ranks' reports and nothing else.
    """
    namespace = {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
    return {
        "name": TOKEN_VOLUME,
        "projected": {
            "defaultMode": 0o444,
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_EXPIRATION_SECONDS}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [namespace]}},
            ],
        },
    }


STOP_MOUNT = {"name": STOP_VOLUME, "mountPath": STOP_DIR, "readOnly": True}
"""The training container's view of the stop flag's volume."""


def sidecar_volumes(config_source: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the volumes the sidecar mounts: the stop flag's, its config (from `config_source`: a ConfigMap,
    or for attached pods a downward-API file), its /tmp and its token."""
    return [
        {"name": STOP_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
        {"name": CONFIG_VOLUME, **config_source},
        {"name": SIDECAR_TMP_VOLUME, "emptyDir": {"sizeLimit": "256Mi"}},
        build_token_volume(),
    ]


class TemplateError(ValueError):
    """The pod template cannot be rendered (e.g. the training container is missing)."""


class InvalidName(ValueError):
    """The DebugJob's name cannot name its children (a dot, or too long for the ranks' hostnames)."""


def build_job(spec: debugjob.DebugJobSpec, owner: Owner, *, default_image: str) -> dict[str, Any]:
    """Return the Indexed Job: the user's pod template plus rendezvous env, the hook's env and the sidecar."""
    names = Names.of(owner.name)
    template = json.loads(json.dumps(spec.template))  # deep copy, plain JSON
    pod_meta = template.setdefault("metadata", {})
    pod_spec = template.setdefault("spec", {})
    containers = pod_spec.get("containers") or []
    trainer = next((c for c in containers if c.get("name") == spec.container_name), None)
    if trainer is None:
        found = ", ".join(str(c.get("name")) for c in containers) or "none"
        raise TemplateError(
            f"spec.template.spec.containers has no container named {spec.container_name!r} (found: {found}); "
            f"name the training container {spec.container_name!r} or set spec.containerName"
        )
    trainer["env"] = merge_env(trainer_env(spec, owner), trainer.get("env"))
    trainer["volumeMounts"] = [*(trainer.get("volumeMounts") or []), dict(STOP_MOUNT)]
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), LABEL_DEBUGJOB: owner.name}
    pod_spec["subdomain"] = names.service
    pod_spec.setdefault("restartPolicy", "Never")
    pod_spec["serviceAccountName"] = pod_service_account(spec, owner)
    # The token that may patch the DebugJob's status goes to the sidecar alone (TOKEN_VOLUME), not to user
    # code; a template that sets this itself (its trainer calls the API) keeps its choice.
    pod_spec.setdefault("automountServiceAccountToken", False)
    pod_spec["terminationGracePeriodSeconds"] = spec.actions.stop.grace_period_seconds
    pod_spec["initContainers"] = [
        *(pod_spec.get("initContainers") or []),
        build_sidecar_container(spec, owner, default_image=default_image),
    ]
    pod_spec["volumes"] = [
        *(pod_spec.get("volumes") or []),
        *sidecar_volumes({"configMap": {"name": names.config_map}}),
    ]

    queue = owner.labels.get(KUEUE_QUEUE_LABEL)
    job_labels = {KUEUE_QUEUE_LABEL: queue} if queue else {}
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": spec.workers,
        "parallelism": spec.workers,
        # With a queue, Kueue admits the Job by unsuspending it.
        "suspend": bool(spec.suspend or queue),
        "template": template,
    }
    policy = spec.run_policy
    if policy.backoff_limit is not None:
        job_spec["backoffLimit"] = policy.backoff_limit
    if policy.active_deadline_seconds is not None:
        job_spec["activeDeadlineSeconds"] = policy.active_deadline_seconds
    if policy.ttl_seconds_after_finished is not None:
        job_spec["ttlSecondsAfterFinished"] = policy.ttl_seconds_after_finished
    return {
        "apiVersion": WORKLOAD.api_version,
        "kind": WORKLOAD.kind,
        "metadata": _metadata(owner, names.job, labels=job_labels),
        "spec": job_spec,
    }


def build_children(spec: debugjob.DebugJobSpec, owner: Owner, *, default_image: str) -> list[dict[str, Any]]:
    """Return every child in creation order: RBAC and config before the Job that needs them."""
    problem = debugjob.name_problem(owner.name, spec.workers)
    if problem is not None:
        raise InvalidName(problem)
    children = [
        build_role(spec, owner),
        build_rolebinding(spec, owner),
        build_configmap(spec, owner),
        build_service(spec, owner),
        build_job(spec, owner, default_image=default_image),
    ]
    if pod_service_account(spec, owner) == Names.of(owner.name).service_account:
        children.insert(0, build_serviceaccount(spec, owner))
    return children
