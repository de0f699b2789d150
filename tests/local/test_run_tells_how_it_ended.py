"""`trainguard run` tells how every run ended, in its last line, `--json` `end` and END.json, within 80 columns.

Each test runs the real CLI on a small numpy training script (`trainguard_run`): killed by a signal, ending
well without an eval loss (rules that never got their data say "not checked"), and the rules chosen with
`--stop`, `--notify` and rules files that extend the default set or, with `defaults: false`, replace it.
Crashes and cooperative stops are in `test_run_never_silent.py`.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from localmode import run_cli

import trainguard

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np
    import trainguard

    kill_at = int(sys.argv[1]) if len(sys.argv) > 1 else -1
    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 8)).astype(np.float32)
    with trainguard.Recorder() as rec:
        for step in range(60):
            w -= 0.01 * rng.normal(size=w.shape).astype(np.float32)
            rec.record_tensor("fc.weight", w, collection="weights")
            rec.record_scalar("loss", 1.0 / (step + 1))
            rec.step()
            if step == kill_at:
                rec.flush()
                assert rec._writer.wait_idle(60)  # what was written is in the store (no timing involved)
                os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer's way: no cleanup, no END.json
    """
)


@pytest.fixture
def script(tmp_path: Path) -> list[str]:
    (tmp_path / "train.py").write_text(SCRIPT)
    return [sys.executable, str(tmp_path / "train.py")]


def test_a_killed_command_is_told_killed_by_its_signal_not_crashed_nor_ok(trainguard_run, script) -> None:
    res = trainguard_run(cmd=[*script, "30"])
    assert res.returncode == 128 + 9, res.stderr
    assert res.doc["end"]["state"] == "killed" and res.doc["end"]["signal"] == "SIGKILL"
    last = res.said.splitlines()[-1]
    assert last.startswith("[trainguard] KILLED by SIGKILL at step 30; exit status 137; "), last
    end = trainguard.open_run(res.doc["run_uri"]).ended()
    assert end is not None and end.status == "killed" and end.written_by == "supervisor"
    assert res.wide_lines() == []


def test_rules_without_their_data_say_not_checked_in_one_line_and_the_json(trainguard_run, script) -> None:
    res = trainguard_run(cmd=script)
    assert res.returncode == 0, res.stderr
    assert res.doc["end"]["state"] == "ok"
    not_checked = res.doc["end"]["not_checked"]
    assert not_checked["overfit"] == "not checked: no eval loss recorded"
    assert "loss_spike" not in not_checked  # it got the training loss
    assert res.doc["rules"]["overfit"]["message"] == "not checked: no eval loss recorded"
    assert (
        res.doc["rules"]["overfit"]["checked"] is False and res.doc["rules"]["loss_spike"]["checked"] is True
    )
    quiet = [line for line in res.said.splitlines() if " rules checked, no issues; " in line]
    assert len(quiet) == 1 and f"{len(not_checked)} not checked: " in quiet[0], res.stderr
    assert "overfit (no eval loss recorded)" in quiet[0]
    assert "NoIssuesFound" not in res.stderr  # no table of 17 rows
    assert res.said.splitlines()[-1].startswith("[trainguard] ended ok at step ")
    assert res.wide_lines() == []

    # the same run evaluated again: the table's state says what its message says
    table = run_cli(["evaluate", res.doc["run_uri"]], cwd=Path(script[1]).parent).stdout
    rows = {line.split()[0]: line.split()[1] for line in table.splitlines() if line.split()}
    assert rows["overfit"] == "NotChecked" and rows["loss_spike"] == "NoIssuesFound", table


def test_stop_makes_a_rule_stop_and_keeps_the_nan_stop(trainguard_run, script) -> None:
    res = trainguard_run("--stop", "weight_update_ratio", "--notify", "diverging_loss", cmd=script)
    assert res.returncode == 0, res.stderr
    rules = res.doc["rules"]
    assert rules["weight_update_ratio"]["action"] == "stop" and rules["exploding_tensor"]["action"] == "stop"
    assert rules["diverging_loss"]["action"] == "notify" and "overfit" in rules  # the rest of the default set
    assert res.doc["warnings"] == [] and "warning:" not in res.stderr


def test_stop_with_a_rule_that_does_not_exist_is_refused_before_the_command_starts(
    trainguard_run, script, tmp_path: Path
) -> None:
    res = trainguard_run("--stop", "weight_update_ration", cmd=script)
    assert res.returncode == 2
    assert "--stop/--notify weight_update_ration: no such rule" in res.stderr
    assert not (tmp_path / "trainguard-runs").exists()


def test_a_rules_file_extends_the_default_set(trainguard_run, script, tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(
        "rules:\n  - type: weight_update_ratio\n    action: stop\n  - type: all_zero\n"
    )
    res = trainguard_run("--rules", "rules.yaml", cmd=script)
    assert res.returncode == 0, res.stderr
    rules = res.doc["rules"]
    assert rules["exploding_tensor"]["action"] == "stop"  # the NaN safety net stays
    assert rules["weight_update_ratio"]["action"] == "stop" and "all_zero" in rules and "overfit" in rules
    assert res.doc["warnings"] == []


def test_defaults_false_runs_only_the_file_and_warns_that_the_nan_stop_is_gone(
    trainguard_run, script, tmp_path: Path
) -> None:
    (tmp_path / "rules.yaml").write_text(
        "defaults: false\nrules:\n  - type: weight_update_ratio\n    action: stop\n"
    )
    res = trainguard_run("--rules", "rules.yaml", cmd=script)
    assert res.returncode == 0, res.stderr
    assert list(res.doc["rules"]) == ["weight_update_ratio"]
    (warning,) = res.doc["warnings"]
    assert warning.startswith("no rule stops the run on NaN or Inf: the rules lack exploding_tensor")
    said = res.said.splitlines()
    assert said[0] == f"[trainguard] warning: {warning}"  # before the command starts, and again at the end
    assert f"[trainguard] warning: {warning}" in said[1:]
    assert res.wide_lines() == []
