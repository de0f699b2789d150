"""The eleventh blind split of the detection benchmark (`benchmarks/detection/blind11/`) is trained by the
runner with its own scripts, its hand-written sparsemax is one, and its GRU-D sees missing values only through the
mask (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind11 import smoke, suite
from benchmarks.detection.blind11.series import sparsemax

BY_NAME = {p.name: p for p in suite.catalogue()}


@pytest.mark.parametrize("bug", ["nan_values_not_filled", "observation_mask_inverted"])
def test_missing_values_reach_grud_only_through_the_mask(bug: str) -> None:
    # the same model and batch with and without the mistake: NaN left in the values poisons the loss at once, an
    # inverted mask keeps it finite (the model just reads the wrong entries), the twin is finite
    prog = BY_NAME["blind11_grud_irregular_adam"]
    losses = {b: suite.train(replace(prog, bug=b, steps=2), 0, out=None).losses for b in (None, bug)}
    assert all(math.isfinite(x) for x in losses[None])
    assert all(math.isfinite(x) for x in losses[bug]) == (bug == "observation_mask_inverted")


def test_sparsemax_projects_onto_the_simplex() -> None:
    out = sparsemax(torch.tensor([[3.0, 1.0, 0.2], [0.1, 0.1, 0.1]]))
    assert torch.equal(out[0], torch.tensor([1.0, 0.0, 0.0]))  # a dominant score takes the whole mass
    assert torch.allclose(out[1], torch.full((3,), 1 / 3))  # equal scores share it
    assert torch.allclose(out.sum(-1), torch.ones(2))


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "ge2e_speaker_adam"]) == 0
    assert "blind11_ge2e_speaker_adam" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    truth = run._train_one(
        (replace(BY_NAME["blind11_S04_mask_softmax_over_frequency"], steps=3), 1, str(tmp_path))
    )
    assert truth.program == "blind11_S04_mask_softmax_over_frequency" and len(truth.losses) == 3
