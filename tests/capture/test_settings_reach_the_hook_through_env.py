"""The env that the operator renders into a trainer pod, and the env local mode gives CMD, read back by
the hook (`CaptureConfig.from_env`) as the settings they were rendered from.

Both sides name the variables through `capture.config`; these tests cross that line without a cluster:
the operator's pure builder renders the pod, and the downward API's values are filled in by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from trainguard.api import debugjob
from trainguard.capture.config import CaptureConfig
from trainguard.local.supervise import Supervisor
from trainguard.operator import build

OWNER = build.Owner(name="llm", namespace="ml", uid="1234-abcd")
TEMPLATE = {"spec": {"containers": [{"name": "trainer", "image": "train:1"}]}}


def _pod_env(spec: debugjob.DebugJobSpec, *, pod_index: int, secret: dict[str, str]) -> dict[str, str]:
    """The trainer container's env as the kubelet would set it: fieldRefs and secretKeyRefs resolved."""
    job = build.build_job(spec, OWNER, default_image="trainguard:1")
    trainer = job["spec"]["template"]["spec"]["containers"][0]
    env: dict[str, str] = {}
    for e in trainer["env"]:
        source: dict[str, Any] = e.get("valueFrom") or {}
        if "value" in e:
            env[e["name"]] = e["value"]
        elif "fieldRef" in source:
            env[e["name"]] = str(pod_index)  # the Job's completion index annotation
        elif "secretKeyRef" in source:
            env[e["name"]] = secret[source["secretKeyRef"]["key"]]
    return env


@pytest.mark.parametrize(
    "capture",
    [
        {"uri": "file:///runs", "saveInterval": 7, "collections": ["weights", "losses"]},
        {
            "uri": "s3://bucket/runs",
            "endpoint": "http://seaweed:8333",
            "region": "eu-west-3",
            "saveInterval": 3,
        },
    ],
)
def test_the_operators_pod_env_reads_back_as_the_debugjobs_capture_settings(capture: dict[str, Any]) -> None:
    spec = debugjob.DebugJobSpec.model_validate(
        {"workers": 2, "nprocPerNode": 1, "template": TEMPLATE, "capture": capture}
    )
    config = CaptureConfig.from_env(_pod_env(spec, pod_index=1, secret={}))
    assert config is not None
    assert config.out == build.run_uri(spec, OWNER)
    assert config.run_id == OWNER.uid
    assert config.save_interval == capture["saveInterval"]
    assert config.stop_file == build.STOP_FILE
    assert config.rank == 1 and config.world_size == 2
    expected = tuple(capture.get("collections") or CaptureConfig.model_fields["collections"].default)
    assert config.collections == expected
    assert config.store == spec.capture.store_settings()
    assert config.store == {k: capture[k] for k in ("endpoint", "region") if k in capture}


def test_the_operator_hands_the_secrets_credentials_to_the_trainer_by_reference() -> None:
    spec = debugjob.DebugJobSpec.model_validate(
        {
            "template": TEMPLATE,
            "capture": {"uri": "s3://bucket/runs", "secretRef": {"name": "s3", "accessKeyIdKey": "id"}},
        }
    )
    env = _pod_env(spec, pod_index=0, secret={"id": "AKID", "AWS_SECRET_ACCESS_KEY": "shh"})
    backend = spec.capture.backend()
    assert {c.env: env[c.env] for c in backend.credentials} == {
        "AWS_ACCESS_KEY_ID": "AKID",
        "AWS_SECRET_ACCESS_KEY": "shh",
    }


@pytest.mark.parametrize("save_interval", [None, 5])
def test_local_modes_env_reads_back_as_the_supervisors_settings(save_interval: int | None) -> None:
    sup = Supervisor(
        ["python", "train.py"],
        run_uri="file:///tmp/runs/r1",
        run_id="r1",
        save_interval=save_interval,
        env={"PATH": "/usr/bin", "AWS_ENDPOINT_URL": "http://seaweed:8333"},
    )
    config = CaptureConfig.from_env(sup.child_env("/tmp/stop-dir/stop"))
    assert config is not None
    assert (config.out, config.run_id, config.stop_file) == (
        "file:///tmp/runs/r1",
        "r1",
        "/tmp/stop-dir/stop",
    )
    assert config.save_interval == (save_interval or CaptureConfig.model_fields["save_interval"].default)
    assert config.store == {}  # an s3 setting does not apply to a file:// run


def test_local_mode_passes_the_s3_endpoint_of_its_environment_to_an_s3_run() -> None:
    sup = Supervisor(
        ["python", "train.py"],
        run_uri="s3://bucket/runs/r1",
        env={"PATH": "/usr/bin", "AWS_ENDPOINT_URL": "http://seaweed:8333"},
    )
    config = CaptureConfig.from_env(sup.child_env("/tmp/stop"))
    assert config is not None and config.store == {"endpoint": "http://seaweed:8333"}
