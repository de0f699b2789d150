"""Pure builders: the Job, sidecar, env, Service, ConfigMap and RBAC a DebugJob renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from trainguard.api import debugjob
from trainguard.api.sidecar_config import SidecarConfig
from trainguard.operator import build

ROOT = Path(__file__).resolve().parents[2]
OWNER = build.Owner(name="llm", namespace="ml", uid="1234-abcd", labels={})
IMAGE = "registry.local/trainguard:1.0"


def _gpu_spec(**extra: Any) -> debugjob.DebugJobSpec:
    doc = yaml.safe_load((ROOT / "examples" / "debugjob-gpu-webhooks.yaml").read_text())
    doc["spec"].update(extra)
    return debugjob.DebugJobSpec.model_validate(doc["spec"])


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def _trainer(job: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in job["spec"]["template"]["spec"]["containers"] if c["name"] == "trainer")


def test_job_is_indexed_with_one_pod_per_worker() -> None:
    job = build.build_job(_gpu_spec(), OWNER, default_image=IMAGE)
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 4
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 259200
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400
    pod = job["spec"]["template"]["spec"]
    assert pod["subdomain"] == "llm" and pod["restartPolicy"] == "Never"
    assert pod["terminationGracePeriodSeconds"] == 120


def test_gpu_requests_node_selector_tolerations_and_labels_pass_through() -> None:
    job = build.build_job(_gpu_spec(), OWNER, default_image=IMAGE)
    pod = job["spec"]["template"]
    assert _trainer(job)["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert pod["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert pod["metadata"]["labels"] == {"team": "research", build.LABEL_DEBUGJOB: "llm"}
    assert {"name": "shm", "mountPath": "/dev/shm"} in _trainer(job)["volumeMounts"]


def test_kueue_queue_label_is_copied_and_the_job_starts_suspended() -> None:
    owner = build.Owner(name="llm", namespace="ml", uid="u", labels={build.KUEUE_QUEUE_LABEL: "gpu-queue"})
    job = build.build_job(_gpu_spec(), owner, default_image=IMAGE)
    assert job["metadata"]["labels"][build.KUEUE_QUEUE_LABEL] == "gpu-queue"
    assert job["spec"]["suspend"] is True
    assert build.build_job(_gpu_spec(), OWNER, default_image=IMAGE)["spec"]["suspend"] is False


def test_trainer_gets_rendezvous_and_hook_environment() -> None:
    env = _env(_trainer(build.build_job(_gpu_spec(), OWNER, default_image=IMAGE)))
    index = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == "llm-0.llm"
    assert env["MASTER_PORT"] == env["PET_MASTER_PORT"] == "23456"
    assert env["RANK"] == env["PET_NODE_RANK"] == index
    assert env["WORLD_SIZE"] == "32" and env["PET_NNODES"] == "4" and env["PET_NPROC_PER_NODE"] == "8"
    assert env["TRAINGUARD_OUT"] == "s3://trainguard-runs/llm/ml/llm/1234-abcd/"
    assert env["TRAINGUARD_SAVE_INTERVAL"] == "50"
    assert env["TRAINGUARD_COLLECTIONS"] == "weights,gradients,losses,metrics"
    assert env["TRAINGUARD_STOP_FILE"] == "/var/run/trainguard/stop"
    assert env["AWS_ENDPOINT_URL"] == "https://minio.storage.svc:9000"


def test_credentials_come_from_the_secret_by_reference_only() -> None:
    spec = _gpu_spec(capture={"uri": "s3://bkt/x", "secretRef": {"name": "s3", "accessKeyIdKey": "id"}})
    job = build.build_job(spec, OWNER, default_image=IMAGE)
    for container in (_trainer(job), job["spec"]["template"]["spec"]["initContainers"][-1]):
        env = _env(container)
        assert env["AWS_ACCESS_KEY_ID"] == {"secretKeyRef": {"name": "s3", "key": "id"}}
        assert env["AWS_SECRET_ACCESS_KEY"] == {
            "secretKeyRef": {"name": "s3", "key": "AWS_SECRET_ACCESS_KEY"}
        }


def test_user_environment_wins_over_ours() -> None:
    spec = _gpu_spec()
    spec.template["spec"]["containers"][0]["env"] = [{"name": "MASTER_PORT", "value": "1"}]
    env = _trainer(build.build_job(spec, OWNER, default_image=IMAGE))["env"]
    assert [e["value"] for e in env if e["name"] == "MASTER_PORT"] == ["1"]


def test_evaluator_is_a_native_sidecar_with_a_startup_probe_and_restricted_security() -> None:
    job = build.build_job(_gpu_spec(), OWNER, default_image=IMAGE)
    sidecar = job["spec"]["template"]["spec"]["initContainers"][-1]
    assert sidecar["name"] == build.SIDECAR_NAME and sidecar["restartPolicy"] == "Always"
    assert sidecar["image"] == IMAGE
    assert sidecar["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert sidecar["ports"] == [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]
    sc = sidecar["securityContext"]
    assert sc["runAsNonRoot"] and not sc["allowPrivilegeEscalation"] and sc["readOnlyRootFilesystem"]
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert sidecar["resources"] == {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"memory": "2Gi"},
    }
    mounts = {m["mountPath"] for m in sidecar["volumeMounts"]}
    assert {"/etc/trainguard", "/var/run/trainguard", "/tmp", build.TOKEN_DIR} <= mounts
    trainer_mounts = {m["mountPath"]: m for m in _trainer(job)["volumeMounts"]}
    assert trainer_mounts["/var/run/trainguard"]["readOnly"] is True
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes[build.STOP_VOLUME]["emptyDir"]["medium"] == "Memory"
    assert volumes[build.CONFIG_VOLUME]["configMap"]["name"] == "llm-trainguard"


def test_only_the_sidecar_gets_a_service_account_token() -> None:
    job = build.build_job(_gpu_spec(), OWNER, default_image=IMAGE)
    pod = job["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False, "no container gets the token by default"
    token_mounts = {
        c["name"]: [m for m in c.get("volumeMounts") or [] if m["name"] == build.TOKEN_VOLUME]
        for c in pod["containers"] + pod["initContainers"]
    }
    assert token_mounts.pop(build.SIDECAR_NAME) == [
        {
            "name": build.TOKEN_VOLUME,
            "mountPath": "/var/run/secrets/trainguard.dev/serviceaccount",
            "readOnly": True,
        }
    ]
    assert all(mounts == [] for mounts in token_mounts.values()), token_mounts
    (volume,) = [v for v in pod["volumes"] if v["name"] == build.TOKEN_VOLUME]
    sources = volume["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}
    assert {"key": "ca.crt", "path": "ca.crt"} in sources[1]["configMap"]["items"]
    # The sidecar's client reads the token from that mount (KUBECONFIG aside).
    config = build.build_sidecar_config(_gpu_spec(), OWNER)
    assert config.debugjob is not None and config.debugjob.service_account_dir == build.TOKEN_DIR
    sa = build.build_serviceaccount(_gpu_spec(), OWNER)
    assert sa["automountServiceAccountToken"] is False


def test_a_template_that_asks_for_the_token_keeps_its_choice() -> None:
    spec = _gpu_spec()
    spec.template["spec"]["automountServiceAccountToken"] = True
    job = build.build_job(spec, OWNER, default_image=IMAGE)
    assert job["spec"]["template"]["spec"]["automountServiceAccountToken"] is True


def test_configmap_holds_a_sidecar_config_the_evaluator_can_load() -> None:
    cm = build.build_configmap(_gpu_spec(), OWNER)
    config = SidecarConfig.model_validate(yaml.safe_load(cm["data"]["sidecar.yaml"]))
    assert config.run_uri == "s3://trainguard-runs/llm/ml/llm/1234-abcd/"
    assert config.rank is None and config.stop_file == build.STOP_FILE and config.metrics_port == 9400
    assert config.debugjob is not None and config.debugjob.uid == "1234-abcd"
    assert [r.key for r in config.rules] == ["exploding_tensor", "loss-spike", "attention-entropy"]
    assert yaml.safe_load(cm["data"]["rules.yaml"])["rules"][2]["params"] == {"min_entropy": 0.5}


def test_each_pods_sidecar_follows_every_process_of_its_node() -> None:
    # torchrun's processes write global ranks node_rank * nproc + local_rank: a pod's sidecar
    # must follow all nprocPerNode of them, not only rank = its completion index.
    spec = _gpu_spec(nprocPerNode=4)
    config = build.build_sidecar_config(spec, OWNER)
    assert config.ranks_per_pod == 4 and config.rank is None
    assert [config.pod_ranks(i) for i in range(spec.workers)] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15],
    ]  # fmt: skip
    cm = build.build_configmap(spec, OWNER)
    assert SidecarConfig.model_validate(yaml.safe_load(cm["data"]["sidecar.yaml"])).ranks_per_pod == 4


def test_role_allows_only_this_debugjobs_status() -> None:
    role = build.build_role(_gpu_spec(), OWNER)
    for rule in role["rules"]:
        assert rule["resourceNames"] == ["llm"] and rule["apiGroups"] == ["trainguard.dev"]
        assert set(rule["verbs"]) <= {"get", "patch"}
    assert {r["resources"][0]: r["verbs"] for r in role["rules"]} == {
        "debugjobs": ["get"],
        "debugjobs/status": ["get", "patch"],
    }


def test_rolebinding_binds_the_pods_service_account() -> None:
    custom = build.build_rolebinding(_gpu_spec(), OWNER)
    assert custom["subjects"] == [{"kind": "ServiceAccount", "name": "llm-training", "namespace": "ml"}]
    spec = _gpu_spec()
    del spec.template["spec"]["serviceAccountName"]
    children = build.build_children(spec, OWNER, default_image=IMAGE)
    assert children[0]["kind"] == "ServiceAccount"
    binding = next(c for c in children if c["kind"] == "RoleBinding")
    assert binding["subjects"][0]["name"] == "llm-trainguard"
    job = next(c for c in children if c["kind"] == "Job")
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "llm-trainguard"


def test_every_child_is_owned_and_labelled() -> None:
    for child in build.build_children(_gpu_spec(), OWNER, default_image=IMAGE):
        meta = child["metadata"]
        assert meta["namespace"] == "ml" and meta["labels"][build.LABEL_DEBUGJOB] == "llm"
        (ref,) = meta["ownerReferences"]
        assert ref == {
            "apiVersion": "trainguard.dev/v1alpha1", "kind": "DebugJob", "name": "llm", "uid": "1234-abcd",
            "controller": True,
        }  # fmt: skip


def test_service_is_headless_and_publishes_unready_ranks() -> None:
    svc = build.build_service(_gpu_spec(), OWNER)
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {build.LABEL_DEBUGJOB: "llm"}
    metrics = next(p for p in svc["spec"]["ports"] if p["name"] == "metrics")
    assert metrics["targetPort"] == 9400, "a number: named ports of init containers resolve only since 1.32"


def test_every_child_is_a_valid_kubernetes_1_29_object() -> None:
    for child in build.build_children(_gpu_spec(), OWNER, default_image=IMAGE):
        kubernetes_validate.validate(child, "1.29", strict=True)


def test_missing_training_container_is_named_in_the_error() -> None:
    spec = _gpu_spec(containerName="worker")
    with pytest.raises(build.TemplateError, match=r"no container named 'worker' \(found: trainer\)"):
        build.build_job(spec, OWNER, default_image=IMAGE)
