"""The examples under `trainguard run`: healthy ones exit 0 without warnings, faulty ones are reported.

Rules with action `notify` (the default for all but exploding_tensor) report and let the run go on,
so a faulty example that does not produce NaN still exits with its own status 0.
"""

from __future__ import annotations

import pytest
from localmode import example

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("script", ["pytorch_healthy.py", "numpy_healthy.py"])
def test_healthy_example_exits_0_with_no_warnings(trainguard_run, script: str) -> None:
    res = trainguard_run(cmd=example(script))
    assert res.returncode == 0, res.stderr
    assert res.doc["stopped"] is False
    assert res.severe_findings() == [], res.severe_findings()
    assert all(r["state"] == "NoIssuesFound" for r in res.doc["rules"].values()), res.doc["rules"]
    assert res.doc["last_step"] is not None and res.doc["last_step"] > 100
    assert res.stderr.splitlines()[-1].startswith("[trainguard] ended ok at step ")
    assert res.doc["end"]["state"] == "ok" and res.doc["end"]["summary"].endswith(
        "exit status 0; no findings"
    )
    assert res.wide_lines() == []


@pytest.mark.parametrize(
    ("script", "rule"),
    [("numpy_vanishing.py", "vanishing_gradient"), ("pytorch_dead_relu.py", "dead_relu")],
)
def test_faulty_example_is_reported_by_its_rule_and_not_stopped(
    trainguard_run, script: str, rule: str
) -> None:
    res = trainguard_run(cmd=example(script))
    assert res.returncode == 0, res.stderr
    assert res.doc["stopped"] is False
    fired = {f["rule"] for f in res.severe_findings()}
    assert rule in fired, res.doc["findings"][:5]
    assert res.doc["rules"][rule]["state"] == "IssuesFound"
    assert f"{rule} (warning" in res.said or f"{rule} (critical" in res.said
    first = min(res.severe_findings(), key=lambda f: f["step"])
    assert f"the first, step {first['step']} on rank {first['rank']}: {first['rule']} (" in res.said
    assert res.doc["end"]["state"] == "ok" and res.doc["end"]["findings"]["warning"] >= 1
    assert res.wide_lines() == []
