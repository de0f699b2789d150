"""The third blind split of the detection benchmark (`benchmarks/detection/blind3/`) is trained by the
runner with its own scripts (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind3 import smoke, suite

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_runner_trains_a_program_of_this_split_with_its_scripts(tmp_path: Path) -> None:
    # the split's programs subclass the first split's: the runner must not hand them to an earlier split's scripts
    prog = replace(BY_NAME["blind3_Z03_sum_reduction_under_mean_tuned_sgd"], steps=3)
    truth = run._train_one((prog, 0, str(tmp_path)))
    assert truth.program == prog.name and len(truth.losses) == 3
    # the pinball loss summed over 256 rows x 12 steps x 3 quantiles, not averaged
    assert truth.losses[0] > 100


def test_smoke_runner_runs_this_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert smoke.main(["--steps", "3", "--programs", "mdn_inverse_problem"]) == 0
    assert "blind3_mdn_inverse_problem" in capsys.readouterr().out
