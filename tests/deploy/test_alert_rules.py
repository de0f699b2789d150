"""The alert rules: valid for promtool, unit-tested case by case, documented with a runbook each.

`charts/trainguard/files/alerts.yaml` is the only copy of the rules (the PrometheusRule template
reads it); `charts/trainguard/tests-promtool/*.yaml` are promtool unit tests that must hold, for
every alert, one evaluation where it fires and one where it does not.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.deploy.tooling import ALERTS, PROMTOOL_TESTS, ROOT, find_tool, run_tool


def _alerts() -> list[dict[str, object]]:
    return [
        rule
        for group in yaml.safe_load(ALERTS.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def test_promtool_accepts_the_rules_file() -> None:
    out = run_tool([find_tool("promtool"), "check", "rules", str(ALERTS)]).stdout
    assert f"SUCCESS: {len(_alerts())} rules found" in out, out


def test_promtool_unit_tests_of_the_alerts_pass() -> None:
    assert PROMTOOL_TESTS, "no promtool unit tests in charts/trainguard/tests-promtool/"
    out = run_tool([find_tool("promtool"), "test", "rules", *map(str, PROMTOOL_TESTS)]).stdout
    assert "SUCCESS" in out and "FAILED" not in out, out


def test_a_wrong_expectation_makes_promtool_fail(tmp_path: Path) -> None:
    # The unit tests above can fail: flip one expectation and promtool must say so.
    source = PROMTOOL_TESTS[0]
    text = source.read_text().replace("../files/alerts.yaml", str(ALERTS))
    broken = text.replace("rule: nan_guard}", "rule: overtraining}", 1)
    assert broken != text
    (tmp_path / "broken_test.yaml").write_text(broken)
    proc = run_tool([find_tool("promtool"), "test", "rules", str(tmp_path / "broken_test.yaml")], check=False)
    assert proc.returncode != 0 and "FAILED" in proc.stdout + proc.stderr


def test_every_alert_has_a_firing_and_a_quiet_unit_test() -> None:
    fires: set[str] = set()
    quiet: set[str] = set()
    for path in PROMTOOL_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (fires if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {str(a["alert"]) for a in _alerts()}
    assert not names - fires, f"alerts never tested firing: {sorted(names - fires)}"
    assert not names - quiet, f"alerts never tested quiet: {sorted(names - quiet)}"
    assert not (fires | quiet) - names, f"tests of unknown alerts: {sorted((fires | quiet) - names)}"


@pytest.mark.parametrize("alert", _alerts(), ids=lambda a: str(a["alert"]))
def test_every_alert_has_severity_summary_description_and_a_runbook_page(alert: dict[str, object]) -> None:
    name = str(alert["alert"])
    assert re.fullmatch(r"TrainGuard[A-Z]\w+", name), name
    labels = alert["labels"]
    annotations = alert["annotations"]
    assert isinstance(labels, dict) and labels.get("severity") in {"info", "warning", "critical"}
    assert isinstance(annotations, dict) and annotations.get("summary") and annotations.get("description")
    # The PrometheusRule links <runbookBaseUrl>/<alert lowercased>/: the docs site's page of this file.
    page = ROOT / "docs" / "runbooks" / f"{name.lower()}.md"
    assert page.is_file(), f"no runbook page {page.relative_to(ROOT)}"
    text = page.read_text()
    assert text.startswith(f"# {name}\n"), f"{page.name} must start with the heading '# {name}'"
    assert len(text.split()) >= 40, f"the runbook of {name} is too short to help"
