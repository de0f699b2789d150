"""The thirty-ninth blind split of the detection benchmark (`benchmarks/detection/blind39/`) is trained by the runner
with its own scripts, its kiln zones lag their setpoint and its crown column is the first, its strain windows lose the
spiked ones the logger's QA flags, its marathon clock is read in minutes, its heel strikes push the vertical
acceleration past g, its surge is 1.0 in many cells, and its honey spectra keep their narrow maltose bands (its
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
from benchmarks.detection.blind39 import smoke, suite
from benchmarks.detection.blind39.markets import ZONES, _cells, _preprocess, _samples
from benchmarks.detection.blind39.people import GRAVITY, _finish_minutes, _strides, _with_tilt
from benchmarks.detection.blind39.plant import ZONES as KILN_ZONES
from benchmarks.detection.blind39.plant import _firings, _windows

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_kiln_zones_follow_the_setpoint_and_the_crown_is_the_loggers_first_column() -> None:
    readings, _, rise = _firings(torch.Generator().manual_seed(0), 200, single_firing=False)
    assert readings.shape == (200, 24, 5) and rise.shape == (200, 4)
    crown, setpoint = readings[:, -1, 0], readings[:, -1, 4]
    assert float((crown - setpoint).abs().median()) < 60
    assert KILN_ZONES.index("crown") == 0 and sorted(KILN_ZONES).index("crown") != 0
    one, _, _ = _firings(torch.Generator().manual_seed(0), 50, single_firing=True)
    assert float(one[:, :, 4].max()) <= float(readings[:, :, 4].max()) + 1e-3


def test_strain_windows_lose_the_lightning_spikes_unless_kept() -> None:
    clean, y = _windows(torch.Generator().manual_seed(0), 400, one_gauge=False, spikes=False)
    spiked, _ = _windows(torch.Generator().manual_seed(0), 400, one_gauge=False, spikes=True)
    assert float(clean.max()) < 2000 and float(spiked.max()) > 20000
    assert len(clean) < len(spiked) == 400
    assert 0.2 < float(y.mean()) < 0.5


def test_marathon_clock_is_read_in_minutes_unless_taken_as_decimal_hours() -> None:
    finish = torch.tensor([225.0, 181.0])  # 3:45 and 3:01
    assert _finish_minutes(finish, None).tolist() == [225.0, 181.0]
    assert _finish_minutes(finish, "finish_clock_parsed_as_decimal_hours").tolist() == pytest.approx(
        [207.0, 180.6]
    )


def test_heel_strikes_push_the_vertical_acceleration_past_g_but_the_tilt_stays_finite() -> None:
    imu, phase = _strides(torch.Generator().manual_seed(0), 100)
    assert imu.shape == (100, 6, 40) and float(phase.max()) < 1
    assert float(imu[:, 4].max()) > GRAVITY
    assert bool(torch.isfinite(_with_tilt(imu, None)).all())
    assert not bool(torch.isfinite(_with_tilt(imu, "shank_tilt_by_acos_of_vertical_accel")).all())


def test_surge_is_one_in_many_cells_and_capped_at_three() -> None:
    g = torch.Generator().manual_seed(0)
    _, numbers, surge = _cells(g, 2000, 0.8 + 0.8 * torch.rand(ZONES, generator=g))
    assert 0.2 < float((surge == 1).float().mean()) < 0.6 and float(surge.max()) <= 3
    assert bool((numbers[:, 1] == 0).any())  # some cells have no driver online


def test_honey_derivative_spectra_keep_the_syrups_bands_unless_smoothed() -> None:
    spectra, y = _samples(torch.Generator().manual_seed(0), 400, second_cup=False)
    d, smooth = _preprocess(spectra, None), _preprocess(spectra, "spectra_smoothed_over_wide_window")
    gap = (d[y > 0].mean(0) - d[y == 0].mean(0)).abs().max()
    smoothed_gap = (smooth[y > 0].mean(0) - smooth[y == 0].mean(0)).abs().max()
    assert float(gap) > 2 * float(smoothed_gap)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "surge_adagrad_batch256"]) == 0
    assert "blind39_surge_adagrad_batch256" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind39_E09_finish_clock_parsed_as_decimal_hours"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
