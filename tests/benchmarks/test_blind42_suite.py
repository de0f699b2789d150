"""The forty-second blind split of the detection benchmark (`benchmarks/detection/blind42/`) is trained by the runner
with its own scripts, its pond windows always hold a morning lab sample, its power-cut days run no aerator, its
failed electrode calibrations record no slope, its
quiet-room clips are gated whole, its bursts stay within the sensor's range, and its anemometers report zero below
their stall speed (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind42 import smoke, suite
from benchmarks.detection.blind42.farm import HOURS, _ponds, _shrimp_inputs
from benchmarks.detection.blind42.lab import BANDS, FRAMES, _clips, _howl_features
from benchmarks.detection.blind42.site import STALL, _bursts, _frost_inputs, _nights

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_pond_windows_hold_a_lab_sample_and_a_guarded_oxygen_mean() -> None:
    readings, tan, _, clock, slope = _ponds(torch.Generator().manual_seed(0), 400)
    assert bool(((clock[:, :HOURS] == 8).sum(1) == 1).all())  # each day's 08:00 sample falls in the window
    off_all_day = readings[:, :HOURS, 5].sum(1) == 0
    assert bool(off_all_day.any())  # the power cuts
    feats = _shrimp_inputs(readings, tan, clock, slope, None)
    assert bool(torch.isfinite(feats).all()) and bool((feats[off_all_day, 0, 6] == 0).all())
    failed = slope == 0
    assert bool(failed.any())
    bugged = _shrimp_inputs(readings, tan, clock, slope, "electrode_slope_from_failed_calibration")
    assert not bool(torch.isfinite(bugged[failed]).all()) and bool(torch.isfinite(bugged[~failed]).all())


def test_quiet_room_clips_are_gated_whole_and_the_twin_features_stay_finite() -> None:
    power, truth, _ = _clips(torch.Generator().manual_seed(0), 600, notched=False)
    silent = (power == 0).flatten(1).all(1)
    assert bool(silent.any()) and set(truth.unique().tolist()) == {0, 1}
    assert bool(torch.isfinite(_howl_features(power, None)).all())
    levels = _howl_features(power, "levels_normalised_per_clip")[:, : FRAMES * BANDS]
    assert not bool(torch.isfinite(levels[silent]).any()) and bool(torch.isfinite(levels[~silent]).all())


def test_bursts_stay_within_the_full_scale_and_the_camera_flags_events() -> None:
    acc, event, flag = _bursts(torch.Generator().manual_seed(0), 300, 16.0)
    assert float(acc.abs().max()) <= 16.0 and acc.shape == (300, 3, 128)
    assert float(flag[event > 0].mean()) > 0.9 and float(flag[event == 0].mean()) < 0.1
    clipped, _, _ = _bursts(torch.Generator().manual_seed(0), 300, 2.0)
    assert float(clipped.abs().max()) <= 2.0


def test_anemometers_report_zero_below_their_stall_speed() -> None:
    readings, frost, screen = _nights(torch.Generator().manual_seed(0), 800)
    winds = readings[:, 3:5]
    assert bool(((winds == 0) | (winds >= STALL)).all()) and bool((winds == 0).any())
    assert bool(torch.isfinite(_frost_inputs(readings, None)).all())
    assert 0.1 < float(frost.float().mean()) < 0.6 and bool((frost != screen).any())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "frost_adagrad_batch256"]) == 0
    assert "blind42_frost_adagrad_batch256" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind42_B09_measured_lift_as_input"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
