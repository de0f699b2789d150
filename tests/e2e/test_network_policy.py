"""The chart's opt-in NetworkPolicies on a real API server: accepted, and selecting exactly the pods they are for.

The test node's CNI (the bridge plugin) does not enforce NetworkPolicies, so what is checked here is
what the API server and the running pods can tell: the rendered policies are valid objects, their
pod selectors pick the operator pod and a running DebugJob's pods (and nothing else), and every
port they name is a port those pods declare. Enforcement is the cluster's CNI's job
(docs/security.md says which settings to pair with it).
"""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from tests.conftest import SeaweedServer
from tests.deploy.tooling import CHART, find_tool
from tests.e2e.cluster import Cluster, Release, eventually
from tests.e2e.runs import delete_and_check_nothing_is_left, submit

SIDECAR_METRICS_PORT = 9400


def _policies(release: Release, namespace: str) -> list[dict[str, Any]]:
    """The chart's NetworkPolicies as `helm template` renders them for this release and DebugJob namespace."""
    out = subprocess.run(
        [find_tool("helm"), "template", release.name, str(CHART), "--namespace", release.namespace,
         "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.debugJobPods.enabled=true",
         "--set", f"networkPolicy.debugJobPods.namespaces={{{namespace}}}",
         "--show-only", "templates/networkpolicy.yaml"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _selector(pod_selector: dict[str, Any]) -> str:
    """A NetworkPolicy podSelector as a label selector string (matchLabels and Exists expressions)."""
    terms = [f"{k}={v}" for k, v in (pod_selector.get("matchLabels") or {}).items()]
    for expr in pod_selector.get("matchExpressions") or []:
        assert expr["operator"] == "Exists", expr
        terms.append(expr["key"])
    return ",".join(terms)


def _ports(pod: dict[str, Any]) -> tuple[set[str], set[int]]:
    """The names and numbers of the ports a pod's containers (native sidecars included) declare."""
    containers = [*pod["spec"]["containers"], *(pod["spec"].get("initContainers") or [])]
    ports = [p for c in containers for p in c.get("ports") or []]
    return {p["name"] for p in ports if "name" in p}, {p["containerPort"] for p in ports}


def test_the_network_policies_are_accepted_and_select_the_operator_and_the_debugjob_pods(
    cluster: Cluster, operator: Release, namespace: str, bridge_s3: SeaweedServer
) -> None:
    run = submit(cluster, namespace, "fenced", s3=bridge_s3, steps=100_000, workers=2)
    policies = _policies(operator, namespace)
    assert sorted(p["metadata"]["namespace"] for p in policies) == sorted([operator.namespace, namespace])
    try:
        for policy in policies:  # the real API server validates each one (ports, peers, selectors)
            cluster.apply(policy)
        pods = eventually(
            lambda: (
                (ps := run.pods())
                and len(ps) == 2
                and all(p["status"].get("phase") == "Running" for p in ps)
                and ps
            ),
            timeout_seconds=300,
            what="both pods of the DebugJob running",
        )
        for policy in policies:
            ns = policy["metadata"]["namespace"]
            stored = cluster.get(
                f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/{policy['metadata']['name']}"
            )
            assert stored is not None and stored["spec"]["podSelector"] == policy["spec"]["podSelector"]
            selected = cluster.items(
                f"/api/v1/namespaces/{ns}/pods", labels=_selector(policy["spec"]["podSelector"])
            )
            names = sorted(p["metadata"]["name"] for p in selected)
            if ns == operator.namespace:
                assert names == sorted(p["metadata"]["name"] for p in operator.operator_pods()), names
                port_names, _ = _ports(selected[0])
                for rule in policy["spec"]["ingress"]:
                    for port in rule["ports"]:
                        assert port["port"] in port_names, (
                            f"the operator pod has no port named {port['port']}"
                        )
            else:
                assert names == sorted(p["metadata"]["name"] for p in pods), names
                metrics_rule = policy["spec"]["ingress"][0]
                assert metrics_rule["ports"] == [{"port": SIDECAR_METRICS_PORT, "protocol": "TCP"}]
                assert metrics_rule["from"][0]["namespaceSelector"]["matchLabels"] == {
                    "kubernetes.io/metadata.name": "monitoring"
                }
                for pod in selected:
                    assert SIDECAR_METRICS_PORT in _ports(pod)[1], (
                        f"{pod['metadata']['name']} declares no 9400"
                    )
    finally:
        for policy in policies:
            cluster.kubectl("delete", "networkpolicy", policy["metadata"]["name"], "-n",
                            policy["metadata"]["namespace"], "--ignore-not-found", check=False)  # fmt: skip
    delete_and_check_nothing_is_left(run)
