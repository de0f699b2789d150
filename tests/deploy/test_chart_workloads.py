"""The chart grants the operator exactly the RBAC that the workload adapters of the enabled kinds declare.

Rendered with the real helm. Each adapter (`trainguard/operator/workloads/<kind>.py`) declares the verbs its
kind needs; the chart's switches (`workloads.<chartKey>.enabled`) must grant those and nothing more, and a
default install none of the kinds it does not use (least privilege). Batch Jobs are always on: the DebugJob
also creates and deletes its Job.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.deploy.tooling import CHART, by_kind, one, render
from trainguard.operator import workloads

SWITCHED = sorted(a.chart_key for a in workloads.declared() if a.chart_key)
DEBUGJOB_CHILD_VERBS = {("batch", "jobs"): {"create", "delete"}}
"""What the operator does to a DebugJob's Job beyond supervising it: creates it and deletes it with the DebugJob."""
WORKLOAD_RESOURCES = {(p.group, p.resource) for a in workloads.declared() for p in a.permissions}


def _grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def _operator_rules(objects: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    roles = {r["metadata"]["name"]: r for r in by_kind(objects, "ClusterRole")}
    return _grants(roles["tg-trainguard"])


def _expected(keys: tuple[str, ...]) -> dict[tuple[str, str], set[str]]:
    expected = workloads.permissions(workloads.enabled(keys))
    for resource, verbs in DEBUGJOB_CHILD_VERBS.items():
        expected.setdefault(resource, set()).update(verbs)
    return expected


def _subsets() -> list[tuple[str, ...]]:
    return [combo for n in range(len(SWITCHED) + 1) for combo in itertools.combinations(SWITCHED, n)]


@pytest.mark.parametrize("keys", _subsets(), ids=lambda keys: "+".join(keys) or "default")
def test_the_operator_role_grants_the_enabled_adapters_permissions_and_no_other_kinds(
    keys: tuple[str, ...],
) -> None:
    granted = _operator_rules(render(sets=[f"workloads.{key}.enabled=true" for key in keys]))
    on_workloads = {resource: verbs for resource, verbs in granted.items() if resource in WORKLOAD_RESOURCES}
    assert on_workloads == _expected(keys), f"with {keys or 'the defaults'}"


def test_a_default_install_holds_no_permission_on_jobsets_pytorchjobs_or_trainjobs() -> None:
    granted = _operator_rules(render())
    assert not {g for g, _ in granted} & {"jobset.x-k8s.io", "kubeflow.org", "trainer.kubeflow.org"}
    assert granted[("batch", "jobs")] == {"create", "get", "list", "watch", "patch", "delete"}, (
        "as before the seam"
    )


def test_the_namespaced_role_carries_the_same_workload_rules_as_the_cluster_role() -> None:
    values = [CHART / "ci" / "workloads-values.yaml"]
    cluster = _operator_rules(render(values=values))
    namespaced = _grants(one(render(values=values, sets=["rbac.clusterWide=false"]), "Role"))
    assert namespaced == cluster
    assert cluster[("trainer.kubeflow.org", "trainjobs")] == {"get", "list", "watch", "patch"}


def test_every_adapter_has_a_chart_switch_with_a_comment() -> None:
    values = (CHART / "values.yaml").read_text()
    for key in SWITCHED:
        assert f"\n  {key}:\n    # -- " in values, (
            f"values.yaml: workloads.{key} needs a switch with a `# --` comment"
        )
