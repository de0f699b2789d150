"""JobSet (`jobset.x-k8s.io/v1alpha2`): a set of replicated Jobs that run as one workload.

`spec.suspend` suspends every child Job, and JobSet un-suspends a suspended child while the JobSet
itself is not suspended, so the JobSet is what a stop suspends, never its Jobs (kubernetes-sigs/jobset
`pkg/controllers/jobset_controller.go`). Conditions Completed and Failed end it. A pod's rank counts
through the replicated Jobs in their order: the pods of the Jobs before its own, then its Job's index
times the pods per Job, then its completion index (the same indexes Kueue's topology requests use).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from trainguard.operator.workloads import declaration

GROUP = "jobset.x-k8s.io"
LABEL_PREFIX = "jobset.sigs.k8s.io"
"""JobSet's labels on its Jobs and pods are under this prefix, not under the API group."""
JOBSET_NAME_LABEL = f"{LABEL_PREFIX}/jobset-name"
REPLICATED_JOB_LABEL = f"{LABEL_PREFIX}/replicatedjob-name"
JOB_INDEX_LABEL = f"{LABEL_PREFIX}/job-index"
"""The index of a pod's Job among the replicas of its replicated Job."""


def pods_per_job(replicated_job: Mapping[str, Any]) -> int:
    """Return how many pods one Job of a replicated Job runs at once: its parallelism, at most its completions."""
    spec = (replicated_job.get("template") or {}).get("spec") or {}
    parallelism = int(spec.get("parallelism", 1) or 0)  # the Job API's default is 1
    completions = spec.get("completions")
    return min(parallelism, int(completions)) if completions is not None else parallelism


def rank_in(pod: declaration.Object, replicated_jobs: list[Mapping[str, Any]]) -> int | None:
    """Return the pod's rank across `replicated_jobs` (a JobSet's, in order), or None if it is not one of theirs."""
    labels = declaration.labels_of(pod)
    name = labels.get(REPLICATED_JOB_LABEL)
    job_index = declaration.int_label(pod, JOB_INDEX_LABEL)
    index = declaration.completion_index(pod)
    if name is None or job_index is None or index is None:
        return None
    offset = 0
    for replicated in replicated_jobs:
        per_job = pods_per_job(replicated)
        if replicated.get("name") == name:
            return offset + job_index * per_job + index
        offset += int(replicated.get("replicas") or 1) * per_job
    return None


class JobSet(declaration.WorkloadKind):
    api_version: ClassVar[str] = f"{GROUP}/v1alpha2"
    kind: ClassVar[str] = "JobSet"
    plural: ClassVar[str] = "jobsets"
    chart_key: ClassVar[str | None] = "jobSet"
    suspend_path: ClassVar[tuple[str, ...]] = ("spec", "suspend")
    permissions: ClassVar[tuple[declaration.Permission, ...]] = (
        declaration.supervise(
            GROUP,
            "jobsets",
            "read for its state and its pods' owners, watched, suspended to stop it (never its Jobs) and resumed",
        ),
    )

    def state(self, obj: declaration.Object) -> declaration.WorkloadState:
        status = obj.get("status") or {}
        # replicatedJobsStatus counts Jobs, not pods: no pod counts here.
        return declaration.WorkloadState(
            suspended=self.is_suspended(obj),
            finished=declaration.outcome_of(obj, succeeded=("Completed",), failed=("Failed",)),
            start_time=status.get("startTime"),
            completion_time=status.get("completionTime"),
        )

    def pod_selector(self, obj: declaration.Object) -> dict[str, str]:
        return {JOBSET_NAME_LABEL: str(obj["metadata"]["name"])}

    def pod_rank(self, pod: declaration.Object, obj: declaration.Object) -> int | None:
        return rank_in(pod, list((obj.get("spec") or {}).get("replicatedJobs") or []))


KIND = JobSet()
