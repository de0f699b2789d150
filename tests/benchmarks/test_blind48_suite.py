"""The forty-eighth blind split of the detection benchmark (`benchmarks/detection/blind48/`) is trained by the runner
with its own scripts, its hive boards show more mites the more they hold, its germinated seeds carry a white radicle,
its tunnel's CO follows the traffic and its extinction stays finite on a dark meter, its riders' power grows with the
climb, its pulp rows keep a finite dilution ratio through a pump trip, and its flux traces differ by feature (its
declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind48 import smoke, suite
from benchmarks.detection.blind48.boards import BOARD, CROP, _boards, _dishes
from benchmarks.detection.blind48.plant import SAMPLES, _chest, _flux, _pulp_rows
from benchmarks.detection.blind48.roads import WINDOW, _bores, _rides, _tunnel_windows

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_hive_boards_darken_with_their_mite_count() -> None:
    img, count, days = _boards(torch.Generator().manual_seed(0), 200)
    assert img.shape == (200, 3, BOARD, BOARD) and float(img.min()) >= 0 and float(img.max()) <= 1
    reddish = ((img[:, 0] - img[:, 2]) > 0.3).float().sum((1, 2))
    assert float(torch.corrcoef(torch.stack([reddish, count]))[0, 1]) > 0.8
    assert bool((days == 0).any())  # boards pulled the day they went in


def test_germinated_seeds_carry_a_white_radicle() -> None:
    img, cls, day3 = _dishes(torch.Generator().manual_seed(0), 300, trial=1)
    assert img.shape == (300, 3, CROP, CROP) and set(cls.tolist()) == {0, 1, 2}
    white = (img.mean(1) > 0.935).float().sum((1, 2))
    assert float(white[cls == 1].mean()) > float(white[cls == 0].mean()) + 2
    assert bool((day3 <= cls).all()) and bool(((cls == 1) & (day3 == 0)).any())


def test_tunnel_co_follows_traffic_and_extinction_stays_finite() -> None:
    logs = _bores(torch.Generator().manual_seed(0), 3, 300)
    traffic = logs[..., 0] + 4 * logs[..., 1]
    assert float(torch.corrcoef(torch.stack([traffic.flatten(), logs[..., 6].flatten()]))[0, 1]) > 0.3
    assert bool((logs[..., 5] == 0).any())  # the lamp's cleaning minutes
    x, y = _tunnel_windows(logs, None, held_out=False)
    assert x.shape[1:] == (WINDOW, 7) and len(x) == len(y) and bool(torch.isfinite(x).all())
    broken, _ = _tunnel_windows(logs, "extinction_of_dark_opacity_meter", held_out=False)
    assert bool(torch.isinf(broken).any())


def test_riders_power_grows_with_the_climb() -> None:
    x, power = _rides(torch.Generator().manual_seed(0), 2, 300, None)
    assert bool((power >= 0).all()) and bool(torch.isfinite(x).all())
    grade, speed = x[:, -6], x[:, -8]
    moving = speed > 2
    climbing = moving & (grade > 3)
    flat = moving & (grade.abs() < 1)
    assert float(power[climbing].mean()) > float(power[flat].mean())


def test_pulp_rows_keep_a_finite_dilution_ratio_through_a_trip() -> None:
    readings, lab = _chest(torch.Generator().manual_seed(0), 800)
    assert bool((readings[:, 1] == 0).any()) and 3 < float(lab.mean()) < 5
    rows = _pulp_rows(readings, lab, None)
    assert rows.shape == (800, 10) and bool(torch.isfinite(rows).all())
    assert bool(_pulp_rows(readings, lab, "dilution_ratio_over_tripped_pump").isnan().any())


def test_flux_traces_differ_by_feature() -> None:
    x, kind = _flux(torch.Generator().manual_seed(0), 400, wall_mm=9.5)
    assert x.shape == (400, 3, SAMPLES) and set(kind.tolist()) == {0, 1, 2, 3}
    peak = x[:, 0].abs().max(1).values
    assert float(peak[kind == 1].mean()) > 2 * float(peak[kind == 0].mean())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "pulp_adamw_hidden32"]) == 0
    assert "blind48_pulp_adamw_hidden32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind48_N15_power_joined_by_elapsed_time_across_pauses"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
