"""TrainJob (`trainer.kubeflow.org/v1alpha1`, Kubeflow Trainer v2): a JobSet rendered from a training runtime.

Trainer applies the JobSet (named as the TrainJob, controlled by it) on every reconcile with
`suspend = TrainJob.spec.suspend`, so a suspended JobSet is resumed again: the TrainJob is what a stop
suspends (kubeflow/trainer `pkg/runtime/framework/plugins/jobset/jobset.go`). Conditions Complete and
Failed end it. Its training pods are those of the runtime's `node` replicated Job, whose node rank
(`PET_NODE_RANK`) is the completion index; initializer and launcher pods run no rank. Pods are reached
through Job -> JobSet -> TrainJob, so reading the JobSet on the way is part of this kind's RBAC.
"""

from __future__ import annotations

from typing import ClassVar

from trainguard.operator.workloads import declaration, jobset

GROUP = "trainer.kubeflow.org"
NODE_STEP = "node"
"""The replicated Job of a Trainer runtime that runs the training nodes (`trainer.kubeflow.org/trainjob-ancestor-step:
trainer` is on its Jobs, not on their pods, so the pods are told by their replicated Job's name)."""


class TrainJob(declaration.WorkloadKind):
    api_version: ClassVar[str] = f"{GROUP}/v1alpha1"
    kind: ClassVar[str] = "TrainJob"
    plural: ClassVar[str] = "trainjobs"
    chart_key: ClassVar[str | None] = "trainJob"
    suspend_path: ClassVar[tuple[str, ...]] = ("spec", "suspend")
    permissions: ClassVar[tuple[declaration.Permission, ...]] = (
        declaration.supervise(
            GROUP,
            "trainjobs",
            "read for its state, watched, suspended to stop it (never its JobSet, which Trainer resets) and resumed",
        ),
        declaration.Permission(
            group=jobset.GROUP,
            resource="jobsets",
            verbs=("get",),
            why="read on the way from a TrainJob's pod to its TrainJob (Pod -> Job -> JobSet -> TrainJob)",
        ),
    )

    def state(self, obj: declaration.Object) -> declaration.WorkloadState:
        return declaration.WorkloadState(
            suspended=self.is_suspended(obj),
            finished=declaration.outcome_of(obj, succeeded=("Complete",), failed=("Failed",)),
        )

    def pod_selector(self, obj: declaration.Object) -> dict[str, str]:
        return {jobset.JOBSET_NAME_LABEL: str(obj["metadata"]["name"])}

    def pod_rank(self, pod: declaration.Object, obj: declaration.Object) -> int | None:
        if declaration.labels_of(pod).get(jobset.REPLICATED_JOB_LABEL) != NODE_STEP:
            return None  # an initializer's or a launcher's pod
        if (declaration.int_label(pod, jobset.JOB_INDEX_LABEL) or 0) != 0:
            return None  # Trainer runs one Job of `node`; a pod of another is none of its nodes
        return declaration.completion_index(pod)


KIND = TrainJob()
