"""The chart's CRDs (DebugJob, DebugPolicy): the same as the generated crds/*.yaml, templated, kept on uninstall.

The chart cannot read files outside its directory, so it holds copies in files/crds/. These tests
are the sync check: they fail when a copy and its crds/*.yaml differ in any byte.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.deploy.tooling import CHART, ROOT, by_kind, render

FILES = ("debugjob.yaml", "debugpolicy.yaml")


def _crd_named(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [d for d in by_kind(docs, "CustomResourceDefinition") if d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one CRD {name}, rendered {len(found)}"
    return found[0]


@pytest.mark.parametrize("file", FILES)
def test_the_chart_crd_is_a_byte_for_byte_copy_of_the_generated_one(file: str) -> None:
    generated = ROOT / "crds" / file
    copied = CHART / "files" / "crds" / file
    sync = f"cp {generated.relative_to(ROOT)} {copied.relative_to(ROOT)}"
    assert generated.exists(), f"crds/{file} is missing: generate it with `trainguard crd` (see its --kind)"
    assert copied.read_bytes() == generated.read_bytes(), f"the chart's CRD is out of date: run `{sync}`"


@pytest.mark.parametrize("file", FILES)
def test_the_rendered_crd_is_the_generated_one_plus_chart_labels_and_the_keep_policy(file: str) -> None:
    generated = yaml.safe_load((ROOT / "crds" / file).read_text())
    rendered = _crd_named(render(), generated["metadata"]["name"])
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
    unkept = by_kind(render(sets=["crds.keep=false"]), "CustomResourceDefinition")
    assert len(unkept) == len(FILES)
    assert all("helm.sh/resource-policy" not in (c["metadata"].get("annotations") or {}) for c in unkept)


def test_the_crd_is_not_in_the_chart_crds_directory() -> None:
    # Helm installs crds/ once and never upgrades it; the template path above is the only one.
    assert not (CHART / "crds").exists()
