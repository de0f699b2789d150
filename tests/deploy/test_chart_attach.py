"""The chart's attach mode, rendered with the real helm: the pod webhook configuration (Ignore, objectSelector,
short timeout, the operator's handler path), its Service and certificate (self-signed by helm, or cert-manager),
the operator's flags and the pod RBAC, all only when `attach.enabled`."""

from __future__ import annotations

from typing import Any

from tests.deploy.tooling import CHART, by_kind, one, render
from trainguard import cli
from trainguard.api import debugpolicy
from trainguard.operator import attach, build, inject, workloads
from trainguard.operator.config import OperatorConfig

ATTACH = CHART / "ci" / "attach-values.yaml"


def _operator(objects: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return container


def _rules(objects: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    role = next(r for r in by_kind(objects, "ClusterRole") if r["metadata"]["name"] == "tg-trainguard")
    return {
        (g, res): set(rule["verbs"])
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for res in rule["resources"]
    }


def test_a_default_install_has_no_webhook_and_no_pod_permission() -> None:
    objects = render()
    assert not by_kind(objects, "MutatingWebhookConfiguration")
    assert not [s for s in by_kind(objects, "Service") if s["metadata"]["name"].endswith("-webhook")]
    assert ("", "pods") not in _rules(objects)
    assert "--attach" not in _operator(objects)["args"]
    # DebugPolicies are watched either way: an operator without attach mode says so on each policy.
    assert _rules(objects)[("trainguard.dev", "debugpolicies")] == {"list", "watch", "patch"}


def test_the_webhook_is_opt_in_per_pod_never_blocks_and_calls_the_operator_handler() -> None:
    objects = render(values=[ATTACH])
    (webhook,) = one(objects, "MutatingWebhookConfiguration")["webhooks"]
    assert webhook["failurePolicy"] == "Ignore" and webhook["sideEffects"] == "None"
    assert webhook["timeoutSeconds"] == 5 and webhook["reinvocationPolicy"] == "IfNeeded"
    assert webhook["objectSelector"] == {"matchLabels": {debugpolicy.WATCH_LABEL: "true"}}
    assert webhook["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["pods"], "scope": "Namespaced"}]  # fmt: skip
    (excluded,) = webhook["namespaceSelector"]["matchExpressions"]
    assert excluded["operator"] == "NotIn" and excluded["values"] == [
        "kube-system",
        "trainguard",
        "monitoring",
    ]
    service = webhook["clientConfig"]["service"]
    assert service["path"] == f"/{attach.HANDLER_ID}" and service["port"] == 443
    (svc,) = [s for s in by_kind(objects, "Service") if s["metadata"]["name"] == service["name"]]
    assert svc["spec"]["ports"] == [
        {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
    ]
    ports = {p["name"]: p["containerPort"] for p in _operator(objects)["ports"]}
    assert ports["webhook"] == 9443


def test_without_cert_manager_the_operator_keeps_the_certificate_with_rights_to_its_own_objects_only() -> (
    None
):
    objects = render(values=[ATTACH])
    # Neither the Secret nor the caBundle is rendered: an upgrade keeps what the operator set.
    assert not by_kind(objects, "Secret")
    config = one(objects, "MutatingWebhookConfiguration")
    (webhook,) = config["webhooks"]
    assert "caBundle" not in webhook["clientConfig"] and "annotations" not in config["metadata"]
    parsed = cli.build_parser().parse_args(_operator(objects)["args"])
    service = webhook["clientConfig"]["service"]
    assert parsed.attach_cert_secret == f"{service['namespace']}/tg-trainguard-webhook-tls"
    assert (parsed.attach_service, parsed.attach_webhook_config) == (
        service["name"],
        config["metadata"]["name"],
    )
    assert parsed.attach_cert_days == 365
    OperatorConfig(attach=True, attach_cert_secret=parsed.attach_cert_secret, attach_service=parsed.attach_service,
                   attach_webhook_config=parsed.attach_webhook_config)  # fmt: skip
    # The operator writes the files kopf serves into a writable in-memory volume.
    volumes = one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "webhook-tls")["emptyDir"]["medium"] == "Memory"
    mounts = _operator(objects)["volumeMounts"]
    assert {"name": "webhook-tls", "mountPath": parsed.attach_cert_dir, "readOnly": False} in mounts
    # RBAC: its own Secret (created in the release namespace only) and its own webhook configuration, by name.
    role = next(r for r in by_kind(objects, "Role") if r["metadata"]["name"] == "tg-trainguard-webhook-tls")
    assert role["metadata"]["namespace"] == service["namespace"]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["tg-trainguard-webhook-tls"],
         "verbs": ["get", "patch"]},
    ]  # fmt: skip
    ca = next(
        r for r in by_kind(objects, "ClusterRole") if r["metadata"]["name"] == "tg-trainguard-webhook-ca"
    )
    assert ca["rules"] == [{"apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations"],
                            "resourceNames": [config["metadata"]["name"]], "verbs": ["get", "patch"]}]  # fmt: skip
    bound = {
        b["roleRef"]["name"]
        for b in [*by_kind(objects, "RoleBinding"), *by_kind(objects, "ClusterRoleBinding")]
    }
    assert {"tg-trainguard-webhook-tls", "tg-trainguard-webhook-ca"} <= bound


