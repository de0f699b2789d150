"""The chart's DebugJob CRD: the same as the generated crds/debugjob.yaml, templated, kept on uninstall.

The chart cannot read files outside its directory, so it holds a copy in files/crds/. These tests
are the sync check: they fail when the copy and crds/debugjob.yaml differ in any byte.
"""

from __future__ import annotations

import copy

import yaml

from tests.deploy.tooling import CHART, ROOT, by_kind, one, render

GENERATED = ROOT / "crds" / "debugjob.yaml"
COPY = CHART / "files" / "crds" / "debugjob.yaml"
SYNC = f"cp {GENERATED.relative_to(ROOT)} {COPY.relative_to(ROOT)}"


def test_the_chart_crd_is_a_byte_for_byte_copy_of_crds_debugjob_yaml() -> None:
    assert GENERATED.exists(), (
        "crds/debugjob.yaml is missing: generate it with `trainguard crd > crds/debugjob.yaml`"
    )
    assert COPY.read_bytes() == GENERATED.read_bytes(), f"the chart's CRD is out of date: run `{SYNC}`"


def test_the_rendered_crd_is_the_generated_one_plus_chart_labels_and_the_keep_policy() -> None:
    rendered = one(render(), "CustomResourceDefinition")
    generated = yaml.safe_load(GENERATED.read_text())
    meta = rendered["metadata"]
    assert meta["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert generated["metadata"].get("labels", {}).items() <= meta["labels"].items()
    stripped = copy.deepcopy(rendered)
    stripped["metadata"]["labels"] = generated["metadata"].get("labels")
    del stripped["metadata"]["annotations"]
    if stripped["metadata"]["labels"] is None:
        del stripped["metadata"]["labels"]
    assert stripped == generated


def test_the_crd_can_be_left_out_or_left_to_helm_uninstall() -> None:
    assert not by_kind(render(sets=["crds.enabled=false"]), "CustomResourceDefinition")
    unkept = one(render(sets=["crds.keep=false"]), "CustomResourceDefinition")
    assert "helm.sh/resource-policy" not in (unkept["metadata"].get("annotations") or {})


def test_the_crd_is_not_in_the_chart_crds_directory() -> None:
    # Helm installs crds/ once and never upgrades it; the template path above is the only one.
    assert not (CHART / "crds").exists()
