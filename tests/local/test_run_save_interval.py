"""`trainguard run --save-interval N` reaches the script's hook: the run holds every Nth step only."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from localmode import CliResult

import trainguard

SCRIPT = """
import numpy as np
import trainguard

w = np.ones((4, 4), np.float32)
with trainguard.Recorder() as rec:
    for step in range(23):
        rec.record_tensor("fc.weight", w * (1 + step), collection="weights")
        rec.record_scalar("loss", 1.0 / (1 + step))
        rec.step()
"""


def _saved_steps(result: CliResult) -> list[int]:
    run = trainguard.open_run(result.doc["run_uri"])
    return [int(s) for s in run.steps()]


def test_save_interval_flag_sets_the_steps_the_hook_saves(
    tmp_path: Path, trainguard_run: Callable[..., CliResult]
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = trainguard_run("--save-interval", "5", "--no-report", cmd=[sys.executable, str(script)])
    assert result.returncode == 0, result.stderr
    assert _saved_steps(result) == [0, 5, 10, 15, 20]


def test_without_the_flag_the_hook_keeps_its_default_interval(
    tmp_path: Path, trainguard_run: Callable[..., CliResult]
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = trainguard_run("--no-report", cmd=[sys.executable, str(script)])
    assert result.returncode == 0, result.stderr
    assert _saved_steps(result) == [0, 10, 20]


def test_a_save_interval_below_one_is_refused_before_the_command_starts(
    tmp_path: Path, trainguard_run: Callable[..., CliResult]
) -> None:
    marker = tmp_path / "started"
    result = trainguard_run("--save-interval", "0", cmd=[sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert result.returncode == 2
    assert "--save-interval" in result.stderr and "at least 1" in result.stderr
    assert not marker.exists()
