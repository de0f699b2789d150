"""The fourteenth blind split of the detection benchmark (`benchmarks/detection/blind14/`) is trained by the runner
with its own scripts, its squash, pitch decoding and evidential likelihood behave as their definitions say, its expert
reaches the goal, and a neural additive model built from one repeated module shares its parameters (its declarations,
a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind14 import smoke, suite
from benchmarks.detection.blind14.behaviour import HORIZON, _move, _starts, expert
from benchmarks.detection.blind14.perception import BINS, decode, squash
from benchmarks.detection.blind14.tabular import AdditiveModel, nig_nll

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_squash_keeps_the_direction_and_bounds_the_length_below_one() -> None:
    s = torch.tensor([[3.0, 4.0], [0.03, 0.04]])
    v = squash(s)
    assert torch.allclose(v.norm(dim=1), torch.tensor([25 / 26, 0.0025 / 1.0025]), atol=1e-5)
    assert torch.allclose(v / v.norm(dim=1, keepdim=True), s / s.norm(dim=1, keepdim=True), atol=1e-5)


def test_pitch_decoding_reads_a_fractional_bin_between_two_active_bins() -> None:
    logits = torch.full((1, BINS), -10.0)
    logits[0, 10] = logits[0, 11] = 10.0
    assert float(decode(logits)) == pytest.approx(10.5, abs=1e-3)


def test_evidential_likelihood_is_the_student_t_marginal() -> None:
    y, gamma, nu, alpha, beta = (torch.tensor([v]) for v in (0.7, 0.2, 1.5, 2.5, 0.8))
    nll = nig_nll(y, gamma, nu, alpha, beta, 2 * beta * (1 + nu))
    student = torch.distributions.StudentT(2 * alpha, gamma, torch.sqrt(beta * (1 + nu) / (nu * alpha)))
    assert float(nll) == pytest.approx(-float(student.log_prob(y)), rel=1e-4)


def test_the_expert_brings_the_point_mass_close_to_its_goal() -> None:
    state = _starts(torch.Generator().manual_seed(0), 64)
    start = (state[:, 4:] - state[:, :2]).norm(dim=1)
    for _ in range(HORIZON):
        state = _move(state, expert(state))
    assert float(((state[:, 4:] - state[:, :2]).norm(dim=1) / start).max()) < 0.05


@pytest.mark.parametrize(("bug", "shapes"), [(None, 6), ("feature_nets_one_module_repeated", 1)])
def test_additive_model_has_one_shape_network_per_field_unless_one_is_repeated(
    bug: str | None, shapes: int
) -> None:
    model = AdditiveModel(8, bug)
    assert len({id(m) for m in model.shapes}) == shapes


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "cloning_gaussian_adam"]) == 0
    assert "blind14_cloning_gaussian_adam" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    truth = run._train_one(
        (replace(BY_NAME["blind14_H22_target_item_ids_off_by_one"], steps=3), 1, str(tmp_path))
    )
    assert truth.program == "blind14_H22_target_item_ids_off_by_one" and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
