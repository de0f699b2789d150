"""DebugPolicy: the models refuse what the operator could not act on, with messages that say what to do,
and the checked-in CRD is the one the models generate, with the same checks as CEL rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pydantic
import pytest

from trainguard.api import crd, debugpolicy

ROOT = Path(__file__).resolve().parents[2]


def _spec(**fields: Any) -> dict[str, Any]:
    return {"capture": {"uri": "s3://bucket/runs"}, **fields}


def test_a_selector_policy_selects_workloads_by_their_labels() -> None:
    spec = debugpolicy.DebugPolicySpec.model_validate(
        _spec(
            selector={
                "matchLabels": {"team": "vision"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["dev"]}],
            }
        )
    )
    assert spec.selects("kubeflow.org/v1", "PyTorchJob", "a", {"team": "vision"})
    assert spec.selects("kubeflow.org/v1", "PyTorchJob", "a", {"team": "vision", "tier": "prod"})
    assert not spec.selects("kubeflow.org/v1", "PyTorchJob", "a", {"team": "vision", "tier": "dev"})
    assert not spec.selects("kubeflow.org/v1", "PyTorchJob", "a", {"team": "nlp"})


def test_a_target_ref_selects_one_workload_of_any_version_of_its_group() -> None:
    spec = debugpolicy.DebugPolicySpec.model_validate(
        _spec(targetRef={"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "llm"})
    )
    assert spec.selects("jobset.x-k8s.io/v1", "JobSet", "llm", {})
    assert not spec.selects("jobset.x-k8s.io/v1alpha2", "JobSet", "other", {})
    assert not spec.selects("batch/v1", "Job", "llm", {})


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (_spec(), "exactly one of spec.selector"),
        (
            _spec(
                selector={"matchLabels": {"a": "b"}},
                targetRef={"apiVersion": "batch/v1", "kind": "Job", "name": "j"},
            ),
            "exactly one of spec.selector",
        ),
        (_spec(selector={}), "selects every workload"),
        (_spec(selector={"matchExpressions": [{"key": "a", "operator": "In"}]}), "needs values"),
        (
            _spec(selector={"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            "takes no values",
        ),
        (_spec(selector={"matchLabels": {"a": "b"}}, rules=[{"type": "loss_not_decreasing"}] * 2), "unique"),
    ],
)
def test_invalid_policies_are_refused_saying_what_to_change(spec: dict[str, Any], says: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=says):
        debugpolicy.DebugPolicySpec.model_validate(spec)


def test_checked_in_policy_crd_matches_the_models() -> None:
    checked_in = (ROOT / "crds" / "debugpolicy.yaml").read_text()
    assert checked_in == crd.policy_crd_yaml(), (
        "crds/debugpolicy.yaml is stale: run `trainguard crd --kind debugpolicy -o crds/debugpolicy.yaml`"
    )


def test_the_policy_crd_checks_the_same_as_the_models_with_cel() -> None:
    version = crd.build_policy_crd()["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert [r["rule"] for r in spec["x-kubernetes-validations"]] == [
        "has(self.selector) != has(self.targetRef)"
    ]
    assert "matchLabels" in spec["properties"]["selector"]["x-kubernetes-validations"][0]["rule"]
    assert spec["required"] == ["capture"]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    item = status["workloads"]["items"]["properties"]
    assert {"kind", "name", "phase", "rule", "step", "ranksSeen", "blind"} <= set(item)
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Workloads",
        "Blind",
        "Ready",
        "Age",
        "Target",
    ]
    assert version["subresources"] == {"status": {}}


def test_the_example_policy_validates_against_the_crd_schema_and_the_models() -> None:
    import yaml

    from tests.api.test_crd import _to_jsonschema

    example = yaml.safe_load((ROOT / "examples" / "debugpolicy.yaml").read_text())
    schema = _to_jsonschema(crd.build_policy_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = {"type": "object"}
    jsonschema.Draft7Validator(schema).validate(example)
    debugpolicy.DebugPolicy.model_validate(example)
    broken = {**example, "spec": {**example["spec"], "selektor": {}}}
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken)), "a typo must not pass the schema"
