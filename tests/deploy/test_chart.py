"""The Helm chart: lint, render, validate against Kubernetes 1.32, and check what each template promises.

Rendering uses the real helm (v3.17) and validation the real Kubernetes OpenAPI schemas shipped by
`kubernetes-validate`. The prometheus-operator objects (ServiceMonitor, PodMonitor, PrometheusRule)
have no schema there, so they only produce a WARN line; every other object must pass strictly.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.tooling import (
    ALERTS,
    CHART,
    CI_VALUES,
    DASHBOARDS,
    ROOT,
    by_kind,
    find_tool,
    helm_template,
    one,
    render,
    run_tool,
)

MONITORING = [CHART / "ci" / "monitoring-values.yaml"]
ALL_OPTIONAL = [
    "metrics.serviceMonitor.enabled=true",
    "metrics.podMonitor.enabled=true",
    "metrics.prometheusRule.enabled=true",
    "networkPolicy.enabled=true",
]
PROMETHEUS_OPERATOR_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}


def _values_id(path: Path | None) -> str:
    return "default" if path is None else path.name


def test_the_chart_has_ci_values_files_to_test() -> None:
    assert len(CI_VALUES) >= 3, f"expected several charts/trainguard/ci/*-values.yaml, found {CI_VALUES}"


@pytest.mark.parametrize("values", [None, *CI_VALUES], ids=_values_id)
def test_helm_lint_passes(values: Path | None) -> None:
    args = [find_tool("helm"), "lint", "--strict", str(CHART)]
    if values is not None:
        args += ["-f", str(values)]
    out = run_tool(args).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out, out


@pytest.mark.parametrize("values", [None, *CI_VALUES], ids=_values_id)
def test_rendered_objects_pass_kubernetes_1_32_validation(values: Path | None) -> None:
    manifests = helm_template(values=[values] if values else []).stdout
    proc = run_tool(
        [find_tool("kubernetes-validate"), "--strict", "-k", "1.32", "-"], stdin=manifests, check=False
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    objects = [d for d in yaml.safe_load_all(manifests) if d]
    passed = set(re.findall(r"passed for resource (\S+) against", output))
    for obj in objects:
        if obj["kind"] in PROMETHEUS_OPERATOR_KINDS:
            assert f"Couldn't find schema for kind {obj['kind']}" in output
        else:
            assert f"{obj['kind'].lower()}/{obj['metadata']['name']}" in passed, (
                f"{obj['kind']} not validated:\n{output}"
            )
    warned = set(re.findall(r"Couldn't find schema for kind (\w+)", output))
    assert warned <= PROMETHEUS_OPERATOR_KINDS, f"objects without a schema: {warned}"


def test_a_broken_object_fails_kubernetes_validation() -> None:
    manifests = helm_template().stdout.replace("replicas: 1", "replicas: one")
    proc = run_tool(
        [find_tool("kubernetes-validate"), "--strict", "-k", "1.32", "-"], stdin=manifests, check=False
    )
    assert proc.returncode != 0 and "replicas" in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "bad_values, offending",
    [
        ({"operater": {"verbose": True}}, "operater"),
        ({"operator": {"replicas": 2}}, "replicas"),
        ({"metrics": {"serviceMonitor": {"enable": True}}}, "enable"),
    ],
    ids=["top-level typo", "nested unknown key", "deep typo"],
)
def test_a_values_file_with_an_unknown_key_is_rejected(
    tmp_path: Path, bad_values: dict[str, Any], offending: str
) -> None:
    path = tmp_path / "bad-values.yaml"
    path.write_text(yaml.safe_dump(bad_values))
    proc = helm_template(values=[path], check=False)
    assert proc.returncode != 0
    assert "Additional property" in proc.stderr and offending in proc.stderr, proc.stderr


def test_a_value_of_the_wrong_type_is_rejected() -> None:
    proc = helm_template(sets=["operator.metricsPort=abc"], check=False)
    assert proc.returncode != 0 and "metricsPort" in proc.stderr, proc.stderr


def test_every_value_has_a_one_line_comment() -> None:
    """Each value has a comment line right above it. Groups (closed objects in values.schema.json, such as
    `metrics:`) are not values; a value that is a map (resources, securityContext) is commented once."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    missing: list[str] = []
    stack: list[tuple[int, dict[str, Any] | None]] = [(-1, schema)]  # (indent, schema node of the group)
    previous = ""
    for number, line in enumerate((CHART / "values.yaml").read_text().splitlines(), start=1):
        match = re.match(r"^( *)([A-Za-z][\w.-]*):", line)
        if match and not line.lstrip().startswith("#"):
            indent, key = len(match.group(1)), match.group(2)
            while stack[-1][0] >= indent:
                stack.pop()
            group = stack[-1][1]
            if group is not None:  # None: inside a value map, whose key carries the comment
                node = group["properties"].get(key)
                assert node is not None, f"values.yaml:{number}: {key} is not in values.schema.json"
                if "properties" in node:
                    stack.append((indent, node))
                else:
                    if not previous.lstrip().startswith("# "):
                        missing.append(f"values.yaml:{number}: {line.strip()}")
                    stack.append((indent, None))
        if line.strip():
            previous = line
    assert not missing, "values without a one-line comment:\n" + "\n".join(missing)


