"""PyTorchJob (`kubeflow.org/v1`, Kubeflow training-operator): Master and Worker pods, no batch Job between.

`spec.runPolicy.suspend` makes the training-operator delete every active pod (and the job's Services);
clearing it starts them again (kubeflow/training-operator `pkg/controller.v1/common/job.go`). Conditions
Succeeded and Failed end it. A pod's rank is the RANK the operator gives it: the Master is 0 and Worker
i is i + 1 (`pkg/controller.v1/pytorch/envvar.go`); the pod's labels carry its replica type (lower case)
and index. Without a Master the operator gives no RANK at all (torchrun's rendezvous numbers the nodes,
in the order they join), so Worker i's rank here is i, its ordinal only. v1.8.1 checked in tests/e2e.
"""

from __future__ import annotations

from typing import ClassVar

from trainguard.operator.workloads import declaration

GROUP = "kubeflow.org"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
MASTER, WORKER = "Master", "Worker"


class PyTorchJob(declaration.WorkloadKind):
    api_version: ClassVar[str] = f"{GROUP}/v1"
    kind: ClassVar[str] = "PyTorchJob"
    plural: ClassVar[str] = "pytorchjobs"
    chart_key: ClassVar[str | None] = "pyTorchJob"
    suspend_path: ClassVar[tuple[str, ...]] = ("spec", "runPolicy", "suspend")
    permissions: ClassVar[tuple[declaration.Permission, ...]] = (
        declaration.supervise(
            GROUP,
            "pytorchjobs",
            "read for its state and its pods' owner, watched, suspended to stop it (runPolicy.suspend) and resumed",
        ),
    )

    def state(self, obj: declaration.Object) -> declaration.WorkloadState:
        status = obj.get("status") or {}
        replicas = (status.get("replicaStatuses") or {}).values()
        return declaration.WorkloadState(
            suspended=self.is_suspended(obj),
            finished=declaration.outcome_of(obj, succeeded=("Succeeded",), failed=("Failed",)),
            # Its replica statuses count pods (active, succeeded, failed), though not ready or terminating ones.
            pods=declaration.PodCounts(
                active=sum(int(r.get("active") or 0) for r in replicas),
                succeeded=sum(int(r.get("succeeded") or 0) for r in replicas),
                failed=sum(int(r.get("failed") or 0) for r in replicas),
            ),
            start_time=status.get("startTime"),
            completion_time=status.get("completionTime"),
        )

    def pod_selector(self, obj: declaration.Object) -> dict[str, str]:
        return {JOB_NAME_LABEL: str(obj["metadata"]["name"])}

    def pod_rank(self, pod: declaration.Object, obj: declaration.Object) -> int | None:
        replica_type = declaration.labels_of(pod).get(REPLICA_TYPE_LABEL)
        index = declaration.int_label(pod, REPLICA_INDEX_LABEL)
        if index is None:
            return None
        if replica_type == MASTER.lower():
            return index
        if replica_type == WORKER.lower():
            specs = (obj.get("spec") or {}).get("pytorchReplicaSpecs") or {}
            return index + 1 if MASTER in specs else index
        return None


KIND = PyTorchJob()