def test_cert_manager_issues_the_certificate_and_injects_its_ca() -> None:
    objects = render(values=[ATTACH], sets=["attach.certManager.enabled=true"])
    assert not by_kind(objects, "Secret")
    certificate = one(objects, "Certificate")
    assert certificate["spec"]["secretName"] == "tg-trainguard-webhook-tls"
    assert certificate["spec"]["issuerRef"] == {
        "kind": "Issuer",
        "name": one(objects, "Issuer")["metadata"]["name"],
    }
    config = one(objects, "MutatingWebhookConfiguration")
    assert config["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "trainguard/tg-trainguard-webhook"
    }
    assert "caBundle" not in config["webhooks"][0]["clientConfig"]
    # cert-manager's Secret is mounted; the operator keeps no certificate and gets no rights for one.
    volumes = one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "webhook-tls", "secret": {"secretName": "tg-trainguard-webhook-tls"}} in volumes
    assert not [a for a in _operator(objects)["args"] if a.startswith("--attach-cert-secret")]
    assert not [r for r in by_kind(objects, "Role") if r["metadata"]["name"].endswith("-webhook-tls")]
    named = render(values=[ATTACH], sets=["attach.certManager.enabled=true", "attach.certManager.issuerRef.kind=ClusterIssuer",
                                          "attach.certManager.issuerRef.name=corp-ca"])  # fmt: skip
    assert not by_kind(named, "Issuer")
    assert one(named, "Certificate")["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "corp-ca"}


def test_the_operator_is_told_the_enabled_kinds_and_attach_mode_and_may_list_pods() -> None:
    objects = render(values=[ATTACH])
    args = _operator(objects)["args"]
    parsed = cli.build_parser().parse_args(args)
    assert parsed.attach and parsed.attach_port == 9443
    config = OperatorConfig(workload_kinds=tuple(parsed.workload_kind), attach=True)
    assert {a.kind for a in workloads.enabled(config.workload_kinds)} == {"Job", "PyTorchJob", "TrainJob"}
    granted = _rules(objects)
    assert granted[("", "pods")] == {"get", "list", "watch"}
    # The webhook walks Pod -> Job -> JobSet -> TrainJob in memory: JobSets are watched for TrainJobs too.
    assert {"list", "watch"} <= granted[("jobset.x-k8s.io", "jobsets")]
    assert "--attach" not in _operator(render(sets=["workloads.jobSet.enabled=true"]))["args"]
    assert "--workload-kind=jobSet" in _operator(render(sets=["workloads.jobSet.enabled=true"]))["args"]


def test_the_network_policy_lets_the_webhook_in_and_the_evaluator_scrapes_out() -> None:
    policy = one(render(values=[ATTACH], sets=["networkPolicy.enabled=true"]), "NetworkPolicy")
    assert {"ports": [{"port": "webhook", "protocol": "TCP"}]} in policy["spec"]["ingress"]
    assert {"ports": [{"port": build.SIDECAR_PORT, "protocol": "TCP"}]} in policy["spec"]["egress"]
    default = one(render(sets=["networkPolicy.enabled=true"]), "NetworkPolicy")
    assert {"ports": [{"port": "webhook", "protocol": "TCP"}]} not in default["spec"]["ingress"]


def test_the_injected_evaluators_are_scraped_with_their_policy_and_workload() -> None:
    assert len(by_kind(render(sets=["metrics.podMonitor.enabled=true"]), "PodMonitor")) == 1
    monitors = by_kind(render(values=[ATTACH], sets=["metrics.podMonitor.enabled=true"]), "PodMonitor")
    policy = next(m for m in monitors if m["metadata"]["name"].endswith("-policy-evaluators"))
    (requirement,) = policy["spec"]["selector"]["matchExpressions"]
    assert (requirement["key"], requirement["operator"]) == (inject.POLICY_LABEL, "Exists")
    (endpoint,) = policy["spec"]["podMetricsEndpoints"]
    relabel = {r["targetLabel"]: r.get("sourceLabels") for r in endpoint["relabelings"]}

    def meta(prefix: str, key: str) -> str:  # Prometheus' Kubernetes discovery name of a label or annotation
        return prefix + "".join(c if c.isalnum() else "_" for c in key)

    assert relabel["debugpolicy"] == [meta("__meta_kubernetes_pod_label_", inject.POLICY_LABEL)]
    assert relabel["workload"] == [meta("__meta_kubernetes_pod_annotation_", inject.WORKLOAD_ANNOTATION)]
    assert relabel["job"] is None and endpoint["port"] == "metrics"
