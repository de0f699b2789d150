"""The sixteenth blind split of the detection benchmark (`benchmarks/detection/blind16/`) is trained by the runner
with its own scripts, its accelerometer windows carry gravity through a proper rotation, its meter sums the heater,
its walker frame points along the last step, its grey pictures stay in [0, 1], and its refunds keep a finite signed log
(its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind16 import smoke, suite
from benchmarks.detection.blind16.markets import _numeric, _transactions
from benchmarks.detection.blind16.sensors import GRAVITY, _house, _rotations, _windows
from benchmarks.detection.blind16.spatial import _grey, _pictures, _tracks, _walker_frame

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_rotations_are_proper_and_windows_carry_gravity() -> None:
    g = torch.Generator().manual_seed(0)
    r = _rotations(g, 16)
    assert torch.allclose(r @ r.transpose(1, 2), torch.eye(3).expand(16, 3, 3), atol=1e-5)
    assert torch.allclose(torch.linalg.det(r), torch.ones(16), atol=1e-5)
    x, y = _windows(g, 4, 50)
    still = x[y == 0]
    assert x.shape == (200, 3, 64)
    assert float(still.mean(2).norm(dim=1).mean()) == pytest.approx(GRAVITY, rel=0.02)


def test_mains_sum_the_heater_and_the_reactive_column_is_empty() -> None:
    meter, heater = _house(torch.Generator().manual_seed(0), 3000)
    assert meter.shape == (3, 3000) and heater.shape == (3000,)
    assert bool((meter[0] >= heater).all()) and float(heater.max()) > 1300
    assert float(meter[1].abs().max()) == 0.0


def test_walker_frame_points_along_the_last_step_and_standing_walkers_stay_finite() -> None:
    tracks = _tracks(torch.Generator().manual_seed(0), 200)
    (moves, speed), future = _walker_frame(tracks, 8, None)
    assert moves.shape == (200, 7, 2) and future.shape == (200, 12, 2) and speed.shape == (200,)
    walking = speed > 0.1
    assert torch.allclose(moves[walking, -1, 1], torch.zeros(int(walking.sum())), atol=1e-5)
    assert bool((moves[walking, -1, 0] > 0).all())
    assert bool(torch.isfinite(moves).all()) and not bool(walking.all())


def test_grey_pictures_stay_in_the_unit_range_and_uint8_sums_wrap() -> None:
    pictures = _pictures(torch.Generator().manual_seed(0), 8)
    grey = _grey(pictures, None)
    assert pictures.dtype == torch.uint8 and grey.shape == (8, 1, 16, 16)
    assert float(grey.min()) >= 0.0 and float(grey.max()) <= 1.0
    assert float((_grey(pictures, "grey_summed_in_uint8") - grey).abs().max()) > 0.3


def test_refunds_keep_a_finite_signed_log() -> None:
    g = torch.Generator().manual_seed(0)
    fields = _transactions(g, torch.zeros(20), 500, 100, 0)[0]
    assert bool((fields[:, 0] < 0).any())
    assert bool(torch.isfinite(_numeric(fields, None)).all())
    assert not bool(torch.isfinite(_numeric(fields, "log_of_negative_refund_amounts")).all())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "houses_tanh_mlp_momentum"]) == 0
    assert "blind16_houses_tanh_mlp_momentum" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    truth = run._train_one(
        (replace(BY_NAME["blind16_F18_card_id_embedded_as_feature"], steps=3), 1, str(tmp_path))
    )
    assert truth.program == "blind16_F18_card_id_embedded_as_feature" and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
