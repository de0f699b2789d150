"""The batch/v1 Job: the pods of a DebugJob, and the Job under a JobSet or a TrainJob.

Suspending a Job deletes its active pods with their grace period, without counting them as failures,
and resuming it starts them again (kubernetes.io/docs/concepts/workloads/controllers/job/#suspending-a-job).
Since Kubernetes 1.31 the Job controller first sets FailureTarget or SuccessCriteriaMet, and Failed or
Complete only once every pod is gone: the outcome is decided at the first, so it counts at once. The
rank of an Indexed Job's pod is its completion index.
"""

from __future__ import annotations

from typing import ClassVar

from trainguard.operator.workloads import declaration

FAILED_CONDITIONS = ("Failed", "FailureTarget")
COMPLETE_CONDITIONS = ("Complete", "SuccessCriteriaMet")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
"""The Job controller's label on every pod of a Job: the Job's uid (no two Jobs share it, unlike a name)."""


class BatchJob(declaration.WorkloadKind):
    api_version: ClassVar[str] = "batch/v1"
    kind: ClassVar[str] = "Job"
    plural: ClassVar[str] = "jobs"
    chart_key: ClassVar[str | None] = None
    suspend_path: ClassVar[tuple[str, ...]] = ("spec", "suspend")
    permissions: ClassVar[tuple[declaration.Permission, ...]] = (
        declaration.supervise(
            "batch",
            "jobs",
            "read for its state and its pods' owners, watched (kopf), suspended to stop it and resumed",
        ),
    )

    def state(self, obj: declaration.Object) -> declaration.WorkloadState:
        status = obj.get("status") or {}
        return declaration.WorkloadState(
            suspended=self.is_suspended(obj),
            finished=declaration.outcome_of(obj, succeeded=COMPLETE_CONDITIONS, failed=FAILED_CONDITIONS),
            pods=declaration.PodCounts(
                active=int(status.get("active") or 0),
                ready=int(status.get("ready") or 0),
                terminating=int(status.get("terminating") or 0),
                succeeded=int(status.get("succeeded") or 0),
                failed=int(status.get("failed") or 0),
            ),
            start_time=status.get("startTime"),
            completion_time=status.get("completionTime"),
        )

    def pod_selector(self, obj: declaration.Object) -> dict[str, str]:
        return {CONTROLLER_UID_LABEL: str(obj["metadata"]["uid"])}

    def pod_rank(self, pod: declaration.Object, obj: declaration.Object) -> int | None:
        return declaration.completion_index(pod)


KIND = BatchJob()
