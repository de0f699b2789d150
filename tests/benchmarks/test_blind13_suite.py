"""The thirteenth blind split of the detection benchmark (`benchmarks/detection/blind13/`) is trained by the runner
with its own scripts, its box losses and NDCG behave as their definitions say, its pendulum trajectories conserve
energy, and its spiking layer passes a gradient only through the surrogate (its declarations, a run through the hook,
the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind13 import smoke, suite
from benchmarks.detection.blind13.energy import _trajectories
from benchmarks.detection.blind13.perception import SpikingNet, box_iou
from benchmarks.detection.blind13.preferences import ndcg

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_iou_is_one_on_the_same_box_and_giou_negative_on_disjoint_boxes() -> None:
    boxes = torch.tensor([[0.1, 0.1, 0.5, 0.6], [0.0, 0.0, 0.2, 0.2]])
    iou, giou = box_iou(boxes, boxes)
    assert torch.allclose(iou, torch.ones(2), atol=1e-5) and torch.allclose(giou, torch.ones(2), atol=1e-5)
    iou, giou = box_iou(boxes[1:], torch.tensor([[0.6, 0.6, 0.9, 0.9]]))
    assert float(iou) == 0.0 and float(giou) < 0.0


def test_ndcg_is_one_for_the_ideal_ranking_and_less_when_reversed() -> None:
    grades = torch.tensor([[4.0, 3, 2, 1, 0] + [0.0] * 15])
    assert float(ndcg(grades, grades)) == pytest.approx(1.0)
    assert float(ndcg(-grades, grades)) < 0.5


def test_pendulum_trajectories_conserve_energy() -> None:
    paths = _trajectories(torch.Generator().manual_seed(0), 8, 30)
    energy = paths[..., 1] ** 2 / 2 + 1 - torch.cos(paths[..., 0])
    assert float((energy.max(1).values - energy.min(1).values).max()) < 0.1


@pytest.mark.parametrize("bug", [None, "spike_without_surrogate"])
def test_input_weights_get_a_gradient_only_through_the_surrogate(bug: str | None) -> None:
    torch.manual_seed(0)
    model = SpikingNet(16)
    model(3 * torch.randn(32, 10), bug=bug).sum().backward()
    grad = model.inp.weight.grad
    assert (grad is not None and bool(grad.abs().sum() > 0)) == (bug is None)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "hnn_pendulum_adam"]) == 0
    assert "blind13_hnn_pendulum_adam" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    truth = run._train_one(
        (replace(BY_NAME["blind13_J17_pairs_oriented_by_scores"], steps=3), 1, str(tmp_path))
    )
    assert truth.program == "blind13_J17_pairs_oriented_by_scores" and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
