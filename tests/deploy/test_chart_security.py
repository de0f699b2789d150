"""The chart's tenancy and safety objects: admission policy, aggregated roles, watched namespaces, NetworkPolicies.

Rendered with the real helm and validated with kubernetes-validate (Kubernetes 1.32 schemas). What the
admission policy lets through on a real API server is checked in `tests/e2e/test_admission_policy.py`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.tooling import CHART, by_kind, find_tool, helm_template, one, render, run_tool
from trainguard import cli
from trainguard.api import debugjob
from trainguard.operator import build

NAMESPACED = [CHART / "ci" / "namespaced-values.yaml"]
WATCHING = ["watchNamespaces={ml-a,ml-b}"]


def _validate(*, values: list[Path] | None = None, sets: list[str] | None = None) -> None:
    manifests = helm_template(values=values or [], sets=sets or []).stdout
    proc = run_tool(
        [find_tool("kubernetes-validate"), "--strict", "-k", "1.32", "-"], stdin=manifests, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _args(objects: list[dict[str, Any]]) -> list[str]:
    args: list[str] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def _operator_roles(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in by_kind(objects, "ClusterRole") + by_kind(objects, "Role") if not _aggregated(o)]


def _aggregated(role: dict[str, Any]) -> bool:
    return any(k.startswith("rbac.authorization.k8s.io/aggregate-to-") for k in role["metadata"]["labels"])


# Admission policy


def test_the_admission_policy_guards_debugjob_status_writes_and_spares_the_operator() -> None:
    objects = render()
    policy = one(objects, "ValidatingAdmissionPolicy")
    binding = one(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": ["trainguard.dev"],
            "apiVersions": ["*"],
            "operations": ["UPDATE"],
            "resources": ["debugjobs/status"],
        }
    ]
    (condition,) = spec["matchConditions"]
    assert "['system:serviceaccount:trainguard:tg-trainguard']" in condition["expression"]
    renamed = one(render(sets=["serviceAccount.name=op", "admissionPolicy.exemptServiceAccounts={velero:velero}"]),
                  "ValidatingAdmissionPolicy")  # fmt: skip
    assert (
        "['system:serviceaccount:trainguard:op','system:serviceaccount:velero:velero']"
        in renamed["spec"]["matchConditions"][0]["expression"]
    )
    assert not by_kind(render(sets=["admissionPolicy.enabled=false"]), "ValidatingAdmissionPolicy")
    _validate()


def test_the_admission_policy_freezes_every_status_field_but_reports() -> None:
    """The policy names the fields only the operator writes; a field added to the status model must join them."""
    spec = one(render(), "ValidatingAdmissionPolicy")["spec"]
    frozen = next(
        v["expression"]
        for v in spec["validations"]
        if "may change only status.reports" in v.get("message", "")
    )
    named = set(re.findall(r"has\(object\.status\.(\w+)\)", frozen))
    model = {f.alias or f"{name}" for name, f in debugjob.DebugJobStatus.model_fields.items()} - {"reports"}
    assert named == model


def test_the_admission_policy_reads_the_rank_key_format_the_sidecars_write() -> None:
    from trainguard.api.debugjob import report_key

    text = str(one(render(), "ValidatingAdmissionPolicy")["spec"])
    assert "^rank-[0-9]{5}$" in text and re.fullmatch(r"rank-[0-9]{5}", report_key(3))
    assert "int(k.substring(5))" in text and report_key(12) == "rank-00012"


# Aggregated roles


def test_edit_and_view_roles_aggregate_into_the_defaults_and_grant_no_status_write() -> None:
    roles = {r["metadata"]["name"]: r for r in by_kind(render(), "ClusterRole") if _aggregated(r)}
    assert set(roles) == {"tg-trainguard-edit", "tg-trainguard-view"}
    edit, view = roles["tg-trainguard-edit"], roles["tg-trainguard-view"]
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    verbs = {r["resources"][0]: set(r["verbs"]) for r in edit["rules"]}
    assert {"create", "delete", "patch", "update"} <= verbs["debugjobs"]
    assert verbs["debugjobs/status"] == {"get", "list", "watch"}, "editors cannot forge verdicts"
    assert all(set(r["verbs"]) == {"get", "list", "watch"} for r in view["rules"])
    assert not [
        r
        for r in by_kind(render(sets=["rbac.aggregateToDefaultRoles=false"]), "ClusterRole")
        if _aggregated(r)
    ]


# Watched namespaces


def test_watched_namespaces_get_a_role_each_and_no_cluster_wide_secret_access() -> None:
    objects = render(sets=WATCHING)
    roles = by_kind(objects, "Role")
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["ml-a", "ml-b"]
    cluster_wide = {r["resources"][0] for role in by_kind(objects, "ClusterRole") if not _aggregated(role)
                    for r in role["rules"]}  # fmt: skip
    assert cluster_wide == {"customresourcedefinitions", "namespaces"}, "read-only observation only"
    bindings = by_kind(objects, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["ml-a", "ml-b"]
    assert all(b["subjects"][0]["namespace"] == "trainguard" for b in bindings)
    # The same inventory as the cluster-wide ClusterRole, Secrets included, but only there.
    cluster_role = next(r for r in _operator_roles(render()) if r["metadata"]["name"] == "tg-trainguard")
    assert all(r["rules"] == cluster_role["rules"] for r in roles)
    assert "secrets" in {r["resources"][0] for r in roles[0]["rules"]}
    args = _args(objects)
    assert "--namespace=ml-a" in args and "--namespace=ml-b" in args and "--all-namespaces" not in args
    parsed = cli.build_parser().parse_args(args)
    assert parsed.namespace == ["ml-a", "ml-b"] and not parsed.all_namespaces
    _validate(sets=WATCHING)


def test_a_watched_namespace_must_be_a_namespace_name() -> None:
    proc = helm_template(sets=["watchNamespaces={team-*}"], check=False)
    assert proc.returncode != 0 and "watchNamespaces" in proc.stderr


# NetworkPolicies


def test_debugjob_pods_admit_metrics_only_from_monitoring_and_each_other() -> None:
    sets = [*WATCHING, "networkPolicy.debugJobPods.enabled=true"]
    policies = [
        p
        for p in by_kind(render(sets=sets), "NetworkPolicy")
        if p["metadata"]["name"].endswith("-debugjob-pods")
    ]
    assert sorted(p["metadata"]["namespace"] for p in policies) == ["ml-a", "ml-b"]
    spec = policies[0]["spec"]
    assert spec["podSelector"] == {"matchExpressions": [{"key": build.LABEL_DEBUGJOB, "operator": "Exists"}]}
    assert spec["policyTypes"] == ["Ingress"]
    metrics, ranks = spec["ingress"]
    assert metrics["ports"] == [{"port": build.SIDECAR_PORT, "protocol": "TCP"}]
    assert metrics["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    assert "ports" not in ranks, "rendezvous and collectives use ports of their own choosing"
    assert ranks["from"] == [
        {"podSelector": {"matchExpressions": [{"key": build.LABEL_DEBUGJOB, "operator": "Exists"}]}}
    ]
    _validate(sets=sets)
    # The release namespace in namespaced mode; a cluster-wide operator must be told the namespaces.
    namespaced = render(values=NAMESPACED, sets=["networkPolicy.debugJobPods.enabled=true"])
    assert [p["metadata"]["namespace"] for p in by_kind(namespaced, "NetworkPolicy")] == [
        "trainguard",
        "trainguard",
    ]
    proc = helm_template(sets=["networkPolicy.debugJobPods.enabled=true"], check=False)
    assert proc.returncode != 0 and "needs the namespaces of the DebugJobs" in proc.stderr


def test_the_operators_egress_can_be_limited_to_the_api_server_and_webhook_destinations() -> None:
    to = "networkPolicy.webhookTo[0].ipBlock.cidr=0.0.0.0/0"
    sets = ["networkPolicy.enabled=true", "networkPolicy.apiServerCidrs={10.96.0.1/32}", to,
            "networkPolicy.webhookTo[0].ipBlock.except={10.0.0.0/8,169.254.0.0/16}"]  # fmt: skip
    policy = next(
        p for p in by_kind(render(sets=sets), "NetworkPolicy") if p["metadata"]["name"] == "tg-trainguard"
    )
    egress = policy["spec"]["egress"]
    api_server = next(r for r in egress if {"port": 6443, "protocol": "TCP"} in r["ports"])
    assert api_server["to"] == [{"ipBlock": {"cidr": "10.96.0.1/32"}}]
    webhooks = next(r for r in egress if r["ports"] == [{"port": 443, "protocol": "TCP"}])
    assert webhooks["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "169.254.0.0/16"]}}]
    _validate(sets=sets)


# Webhook options and the image


@pytest.mark.parametrize(
    "values", [[], [CHART / "ci" / "production-values.yaml"]], ids=["default", "production"]
)
def test_the_webhook_options_reach_the_operator(values: list[Path]) -> None:
    objects = render(values=values)
    parsed = cli.build_parser().parse_args(_args(objects))
    assert parsed.webhook_timeout == 10.0
    assert parsed.webhook_refuse_internal is bool(values), "on in the production example, off by default"
    sets = ["webhooks.refuseInternalAddresses=true", "webhooks.refusedCidrs={203.0.113.0/24}",
            "webhooks.attemptTimeoutSeconds=3"]  # fmt: skip
    parsed = cli.build_parser().parse_args(_args(render(sets=sets)))
    assert parsed.webhook_refuse_internal and parsed.webhook_refuse_cidr == ["203.0.113.0/24"]
    assert parsed.webhook_timeout == 3.0


def test_a_digest_pins_the_sidecar_image_too() -> None:
    digest = "sha256:" + "b" * 64
    args = _args(render(sets=[f"image.digest={digest}"]))
    assert f"--image=localhost/trainguard@{digest}" in args