def test_the_operator_deployment_is_one_recreated_replica_with_probe_resources_and_a_restricted_context() -> (
    None
):
    deployment = one(render(), "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][0] == "operator"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 9401, "health": 8080}
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    pod_ctx, ctx = pod["securityContext"], container["securityContext"]
    assert (
        pod_ctx["runAsNonRoot"] is True and isinstance(pod_ctx["runAsUser"], int) and pod_ctx["runAsUser"] > 0
    )
    assert pod_ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    assert ctx["allowPrivilegeEscalation"] is False and ctx["readOnlyRootFilesystem"] is True
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    # The read-only root needs a writable HOME and TMPDIR.
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HOME"] == "/tmp" and env["TMPDIR"] == "/tmp"
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert any(v["name"] == "tmp" and "emptyDir" in v for v in pod["volumes"])
    assert pod["serviceAccountName"] == one(render(), "ServiceAccount")["metadata"]["name"]


def test_the_image_reference_follows_tag_and_digest_values() -> None:
    image = lambda sets: one(render(sets=sets), "Deployment")["spec"]["template"]["spec"]["containers"][0][
        "image"
    ]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    # the default: what dev/build-image.sh builds (localhost/trainguard:<package version> = appVersion)
    assert image([]) == f"localhost/trainguard:{chart['appVersion']}"
    assert image(["image.tag=1.2.3"]) == "localhost/trainguard:1.2.3"
    digest = "sha256:" + "a" * 64
    assert image([f"image.digest={digest}", "image.tag=1.2.3"]) == f"localhost/trainguard@{digest}"


def test_the_metrics_service_targets_the_operator_metrics_port() -> None:
    objects = render()
    service = one(objects, "Service")
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 9401, "targetPort": "metrics", "protocol": "TCP"}
    ]
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert not by_kind(render(sets=["metrics.service.enabled=false"]), "Service")


def test_additional_labels_reach_every_object() -> None:
    objects = render(values=MONITORING, sets=ALL_OPTIONAL)
    kinds = {o["kind"] for o in objects}
    assert (
        PROMETHEUS_OPERATOR_KINDS | {"Deployment", "NetworkPolicy", "ConfigMap", "CustomResourceDefinition"}
        <= kinds
    )
    for obj in objects:
        assert obj["metadata"]["labels"].get("release") == "kps", f"{obj['kind']} {obj['metadata']['name']}"
    assert one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]["release"] == "kps"


def test_monitoring_objects_are_optional_and_off_by_default() -> None:
    kinds = {o["kind"] for o in render()}
    assert not kinds & (PROMETHEUS_OPERATOR_KINDS | {"NetworkPolicy"})


