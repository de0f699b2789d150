"""The chart as a dependency of an umbrella chart, with the real helm: `dependency update` from a file://
repository, then `lint --strict` and `template`, with `global` values set as umbrella charts do.

The values schema still rejects a typo under the subchart's key: accepting `global` opened nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.tooling import CHART, find_tool, run_tool

pytestmark = pytest.mark.slow


@pytest.fixture
def umbrella(tmp_path: Path) -> Path:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    root = tmp_path / "platform"
    root.mkdir()
    (root / "Chart.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": "platform",
                "version": "1.0.0",
                "kubeVersion": ">=1.29.0-0",
                "dependencies": [
                    {"name": "trainguard", "version": chart["version"], "repository": f"file://{CHART}"}
                ],
            }
        )
    )
    (root / "values.yaml").write_text(
        yaml.safe_dump(
            {
                "global": {"imageRegistry": "registry.example.internal", "imagePullSecrets": ["pull"]},
                "trainguard": {
                    "additionalLabels": {"release": "kps"},
                    "metrics": {"prometheusRule": {"enabled": True}},
                },
            }
        )
    )
    run_tool([find_tool("helm"), "dependency", "update", str(root)])
    assert (root / "charts" / f"trainguard-{chart['version']}.tgz").is_file()
    return root


def _template(root: Path, *sets: str, check: bool = True) -> str:
    args = [find_tool("helm"), "template", "p", str(root), "-n", "platform", "--kube-version", "1.32.0"]
    for s in sets:
        args += ["--set", s]
    proc = run_tool(args, check=check)
    return proc.stdout + proc.stderr


def test_the_umbrella_chart_lints_strictly(umbrella: Path) -> None:
    out = run_tool([find_tool("helm"), "lint", "--strict", str(umbrella), "--kube-version", "1.32.0"]).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out, out


def test_the_umbrella_renders_trainguard_with_its_values_under_the_dependency_key(umbrella: Path) -> None:
    objects = [d for d in yaml.safe_load_all(_template(umbrella)) if d]
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "CustomResourceDefinition", "ClusterRole", "PrometheusRule"} <= kinds
    assert all(
        o["metadata"]["labels"]["release"] == "kps"
        for o in objects
        if o["kind"] != "CustomResourceDefinition"
    )
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["metadata"]["name"] == "p-trainguard"


def test_a_typo_under_the_dependency_key_is_still_rejected(umbrella: Path) -> None:
    out = _template(umbrella, "trainguard.imagee.tag=x", check=False)
    assert "Additional property imagee is not allowed" in out, out
