"""The fifth blind split of the detection benchmark (`benchmarks/detection/blind5/`) is trained by the
runner with its own scripts (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.detection import run
from benchmarks.detection.blind5 import smoke, suite

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_runner_trains_a_program_of_this_split_with_its_scripts(tmp_path: Path) -> None:
    # the split's programs subclass the first split's: the runner must not hand them to an earlier split's scripts
    prog = replace(BY_NAME["blind5_V17_loss_clamped_instead_of_gradients"], steps=3)
    truth = run._train_one((prog, 0, str(tmp_path)))
    assert truth.program == prog.name and len(truth.losses) == 3
    # the cross-entropy of 4 classes starts near log 4 > 1, so the clamped loss reads exactly its bound
    assert truth.losses[0] == 1.0


def test_smoke_runner_runs_this_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert smoke.main(["--steps", "3", "--programs", "fakequant_mlp_lion"]) == 0
    assert "blind5_fakequant_mlp_lion" in capsys.readouterr().out
