"""The tenth blind split of the detection benchmark (`benchmarks/detection/blind10/`) is trained by the
runner with its own scripts (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind10 import smoke, suite

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_runner_trains_a_program_of_this_split_with_its_scripts(tmp_path: Path) -> None:
    # the split's programs subclass the first split's: the runner must not hand them to an earlier split's scripts
    prog = replace(BY_NAME["blind10_R01_log_of_unclamped_prediction"], steps=3)
    truth = run._train_one((prog, 0, str(tmp_path)))
    assert truth.program == prog.name and len(truth.losses) == 3
    # the raw output of a freshly initialised network is negative somewhere: its log is NaN from the first step
    assert not math.isfinite(truth.losses[0])
    twin = run._train_one((replace(BY_NAME[prog.twin or ""], steps=3), 0, str(tmp_path / "twin")))
    assert all(math.isfinite(x) for x in twin.losses)


def test_smoke_runner_runs_this_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert smoke.main(["--steps", "3", "--programs", "neural_tpp_softplus_adam"]) == 0
    assert "blind10_neural_tpp_softplus_adam" in capsys.readouterr().out
