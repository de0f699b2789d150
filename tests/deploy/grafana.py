"""Reads the chart's Grafana dashboards: panels (rows' nested ones included) and every PromQL query in them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.deploy.tooling import DASHBOARDS


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Return every panel, rows' nested panels included."""
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def queries(dashboard: dict[str, Any]) -> list[str]:
    """Return every PromQL expression: panel targets and the selectors inside label_values() variables."""
    exprs = [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            definition = var["query"]["query"]
            assert definition.startswith("label_values(") and definition.endswith(")"), definition
            exprs.append(definition[len("label_values(") :].rsplit(",", 1)[0])
    return exprs


def all_queries() -> list[str]:
    """Return the queries of every dashboard in the chart."""
    return [q for path in DASHBOARDS for q in queries(load(path))]
