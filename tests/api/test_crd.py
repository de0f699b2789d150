"""The DebugJob CRD: generated from the models, structural, checked in without drift, and it validates examples."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from trainguard.api import crd, debugjob

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("debugjob*.yaml"))


def _to_jsonschema(node: Any) -> Any:
    """Translate the OpenAPI dialect (nullable, int-or-string, preserve-unknown-fields) into JSON Schema."""
    if isinstance(node, list):
        return [_to_jsonschema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: _to_jsonschema(v) for k, v in node.items() if not k.startswith("x-kubernetes") and k != "nullable"
    }
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if (
        node.get("type") == "object"
        and "properties" in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        # Structural pruning drops unknown fields; a strict check here catches typos in examples instead.
        out.setdefault("additionalProperties", False)
    return out


def _validator() -> jsonschema.Draft7Validator:
    schema = _to_jsonschema(crd.spec_schema())
    schema["properties"]["metadata"] = {"type": "object"}
    return jsonschema.Draft7Validator(schema)


def _walk(node: Any, path: str = "") -> Any:
    if isinstance(node, dict):
        yield path, node
        for key in ("properties",):
            for name, child in node.get(key, {}).items():
                yield from _walk(child, f"{path}.{name}")
        if isinstance(node.get("items"), dict):
            yield from _walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            yield from _walk(node["additionalProperties"], f"{path}{{}}")


def test_checked_in_crd_matches_the_models() -> None:
    checked_in = (ROOT / "crds" / "debugjob.yaml").read_text()
    assert checked_in == crd.crd_yaml(), (
        "crds/debugjob.yaml is stale: run `trainguard crd -o crds/debugjob.yaml`"
    )


def test_vendored_pod_template_schema_matches_kubernetes_validate() -> None:
    pytest.importorskip("kubernetes_validate")
    vendored = json.loads((ROOT / "trainguard" / "api" / "schemas" / crd.POD_SCHEMA_FILE).read_text())
    assert vendored == crd.vendor_pod_template_schema(), "run `trainguard crd --vendor-pod-schema`"


def test_crd_names_group_version_and_status_subresource() -> None:
    doc = crd.build_crd()
    assert doc["metadata"]["name"] == "debugjobs.trainguard.dev"
    spec = doc["spec"]
    assert spec["group"] == "trainguard.dev" and spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "DebugJob" and spec["names"]["plural"] == "debugjobs"
    assert spec["names"]["shortNames"] == ["dj"]
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Phase": ".status.phase",
        "Rule": ".status.triggeredRule",
        "Step": ".status.lastStep",
        "Workers": ".spec.workers",
        "Age": ".metadata.creationTimestamp",
        "Job": ".status.jobName",
    }


def test_schema_is_structural_everywhere() -> None:
    """Every node has a type (or is int-or-string / preserve-unknown), no refs, no properties beside additionalProperties."""
    schema = crd.spec_schema()
    nodes = list(_walk(schema))
    assert len(nodes) > 500, "the pod template schema should be embedded, not an opaque object"
    for path, node in nodes:
        assert "$ref" not in node and "$defs" not in node, path
        assert "type" in node or node.get("x-kubernetes-int-or-string"), f"{path} has no type"
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties") is not False, path
        for variant in node.get("anyOf", []):
            assert set(variant) == {"type"}, f"{path}: anyOf may only list types (int-or-string)"


def test_field_descriptions_reach_the_schema() -> None:
    spec = crd.spec_schema()["properties"]["spec"]
    assert (
        spec["properties"]["workers"]["description"]
        == debugjob.DebugJobSpec.model_fields["workers"].description
    )
    assert "saveInterval" in spec["properties"]["capture"]["properties"]
    assert spec["properties"]["rules"]["items"]["properties"]["action"]["enum"] == ["stop", "notify", "none"]


def test_pod_template_embeds_core_v1_schema() -> None:
    template = crd.spec_schema()["properties"]["spec"]["properties"]["template"]
    pod = template["properties"]["spec"]
    container = pod["properties"]["containers"]["items"]
    assert "name" in container["required"]
    assert container["properties"]["restartPolicy"]["type"] == "string"  # native sidecars (1.28+)
    limits = container["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits.get("x-kubernetes-int-or-string") is True
    assert template["properties"]["metadata"]["properties"]["labels"]["additionalProperties"] == {
        "type": "string"
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_manifests_validate_against_the_crd_schema(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors)
    debugjob.DebugJob.model_validate(doc)


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 2


ELEVEN_WEBHOOKS = [{"name": f"h{i}", "urlSecretRef": {"name": "s", "key": "url"}} for i in range(11)]


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda d: d["spec"].update(workers=0), "spec.workers"),
        (lambda d: d["spec"]["capture"].update(uri="http://bucket/x"), "spec.capture.uri"),
        (
            lambda d: d["spec"]["template"]["spec"].update(containers="trainer"),
            "spec.template.spec.containers",
        ),
        (lambda d: d["spec"]["template"]["spec"]["containers"][0].update(name=3), "containers.0.name"),
        (lambda d: d["spec"]["rules"][0].update(action="explode"), "spec.rules.0.action"),
        (lambda d: d["spec"].update(workerz=2), "spec"),
        (lambda d: d["spec"].update(nprocPerNode=20000), "spec.nprocPerNode"),
        (lambda d: d["spec"].update(workers=5000), "spec.workers"),
        (
            lambda d: d["spec"].setdefault("actions", {}).update(stop={"gracePeriodSeconds": 10**18}),
            "spec.actions.stop.gracePeriodSeconds",
        ),
        (lambda d: d["spec"].update(actions={"notify": {"webhooks": ELEVEN_WEBHOOKS}}), "webhooks"),
    ],
    ids=[
        "workers-zero",
        "bad-uri",
        "containers-not-a-list",
        "container-name-int",
        "unknown-action",
        "typo",
        "nproc-too-many",
        "workers-too-many",
        "grace-too-long",
        "webhooks-too-many",
    ],
)
def test_schema_rejects_what_the_api_server_would(mutate: Any, where: str) -> None:
    doc = yaml.safe_load(EXAMPLES[0].read_text())
    bad = copy.deepcopy(doc)
    mutate(bad)
    errors = list(_validator().iter_errors(bad))
    assert errors, f"expected a schema error at {where}"
    assert any(where.split(".")[-1] in ".".join(map(str, e.path)) or where == "spec" for e in errors)


def test_optional_objects_default_to_empty_so_the_api_server_fills_in_their_fields() -> None:
    spec = crd.spec_schema()["properties"]["spec"]
    for name in ("actions", "evaluator", "runPolicy"):
        assert spec["properties"][name]["default"] == {}, name
    assert spec["properties"]["actions"]["properties"]["stop"]["default"] == {}
    assert "default" not in spec["properties"]["capture"], "required: the user gives it"
    assert "default" not in spec["properties"]["capture"]["properties"]["secretRef"], "null means IRSA"
    assert '"default": {}' not in json.dumps(spec["properties"]["template"]), (
        "the pod template stays as written"
    )
