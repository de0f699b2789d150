"""The DebugJob CustomResourceDefinition, generated from the pydantic models in `debugjob`.

`build_crd()` turns the models' JSON Schema into a structural OpenAPI v3 schema (refs inlined,
`Optional` as `nullable`, free-form maps as `x-kubernetes-preserve-unknown-fields`, int-or-string
quantities marked) and puts the pinned core/v1 PodTemplateSpec schema under `spec.template`, so
the API server validates users' pod templates. That schema is vendored in
`schemas/podtemplatespec-v<K8S>.json`, converted by `vendor_pod_template_schema()` from the
Kubernetes OpenAPI schemas that the `kubernetes-validate` package ships; a test keeps the two
equal, and another keeps `crds/debugjob.yaml` equal to `crd_yaml()`.
"""

from __future__ import annotations

import copy
import importlib.resources
import json
from typing import Any

import yaml

from trainguard.api import debugjob, debugpolicy

POD_SCHEMA_KUBERNETES_VERSION = "1.32"
"""Kubernetes version whose PodTemplateSpec schema is embedded (1.29 is the oldest supported cluster)."""

POD_SCHEMA_FILE = f"podtemplatespec-v{POD_SCHEMA_KUBERNETES_VERSION}.json"

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "Lifecycle phase."},
    {
        "name": "Rule",
        "type": "string",
        "jsonPath": ".status.triggeredRule",
        "description": "The stop rule of a Stopped DebugJob, else the rule with the earliest finding.",
    },
    {
        "name": "Step",
        "type": "integer",
        "jsonPath": ".status.lastStep",
        "description": "Last evaluated step.",
    },
    {"name": "Workers", "type": "integer", "jsonPath": ".spec.workers", "description": "Number of ranks."},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {
        "name": "Job",
        "type": "string",
        "jsonPath": ".status.jobName",
        "priority": 1,
        "description": "Owned Job.",
    },
]
"""`kubectl get dj` columns; `Job` shows with `-o wide`."""

NAME_RULES: list[dict[str, str]] = [
    {
        "rule": f"self.metadata.name.matches('{debugjob.NAME_PATTERN}')",
        "message": debugjob.NAME_PATTERN_MESSAGE,
        "reason": "FieldValueInvalid",
    },
    {
        "rule": (
            f"size(self.metadata.name) + 1 + size(string(self.spec.workers - 1)) <= {debugjob.HOSTNAME_MAX_LENGTH}"
        ),
        # A static message: a messageExpression that prints the numbers costs more than the API server allows.
        "message": debugjob.NAME_LENGTH_MESSAGE,
        "reason": "FieldValueInvalid",
    },
]
"""CEL rules on the whole object: names the Job, Service and pod hostnames could not take are refused at once
(`debugjob.name_problem` is the same check in Python)."""

POLICY_PRINTER_COLUMNS: list[dict[str, Any]] = [
    {
        "name": "Workloads",
        "type": "integer",
        "jsonPath": ".status.workloadCount",
        "description": "Workloads the policy selects.",
    },
    {
        "name": "Blind",
        "type": "integer",
        "jsonPath": ".status.blindCount",
        "description": "Selected workloads with pods running without the evaluator.",
    },
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": ".status.conditions[?(@.type=='Ready')].status",
        "description": "The policy is valid and injected into new pods.",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {
        "name": "Target",
        "type": "string",
        "jsonPath": ".spec.targetRef.name",
        "priority": 1,
        "description": "The one workload a targetRef names.",
    },
]
"""`kubectl get dp` columns; `Target` shows with `-o wide`."""

POLICY_SPEC_RULES: list[dict[str, str]] = [
    {
        "rule": "has(self.selector) != has(self.targetRef)",
        "message": "give exactly one of spec.selector (a label selector on the workloads) and spec.targetRef "
        "(apiVersion, kind, name of one workload)",
        "reason": "FieldValueInvalid",
    },
]
"""CEL rules on a DebugPolicy's spec (`debugpolicy.DebugPolicySpec` checks the same in Python)."""
POLICY_SELECTOR_RULES: list[dict[str, str]] = [
    {
        "rule": "(has(self.matchLabels) && size(self.matchLabels) > 0) || "
        "(has(self.matchExpressions) && size(self.matchExpressions) > 0)",
        "message": "spec.selector selects every workload of the namespace: give matchLabels or matchExpressions",
        "reason": "FieldValueInvalid",
    },
]

_KEEP = {
    "type", "format", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
    "maxLength", "pattern", "required", "minItems", "maxItems", "nullable",
}  # fmt: skip
_INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}


