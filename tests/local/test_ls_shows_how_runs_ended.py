"""`trainguard ls` after `trainguard run`: each run's findings and how it ended, as a user sees them.

Four runs made by the real CLI in one directory: a healthy one, one whose script raised, one a rule
stopped, one with info notes only. `trainguard ls` without an argument lists `./trainguard-runs`,
where `trainguard run` writes; the crashed run never reads as ok, the stopped one names its rule, and
the findings come from the verdicts `trainguard run` leaves in each run, counted as `run` counts
them (warning and critical).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from localmode import CliResult, run_cli

SCRIPT = """
import sys
import numpy as np
import trainguard

crash = sys.argv[1] == "crash"
rng = np.random.default_rng(0)
with trainguard.Recorder(save_interval=1) as rec:
    for step in range(40):
        rec.record_tensor("fc.weight", rng.standard_normal((8, 8)).astype(np.float32), collection="weights")
        rec.record_scalar("loss", 1.0 / (step + 1))
        if sys.argv[1] == "imbalanced":  # 50 to 1: class_imbalance notes it, at severity info
            rec.record_scalar("label_count/cat", 100.0)
            rec.record_scalar("label_count/dog", 2.0)
        rec.step()
        if crash and step == 30:
            raise RuntimeError("the data loader broke")
"""


def test_ls_without_an_argument_shows_each_local_runs_end_state_and_findings(
    tmp_path: Path, trainguard_run: Callable[..., CliResult], nan_script: list[str]
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert (
        trainguard_run(
            "--run-id", "healthy", "--no-report", cmd=[sys.executable, str(script), "ok"]
        ).returncode
        == 0
    )
    crashed = trainguard_run("--run-id", "crashed", "--no-report", cmd=[sys.executable, str(script), "crash"])
    assert crashed.returncode == 1, crashed.stderr
    stopped = trainguard_run("--run-id", "stopped", "--no-report", cmd=[*nan_script, "plain", "20"])
    assert stopped.returncode == 3, stopped.stderr
    noted = trainguard_run(
        "--run-id", "noted", "--no-report", cmd=[sys.executable, str(script), "imbalanced"]
    )
    assert noted.returncode == 0 and noted.said.splitlines()[-1].endswith("; no findings"), noted.stderr

    out = run_cli(["ls"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    header, *lines, total = out.stdout.splitlines()
    assert header.split()[-3:] == ["ENDED", "FINDINGS", "STATE"]
    assert total == f"4 runs under {(tmp_path / 'trainguard-runs').as_uri()}"
    rows = {line.split()[0].rsplit("/", 1)[-1]: line for line in lines}
    assert rows["healthy"].split()[-3:] == ["1", "0", "ok"]
    assert rows["noted"].split()[-3:] == ["1", "0", "ok"]  # info notes only: it did not warn, as run said
    assert "(ok)" not in rows["crashed"] and not rows["crashed"].endswith(" ok")
    assert rows["crashed"].endswith("crashed: exited with status 1; RuntimeError: the data loader broke")
    assert rows["stopped"].endswith("stopped by rule exploding_tensor")

    runs = {r["run_id"]: r for r in json.loads(run_cli(["ls", "--json"], cwd=tmp_path).stdout)}
    assert runs["healthy"]["findings"] == 0 and runs["healthy"]["state"] == "ok"
    assert runs["noted"]["findings"] == 0 and runs["noted"]["findings_by_severity"]["info"] > 0
    assert runs["stopped"]["stopped_by"] == ["exploding_tensor"]
    # the count ls shows is the one the run reported
    assert runs["stopped"]["findings_by_rule"]["exploding_tensor"] == sum(
        f["rule"] == "exploding_tensor" for f in stopped.doc["findings"]
    )
