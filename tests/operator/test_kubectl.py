"""kubectl against the emulated API server: apply the example manifests, see the printer columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, eventually
from tests.operator.conftest import OperatorProcess

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


async def test_kubectl_apply_and_get_show_the_printer_columns(
    kube: KubeEnv, operator_runner: OperatorProcess
) -> None:
    out = await kube.kubectl("apply", "--validate=false", "-f", str(ROOT / "examples" / "debugjob.yaml"))
    assert "debugjob.trainguard.dev/mnist created" in out
    await kube.kubectl(
        "apply", "--validate=false", "-f", str(ROOT / "examples" / "debugjob-gpu-webhooks.yaml")
    )
    await eventually(lambda: kube.get("batch/v1/jobs", "default", "mnist"), what="the example's Job")
    await eventually(
        lambda: ((kube.get(DEBUGJOB_RESOURCE, "default", "llm-pretrain") or {}).get("status") or {}).get(
            "jobName"
        ),
        what="the GPU example reconciled",
    )
    await kube.patch(DEBUGJOB_RESOURCE, "default", "mnist", {"status": {"reports": {"rank-00000": {
        "lastStep": 1200, "rules": [{"name": "exploding_tensor", "state": "IssuesFound", "step": 1150}]}}}},
        subresource="status")  # fmt: skip
    await eventually(lambda: kube.get(DEBUGJOB_RESOURCE, "default", "mnist")["status"].get("phase") == "Stopped",  # type: ignore[index]
                     what="mnist stopped")  # fmt: skip

    table = await kube.kubectl("get", "dj")
    header, *rows = [line.split() for line in table.strip().splitlines()]
    assert header == ["NAME", "PHASE", "RULE", "STEP", "WORKERS", "AGE"]
    by_name = {row[0]: row for row in rows}
    assert by_name["mnist"][1:5] == ["Stopped", "exploding_tensor", "1200", "1"]
    assert by_name["llm-pretrain"][1] == "Pending" and by_name["llm-pretrain"][-2] == "4"

    wide = await kube.kubectl("get", "debugjobs", "mnist", "-o", "wide")
    assert wide.splitlines()[0].split()[-1] == "JOB" and wide.splitlines()[1].split()[-1] == "mnist"
    phase = await kube.kubectl(
        "get", "dj", "mnist", "-o", "jsonpath={.status.conditions[?(@.type=='Stopped')].reason}"
    )
    assert phase == "RuleTriggered"
