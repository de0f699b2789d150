"""The Grafana dashboards: well-formed, `${datasource}` everywhere, laid out without overlaps, valid PromQL.

No Grafana server can run here (TESTING.md), so the checks are structural plus promtool on every
query. That each query's metrics exist and return data is checked against real exporters and a real
Prometheus in test_metrics_live.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.deploy.grafana import all_queries, load, panels, queries
from tests.deploy.promql import grafana_to_promql, selectors
from tests.deploy.tooling import DASHBOARDS, find_tool, run_tool

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def test_there_are_a_fleet_and_a_training_run_dashboard() -> None:
    titles = {load(p)["title"] for p in DASHBOARDS}
    assert titles == {"TrainGuard / Fleet overview", "TrainGuard / Training run"}
    uids = [load(p)["uid"] for p in DASHBOARDS]
    assert len(set(uids)) == len(uids) and all(len(u) <= 40 for u in uids)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_panel_and_query_uses_the_datasource_variable(path: Path) -> None:
    dashboard = load(path)
    (ds_var,) = [v for v in dashboard["templating"]["list"] if v["name"] == "datasource"]
    assert ds_var["type"] == "datasource" and ds_var["query"] == "prometheus"
    for panel in panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE and target["expr"].strip(), panel["title"]
        assert panel.get("description"), f"panel {panel['title']!r} needs a description (the (i) tooltip)"
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            assert var["datasource"] == DATASOURCE, var["name"]
    # No hard-coded datasource anywhere: the dashboards must import into any Grafana.
    text = path.read_text()
    assert '"uid": "prometheus"' not in text and "${DS_" not in text


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_panels_fit_the_grid_without_overlapping(path: Path) -> None:
    taken: dict[tuple[int, int], str] = {}
    for panel in panels(load(path)):
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']!r} overlaps {taken[x, y]!r}"
                taken[x, y] = panel["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_template_variables_used_in_queries_are_defined(path: Path) -> None:
    dashboard = load(path)
    defined = {v["name"] for v in dashboard["templating"]["list"]} | {
        "__rate_interval",
        "__interval",
        "__range",
    }
    used = {m for q in queries(dashboard) for m in re.findall(r"\$\{?(\w+)\}?", q)}
    assert used <= defined, f"undefined variables: {used - defined}"


def test_every_dashboard_query_is_valid_promql_for_promtool(tmp_path: Path) -> None:
    exprs = all_queries()
    assert len(exprs) >= 30
    rules = {"groups": [{"name": "dashboards", "rules": [
        {"record": f"dashboard:query:{i}", "expr": grafana_to_promql(e)} for i, e in enumerate(exprs)
    ]}]}  # fmt: skip
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(rules))
    out = run_tool([find_tool("promtool"), "check", "rules", str(path)]).stdout
    assert f"SUCCESS: {len(exprs)} rules found" in out, out


def test_promtool_rejects_a_broken_query(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        yaml.safe_dump({"groups": [{"name": "g", "rules": [{"record": "r", "expr": "sum by (rule (x)"}]}]})
    )
    proc = run_tool([find_tool("promtool"), "check", "rules", str(path)], check=False)
    assert proc.returncode != 0


def test_every_dashboard_query_selects_a_trainguard_metric_or_up() -> None:
    for expr in all_queries():
        sels = selectors(grafana_to_promql(expr))
        assert sels, f"no metric in {expr!r}"
        for sel in sels:
            name = sel.split("{", 1)[0]
            assert name.startswith("trainguard_") or name == "up", f"{sel} in {expr!r}"
            if name == "up":
                assert 'job="trainguard-' in sel, f"`up` must be restricted to our scrape jobs: {expr!r}"