def test_the_service_monitor_scrapes_the_operator_keeping_its_namespace_labels() -> None:
    objects = render(values=MONITORING)
    monitor = one(objects, "ServiceMonitor")
    service = one(objects, "Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["trainguard"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics" and endpoint["honorLabels"] is True
    assert {"targetLabel": "job", "replacement": "trainguard-operator"} in endpoint["relabelings"]


def test_the_pod_monitor_scrapes_evaluator_sidecars_by_port_name_in_any_namespace() -> None:
    monitor = one(render(values=MONITORING), "PodMonitor")
    assert monitor["spec"]["selector"] == {
        "matchExpressions": [{"key": "trainguard.dev/debugjob", "operator": "Exists"}]
    }
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics"
    assert {
        "sourceLabels": ["__meta_kubernetes_pod_label_trainguard_dev_debugjob"],
        "targetLabel": "debugjob",
    } in endpoint["relabelings"]
    assert {"targetLabel": "job", "replacement": "trainguard-evaluator"} in endpoint["relabelings"]
    limited = one(
        render(sets=["metrics.podMonitor.enabled=true", "metrics.podMonitor.namespaces={a,b}"]), "PodMonitor"
    )
    assert limited["spec"]["namespaceSelector"] == {"matchNames": ["a", "b"]}


def test_the_pod_monitor_matches_the_label_and_port_name_the_operator_gives_evaluator_pods() -> None:
    from trainguard.operator import build

    monitor = one(render(values=MONITORING), "PodMonitor")
    assert monitor["spec"]["selector"]["matchExpressions"][0]["key"] == build.LABEL_DEBUGJOB
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == build.SIDECAR_PORT_NAME


def test_the_prometheus_rule_carries_every_alert_of_the_rules_file_unchanged() -> None:
    rule = one(render(values=MONITORING), "PrometheusRule")
    source = yaml.safe_load(ALERTS.read_text())
    assert [g["name"] for g in rule["spec"]["groups"]] == [g["name"] for g in source["groups"]]
    for rendered_group, group in zip(rule["spec"]["groups"], source["groups"]):
        assert len(rendered_group["rules"]) == len(group["rules"])
        for rendered, original in zip(rendered_group["rules"], group["rules"]):
            assert rendered["alert"] == original["alert"]
            assert rendered["expr"] == original["expr"].strip()
            assert rendered.get("for") == original.get("for")
            assert rendered["labels"] == {**original["labels"], "team": "ml-platform"}
            runbook = rendered["annotations"].pop("runbook_url")
            page = original["alert"].lower()
            assert runbook == f"https://trainguard.github.io/trainguard/runbooks/{page}/"
            assert (ROOT / "docs" / "runbooks" / f"{page}.md").is_file()
            assert rendered["annotations"] == {k: v.strip() for k, v in original["annotations"].items()}


def test_dashboards_are_config_maps_labelled_for_the_grafana_sidecar() -> None:
    maps = {m["metadata"]["name"]: m for m in by_kind(render(), "ConfigMap")}
    assert len(maps) == len(DASHBOARDS) >= 2
    for path in DASHBOARDS:
        (cm,) = [m for m in maps.values() if path.name in m["data"]]
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["annotations"]["k8s-sidecar-target-directory"] == "TrainGuard"
        assert cm["data"][path.name] == path.read_text().rstrip("\n")
    moved = by_kind(render(values=MONITORING), "ConfigMap")
    assert {m["metadata"]["namespace"] for m in moved} == {"monitoring"}
    assert not by_kind(render(sets=["dashboards.enabled=false"]), "ConfigMap")


def test_the_network_policy_admits_metrics_and_health_and_lets_out_dns_api_server_and_webhooks() -> None:
    objects = render(values=[CHART / "ci" / "namespaced-values.yaml"])
    policy = one(objects, "NetworkPolicy")["spec"]
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    ingress_ports = [p["port"] for rule in policy["ingress"] for p in rule["ports"]]
    assert ingress_ports == ["metrics", "health"]
    assert policy["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    egress_ports = {(p["port"], p["protocol"]) for rule in policy["egress"] for p in rule["ports"]}
    assert {(53, "UDP"), (53, "TCP"), (443, "TCP"), (6443, "TCP"), (8443, "TCP")} <= egress_ports


def test_notes_tell_the_next_commands(tmp_path: Path) -> None:
    # `helm template` does not render NOTES.txt: include it from a probe template in a copy of the chart.
    chart = tmp_path / "trainguard"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "zz-notes-probe.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n"
        '  notes: {{ include "trainguard/templates/NOTES.txt" . | toJson }}\n'
    )

    def notes(*sets: str) -> str:
        args = [
            find_tool("helm"),
            "template",
            "tg",
            str(chart),
            "-n",
            "ml",
            "-s",
            "templates/zz-notes-probe.yaml",
        ]
        for s in sets:
            args += ["--set", s]
        return str(yaml.safe_load(run_tool(args).stdout)["data"]["notes"])

    default = notes()
    assert "kubectl -n ml rollout status deploy/tg-trainguard" in default
    assert "kubectl get debugjobs" in default and "kubectl describe dj" in default
    assert "metrics.podMonitor.enabled=true" in default
    monitored = notes("metrics.podMonitor.enabled=true", "metrics.prometheusRule.enabled=true")
    assert "additionalLabels.release" in monitored
    assert "additionalLabels.release" not in notes(
        "metrics.podMonitor.enabled=true", "additionalLabels.release=kps"
    )
    assert "install the DebugJob CRD yourself" in notes("crds.enabled=false")


def test_the_chart_version_matches_the_package_version() -> None:
    from trainguard import _version

    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == _version.__version__
    assert chart["kubeVersion"].startswith(">=1.29"), "native sidecars need Kubernetes 1.29"


def test_ci_values_files_are_listed_on_the_helm_page() -> None:
    page = (ROOT / "docs" / "helm.md").read_text()
    for path in CI_VALUES:
        assert path.name in page, f"docs/helm.md should mention {path.name}"


def test_rbac_is_an_inventory_one_resource_per_rule_each_with_a_reason_and_no_wildcards() -> None:
    roles = [
        o
        for o in render(values=[CHART / "ci" / "monitoring-values.yaml"])
        if o["kind"] in ("ClusterRole", "Role")
    ]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            assert len(rule["resources"]) == 1, f"{role['metadata']['name']}: one resource per rule: {rule}"
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], f"{role['metadata']['name']}: wildcard in {field}: {rule}"
            assert "resourceNames" not in rule and "nonResourceURLs" not in rule
    template = (CHART / "templates" / "rbac.yaml").read_text().splitlines()
    for number, line in enumerate(template):
        if line.strip().startswith("- apiGroups:"):
            assert template[number - 1].strip().startswith("#"), (
                f"rbac.yaml:{number + 1}: a rule without a reason"
            )


