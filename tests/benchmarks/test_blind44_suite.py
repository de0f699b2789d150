"""The forty-fourth blind split of the detection benchmark (`benchmarks/detection/blind44/`) is trained by the runner
with its own scripts, its paper-machine windows log the wash-up stops at a press speed of 0, its tile photos are the
camera's 12-bit counts, its texture curves start on the baseline before the trigger, its snowmaking meter wraps at
1,000,000 m3, and its AIS tracks are zero after their last ping (its declarations, a run through the hook, the
oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind44 import smoke, suite
from benchmarks.detection.blind44.lines import FULL_SCALE, _machine_logs, _tile_photos
from benchmarks.detection.blind44.outdoors import PINGS, _nights, _pings, _tracks
from benchmarks.detection.blind44.produce import TRIGGER, _curves, _features

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_sheet_windows_are_finite_unless_the_ratio_meets_a_stopped_press() -> None:
    logs, broke = _machine_logs(torch.Generator().manual_seed(0), 2000, None)
    assert bool(torch.isfinite(logs).all()) and bool((logs[:, 2] == 0).any())  # the press logged at 0 m/min
    assert 0.03 < float(broke.mean()) < 0.5
    raw, _ = _machine_logs(torch.Generator().manual_seed(0), 2000, "draw_ratio_over_stopped_press")
    assert bool(torch.isinf(raw[:, 6]).any())


def test_tile_photos_are_twelve_bit_counts() -> None:
    img, defect = _tile_photos(torch.Generator().manual_seed(0), 200, None)
    assert img.shape == (200, 1, 16, 16) and float(img.min()) >= 0 and float(img.max()) <= FULL_SCALE
    assert bool((img == img.round()).all()) and float(img.max()) > 255
    assert set(defect.unique().tolist()) == {0, 1}


def test_texture_curves_start_on_the_baseline_and_align_at_the_trigger() -> None:
    curve, batch, score = _curves(torch.Generator().manual_seed(0), 500)
    assert float(score.min()) >= 0 and float(score.max()) <= 1 and batch.shape == (500, 2)
    x, work, keep = _features(curve, batch, None)
    assert 0.9 < float(keep.float().mean()) < 1.0  # the probe missed about 2 % of the samples
    assert bool((x[keep, 0] > TRIGGER).all()) and bool(torch.isfinite(x[keep]).all())
    assert bool((work[keep] > 0).all())


def test_snowmaking_use_is_the_meter_difference_across_its_rollover() -> None:
    _, use = _nights(torch.Generator().manual_seed(0), 200, None)
    assert float(use.min()) >= 0 and float(use.max()) < 50
    _, wrapped = _nights(torch.Generator().manual_seed(0), 200, "meter_rollover_left_in")
    assert float(wrapped.min()) < -900  # thousands of m3 on the nights the meter wraps


def test_ais_tracks_are_zero_after_their_last_ping() -> None:
    speed, course, length, gear = _tracks(torch.Generator().manual_seed(0), 300)
    x = _pings(speed, course, length, None)
    after = torch.arange(PINGS).unsqueeze(0) >= length.unsqueeze(1)
    assert not x[after].any() and bool((speed[~after] >= 0).all())
    assert set(gear.unique().tolist()) == {0, 1, 2}


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "snow_adagrad_batch256"]) == 0
    assert "blind44_snow_adagrad_batch256" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind44_M16_cumulative_reading_taken_as_use"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