def build_crd() -> dict[str, Any]:
    """Return the CustomResourceDefinition of DebugJob as a plain dict."""
    spec_schema = default_empty_objects(
        structural(debugjob.DebugJobSpec.model_json_schema(by_alias=True), keep_descriptions=True)
    )
    status_schema = structural(
        debugjob.DebugJobStatus.model_json_schema(by_alias=True), keep_descriptions=True
    )
    return _crd(
        kind=debugjob.KIND,
        plural=debugjob.PLURAL,
        singular=debugjob.SINGULAR,
        short_names=debugjob.SHORT_NAMES,
        description="A training job supervised by TrainGuard: rendered as an Indexed Job with an evaluator sidecar.",
        spec_schema=spec_schema,
        status_schema=status_schema,
        columns=PRINTER_COLUMNS,
        # Declaring the name's length bounds the cost of the CEL rules that read it (`NAME_RULES`);
        # CRDs may restrict metadata.name and generateName only.
        name_max_length=debugjob.HOSTNAME_MAX_LENGTH,
        rules=NAME_RULES,
    )


def build_policy_crd() -> dict[str, Any]:
    """Return the CustomResourceDefinition of DebugPolicy as a plain dict."""
    spec_schema = default_empty_objects(
        structural(debugpolicy.DebugPolicySpec.model_json_schema(by_alias=True), keep_descriptions=True)
    )
    spec_schema["x-kubernetes-validations"] = copy.deepcopy(POLICY_SPEC_RULES)
    selector = spec_schema["properties"]["selector"]
    selector["x-kubernetes-validations"] = copy.deepcopy(POLICY_SELECTOR_RULES)
    status_schema = structural(
        debugpolicy.DebugPolicyStatus.model_json_schema(by_alias=True), keep_descriptions=True
    )
    return _crd(
        kind=debugpolicy.KIND,
        plural=debugpolicy.PLURAL,
        singular=debugpolicy.SINGULAR,
        short_names=debugpolicy.SHORT_NAMES,
        description="Supervise training workloads users already run (Job, JobSet, PyTorchJob, TrainJob): the "
        "operator's pod webhook injects the evaluator into the pods of the workloads it selects.",
        spec_schema=spec_schema,
        status_schema=status_schema,
        columns=POLICY_PRINTER_COLUMNS,
        name_max_length=253,
        rules=[],
    )


def _crd(
    *,
    kind: str,
    plural: str,
    singular: str,
    short_names: tuple[str, ...],
    description: str,
    spec_schema: dict[str, Any],
    status_schema: dict[str, Any],
    columns: list[dict[str, Any]],
    name_max_length: int,
    rules: list[dict[str, str]],
) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": name_max_length},
                    "generateName": {"type": "string"},
                },
            },
            "spec": spec_schema,
            "status": status_schema,
        },
        "required": ["spec"],
    }
    if rules:
        schema["x-kubernetes-validations"] = copy.deepcopy(rules)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{debugjob.GROUP}",
            "labels": {"app.kubernetes.io/name": "trainguard", "app.kubernetes.io/component": "crd"},
        },
        "spec": {
            "group": debugjob.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": singular,
                "shortNames": list(short_names),
                "categories": ["trainguard"],
            },
            "versions": [
                {
                    "name": debugjob.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": copy.deepcopy(columns),
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def crd_yaml() -> str:
    """Return the CRD as the YAML checked in at `crds/debugjob.yaml`."""
    header = "# Generated by `trainguard crd` from trainguard/api/debugjob.py; do not edit.\n"
    body: str = yaml.safe_dump(build_crd(), sort_keys=False, width=120)
    return header + body


def policy_crd_yaml() -> str:
    """Return the DebugPolicy CRD as the YAML checked in at `crds/debugpolicy.yaml`."""
    header = "# Generated by `trainguard crd --kind debugpolicy` from trainguard/api/debugpolicy.py; do not edit.\n"
    body: str = yaml.safe_dump(build_policy_crd(), sort_keys=False, width=120)
    return header + body


def spec_schema() -> dict[str, Any]:
    """Return the structural schema of `spec` (what the API server validates DebugJobs against)."""
    crd = build_crd()
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def pod_template_schema() -> dict[str, Any]:
    """Return the vendored core/v1 PodTemplateSpec schema (structural, descriptions stripped)."""
    text = (importlib.resources.files("trainguard.api") / "schemas" / POD_SCHEMA_FILE).read_text()
    data: dict[str, Any] = json.loads(text)
    data.pop("x-source", None)
    return data


def vendor_pod_template_schema(kubernetes_version: str = POD_SCHEMA_KUBERNETES_VERSION) -> dict[str, Any]:
    """Convert kubernetes-validate's PodTemplateSpec schema into the vendored structural form.

    Only the `trainguard crd --vendor-pod-schema` path and the tests call this; the package
    `kubernetes-validate` is a development dependency.
    """
    import kubernetes_validate

    root = (
        importlib.resources.files(kubernetes_validate)
        / "kubernetes-json-schema"
        / f"v{kubernetes_version}.0-local"
        / "_definitions.json"
    )
    defs = json.loads(root.read_text())["$defs"]
    schema = structural(
        {"$ref": "#/$defs/io.k8s.api.core.v1.PodTemplateSpec"}, defs=defs, keep_descriptions=False
    )
    # Embedded object metadata: only labels and annotations mean anything in a pod template.
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"labels": string_map, "annotations": copy.deepcopy(string_map)},
    }
    return {
        "x-source": f"kubernetes-validate v{kubernetes_version}.0-local io.k8s.api.core.v1.PodTemplateSpec",
        **schema,
    }