def test_namespaced_mode_uses_a_role_and_tells_the_operator_its_namespace() -> None:
    cluster = render()
    namespaced = render(values=[CHART / "ci" / "namespaced-values.yaml"])
    role = one(namespaced, "Role")
    assert role["metadata"]["namespace"] == "trainguard"
    binding = one(namespaced, "RoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "trainguard-operator", "namespace": "trainguard"}
    ]
    # The same inventory as the cluster-wide ClusterRole; only kopf's read-only CRD watch stays cluster-scoped.
    cluster_roles = {r["metadata"]["name"]: r for r in by_kind(cluster, "ClusterRole")}
    assert role["rules"] == cluster_roles["tg-trainguard"]["rules"]
    operator_cluster_roles = [
        r["metadata"]["name"]
        for r in by_kind(namespaced, "ClusterRole")
        if not r["metadata"]["name"].endswith(("-edit", "-view"))
    ]  # the -edit/-view roles are for people (tests/deploy/test_chart_security.py)
    assert operator_cluster_roles == ["tg-trainguard-crds"]
    args = one(namespaced, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=trainguard" in args and "--all-namespaces" not in args
    assert (
        "--all-namespaces" in one(cluster, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    assert not by_kind(render(sets=["rbac.create=false"]), "ClusterRole")


def test_the_operator_command_line_accepts_the_chart_args() -> None:
    from trainguard import cli

    for values in ([], [CHART / "ci" / "namespaced-values.yaml"], [CHART / "ci" / "production-values.yaml"]):
        args = one(render(values=values), "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
        parsed = cli.build_parser().parse_args(args)
        assert parsed.command == "operator" and parsed.metrics_port == 9401
        assert parsed.liveness == "http://0.0.0.0:8080/healthz"
    production = cli.build_parser().parse_args(
        one(render(values=[CHART / "ci" / "production-values.yaml"]), "Deployment")["spec"]["template"][
            "spec"
        ]["containers"][0]["args"]
    )
    assert production.verbose and production.image == "registry.example.com/ml/trainguard-evaluator:0.1.0"
