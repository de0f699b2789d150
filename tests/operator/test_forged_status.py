"""Status a pod could forge does not end or hide a DebugJob: the operator trusts only the final phase it wrote.

Each test plays a pod whose token can patch the status subresource (what the DebugJob's Role allows
where no admission policy narrows it): it writes a final phase or rule states of its own, then the
operator is restarted (it forgets what it wrote) and a real stop report comes in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, debugjob_manifest, eventually
from tests.operator.conftest import OperatorProcess
from trainguard.operator.handlers import FINAL_PHASE_ANNOTATION

JOBS = "batch/v1/jobs"


def _dj(kube: KubeEnv) -> dict[str, Any]:
    return kube.get(DEBUGJOB_RESOURCE, "default", "dj1") or {}


def _phase(kube: KubeEnv) -> str | None:
    return (_dj(kube).get("status") or {}).get("phase")


def _suspended(kube: KubeEnv) -> bool:
    return bool(((kube.get(JOBS, "default", "dj1") or {}).get("spec") or {}).get("suspend"))


async def _running(kube: KubeEnv, tmp_path: Path) -> None:
    await kube.create(DEBUGJOB_RESOURCE, debugjob_manifest("dj1", capture_uri=f"file://{tmp_path}/runs"))
    await eventually(lambda: kube.get(JOBS, "default", "dj1"), what="the Job")
    await kube.patch(JOBS, "default", "dj1", {"status": {"active": 1, "ready": 1}}, subresource="status")
    await eventually(lambda: _phase(kube) == "Running", what="phase Running")


async def _pod_writes(kube: KubeEnv, status: dict[str, Any]) -> None:
    await kube.patch(DEBUGJOB_RESOURCE, "default", "dj1", {"status": status}, subresource="status")


async def _nan_report(kube: KubeEnv) -> None:
    report = {"lastStep": 7, "rules": [{"name": "exploding_tensor", "state": "IssuesFound", "step": 7}]}
    await _pod_writes(kube, {"reports": {"rank-00000": report}})


async def test_a_final_phase_the_operator_did_not_write_is_ignored_after_a_restart(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await _running(kube, tmp_path)
    await operator_runner.stop()
    await _pod_writes(kube, {"phase": "Succeeded"})
    await operator_runner.start()
    await _nan_report(kube)
    await eventually(lambda: _suspended(kube), what="the Job suspended by the real report")
    await eventually(lambda: _phase(kube) == "Stopped", what="phase Stopped")
    assert _dj(kube)["metadata"]["annotations"][FINAL_PHASE_ANNOTATION] == "Stopped"


async def test_rule_states_written_by_a_pod_cannot_hide_a_stop(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await _running(kube, tmp_path)
    await operator_runner.stop()
    # Claims the stop rule already fired, so the real report would not look like a transition.
    await _pod_writes(
        kube, {"rules": [{"name": "exploding_tensor", "state": "IssuesFound", "action": "stop"}]}
    )
    await operator_runner.start()
    await _nan_report(kube)
    await eventually(lambda: _suspended(kube), what="the Job suspended")
    await eventually(lambda: _phase(kube) == "Stopped", what="phase Stopped")


async def test_the_operators_own_final_phase_survives_a_restart_and_a_forged_running_phase(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await _running(kube, tmp_path)
    await _nan_report(kube)
    await eventually(lambda: _phase(kube) == "Stopped", what="phase Stopped")
    suspends = _job_patches(kube)
    await operator_runner.stop()
    await _pod_writes(kube, {"phase": "Running"})
    await operator_runner.start()
    await _pod_writes(kube, {"reports": {"rank-00000": {"lastStep": 9}}})  # one more event to handle
    await eventually(lambda: _phase(kube) == "Stopped", what="phase Stopped again")
    # The stop patches the Job inside the handler, before the handler's status patch: none came this time.
    assert _job_patches(kube) == suspends, "no second stop"


def _job_patches(kube: KubeEnv) -> int:
    return len(
        [r for r in kube.requests("PATCH", "/namespaces/default/jobs/dj1") if "/status" not in str(r.url)]
    )
