"""The seventh blind split of the detection benchmark (`benchmarks/detection/blind7/`) is trained by the
runner with its own scripts (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind7 import smoke, suite

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_runner_trains_a_program_of_this_split_with_its_scripts(tmp_path: Path) -> None:
    # the split's programs subclass the first split's: the runner must not hand them to an earlier split's scripts
    prog = replace(BY_NAME["blind7_T03_l1_summed_over_batch"], steps=3)
    truth = run._train_one((prog, 0, str(tmp_path)))
    assert truth.program == prog.name and len(truth.losses) == 3
    # the penalty summed over a batch of 256 dwarfs the reconstruction error, and the first steps cut it down
    assert truth.losses[0] > truth.losses[1] > truth.losses[2]


def test_smoke_runner_runs_this_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert smoke.main(["--steps", "3", "--programs", "sparse_autoencoder_l1"]) == 0
    assert "blind7_sparse_autoencoder_l1" in capsys.readouterr().out
