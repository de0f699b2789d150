"""The sixth blind split of the detection benchmark (`benchmarks/detection/blind6/`) is trained by the
runner with its own scripts (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind6 import smoke, suite

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_runner_trains_a_program_of_this_split_with_its_scripts(tmp_path: Path) -> None:
    # the split's programs subclass the first split's: the runner must not hand them to an earlier split's scripts
    prog = replace(BY_NAME["blind6_U14_negatives_labelled_positive"], steps=3)
    truth = run._train_one((prog, 0, str(tmp_path)))
    assert truth.program == prog.name and len(truth.losses) == 3
    # every pair is labelled 1, so the link scores are pushed up and the BCE falls at each of the first steps
    assert truth.losses[0] > truth.losses[1] > truth.losses[2]


def test_smoke_runner_runs_this_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert smoke.main(["--steps", "3", "--programs", "lbfgs_logistic_quadratic"]) == 0
    assert "blind6_lbfgs_logistic_quadratic" in capsys.readouterr().out
