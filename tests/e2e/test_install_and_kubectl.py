"""`helm install` on a real cluster, then what `kubectl` shows of a DebugJob: columns, field docs, defaults."""

from __future__ import annotations

import json
import re

import yaml

from tests.e2e.cluster import IMAGE, ROOT, Cluster, Release, eventually
from trainguard.api import debugjob

EXAMPLE = ROOT / "examples" / "debugjob.yaml"


def _columns(table: str) -> list[dict[str, str]]:
    """Parse kubectl's table output by the header's column positions (empty cells stay empty)."""
    header, *rows = table.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [{n: row[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)} for row in rows]


def test_the_chart_runs_the_operator_as_a_pod_of_the_project_image_with_its_service_account(
    cluster: Cluster, operator: Release
) -> None:
    crd = cluster.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/debugjobs.trainguard.dev")
    assert crd is not None
    established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert established["Established"] == "True" and established["NamesAccepted"] == "True"
    pods = eventually(
        lambda: [p for p in operator.operator_pods() if p["status"].get("phase") == "Running"],
        timeout_seconds=120,
        what="a running operator pod",
    )
    pod = pods[0]
    assert pod["spec"]["serviceAccountName"] == "tg-trainguard"
    assert pod["spec"]["containers"][0]["image"] == IMAGE
    assert pod["spec"]["nodeName"] == cluster.env["TG_K8S_NODE"]
    status = pod["status"]["containerStatuses"][0]
    assert status["ready"] is True and status["imageID"], status


def test_kubectl_shows_the_servers_columns_field_docs_and_defaults(
    cluster: Cluster, operator: Release, namespace: str
) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLE))

    # The columns come from the CRD's additionalPrinterColumns, rendered by the API server.
    def wide() -> dict[str, str] | None:
        table = _columns(cluster.kubectl("get", "dj", "-n", namespace, "-o", "wide").stdout)
        return table[0] if len(table) == 1 and table[0]["PHASE"] == "Pending" and table[0]["JOB"] else None

    row = eventually(wide, timeout_seconds=60, what="phase Pending and the Job's name in -o wide")
    assert list(row) == ["NAME", "PHASE", "RULE", "STEP", "WORKERS", "AGE", "JOB"]
    assert row["NAME"] == "mnist" and row["JOB"] == "mnist" and row["WORKERS"] == "1"
    assert row["RULE"] == "" and row["STEP"] == "", "no rule fired and no step was evaluated yet"
    narrow = cluster.kubectl("get", "debugjobs", "-n", namespace).stdout.splitlines()[0].split()
    assert narrow == ["NAME", "PHASE", "RULE", "STEP", "WORKERS", "AGE"]

    explain = cluster.kubectl("explain", "debugjob.spec.capture").stdout
    assert " ".join(str(debugjob.DebugJobSpec.model_fields["capture"].description).split()) in " ".join(
        explain.split()
    )
    assert re.search(r"saveInterval\s+<integer>", explain)
    assert "Save statistics every N training steps" in explain

    # Defaults the API server filled in from the CRD's schema (the example leaves them out).
    spec = json.loads(cluster.kubectl("get", "dj", "mnist", "-n", namespace, "-o", "json").stdout)["spec"]
    applied = yaml.safe_load(EXAMPLE.read_text())["spec"]
    assert "nprocPerNode" not in applied and spec["nprocPerNode"] == 1
    assert spec["containerName"] == "trainer" and spec["masterPort"] == 23456
    assert spec["actions"]["stop"]["gracePeriodSeconds"] == 30
    assert spec["runPolicy"]["backoffLimit"] == 0 and spec["suspend"] is False
    assert spec["evaluator"]["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}
    assert spec["capture"]["secretRef"]["accessKeyIdKey"] == "AWS_ACCESS_KEY_ID"