def structural(
    schema: dict[str, Any], *, defs: dict[str, Any] | None = None, keep_descriptions: bool = True
) -> dict[str, Any]:
    """Return a structural OpenAPI v3 schema (as CRDs need) for a JSON Schema with `$defs` refs."""
    if defs is None:
        defs = schema.get("$defs", {})
    return _convert(schema, defs, keep_descriptions, ())


def _convert(
    node: dict[str, Any], defs: dict[str, Any], keep: bool, stack: tuple[str, ...]
) -> dict[str, Any]:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in stack:
            raise ValueError(
                f"schema {name} refers to itself through {' -> '.join(stack)}; CRDs cannot express that"
            )
        merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _convert(merged, defs, keep, (*stack, name))
    if debugjob.POD_TEMPLATE_MARKER in node:
        out = pod_template_schema()
        if keep and node.get("description"):
            out["description"] = node["description"]
        return out

    variants = node.get("anyOf") or node.get("oneOf")
    if variants:
        types = {_first_type(v) for v in variants}
        nullable = "null" in types
        rest = [v for v in variants if _first_type(v) != "null"]
        if types - {"null"} in ({"integer", "string"}, {"number", "string"}):
            out = copy.deepcopy(_INT_OR_STRING)
        elif len(rest) == 1:
            out = _convert(rest[0], defs, keep, stack)
        else:
            raise ValueError(f"cannot express a union of {sorted(types)} in a structural schema: {node}")
        if nullable:
            out["nullable"] = True
        _copy_annotations(node, out, keep)
        return out

    out = {k: copy.deepcopy(v) for k, v in node.items() if k in _KEEP}
    if isinstance(out.get("type"), list):
        out["type"] = next(t for t in out["type"] if t != "null")
    _copy_annotations(node, out, keep)
    if "properties" in node:
        out["properties"] = {k: _convert(v, defs, keep, stack) for k, v in node["properties"].items()}
        out.setdefault("type", "object")
    if "items" in node:
        out["items"] = _convert(node["items"], defs, keep, stack)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        out["additionalProperties"] = _convert(extra, defs, keep, stack)
        out.setdefault("type", "object")
    elif (extra is True or extra == {}) or (
        out.get("type") == "object" and "properties" not in node and extra is None
    ):
        out["type"] = "object"
        out["x-kubernetes-preserve-unknown-fields"] = True
    if "type" not in out and "x-kubernetes-int-or-string" not in out:
        # An untyped value (pydantic `Any`): keep whatever is sent.
        out["x-kubernetes-preserve-unknown-fields"] = True
    if out.get("required") == []:
        del out["required"]
    return out


def default_empty_objects(schema: dict[str, Any]) -> dict[str, Any]:
    """Give every optional, non-nullable object whose own fields are all optional the default `{}`, in place.

    The API server applies a field's default only inside an object that exists, so without this a
    DebugJob that leaves out `actions` shows no `actions.stop.gracePeriodSeconds` at all; with it,
    the spec the server stores (and `kubectl get -o yaml` shows) carries every default.
    """
    required = set(schema.get("required") or [])
    for name, prop in (schema.get("properties") or {}).items():
        if (
            prop.get("x-kubernetes-preserve-unknown-fields")
            or prop.get("type") != "object"
            or name == "template"
        ):
            continue  # the pod template is the user's, as written
        default_empty_objects(prop)
        if (
            name not in required
            and "default" not in prop
            and not prop.get("nullable")
            and not prop.get("required")
        ):
            prop["default"] = {}
    return schema


def _first_type(node: dict[str, Any]) -> str:
    t = node.get("type")
    if isinstance(t, list):
        non_null = [str(x) for x in t if x != "null"]
        return non_null[0] if non_null else "null"
    if t is None and "$ref" in node:
        return f"ref:{node['$ref']}"
    return str(t)


def _copy_annotations(node: dict[str, Any], out: dict[str, Any], keep: bool) -> None:
    if keep and node.get("description"):
        out["description"] = " ".join(str(node["description"]).split())
    if "default" in node and node["default"] is not None:
        out["default"] = copy.deepcopy(node["default"])
