"""The twenty-eighth blind split of the detection benchmark (`benchmarks/detection/blind28/`) is trained by the runner
with its own scripts, its open admissions have no stay, its gas readings below detection read 0, its aftershock
counts grow with the window, its voyages take distance over speed plus a wait, its strokes start in their direction
and its saturated spectra read flat (its declarations, a run through the hook, the oracle's labels:
`test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind28 import smoke, suite
from benchmarks.detection.blind28.arrivals import _mainshocks, _voyages
from benchmarks.detection.blind28.tables import _admissions, _features, _samples
from benchmarks.detection.blind28.traces import CEILING, DIRECTIONS, STRAIGHT, _spectra, _strokes

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_open_admissions_have_no_stay_and_the_rest_whole_days() -> None:
    x, days, _ = _admissions(torch.Generator().manual_seed(0), 2000)
    assert x.shape == (2000, 8)
    open_ = days.isnan()
    assert 0.01 < float(open_.float().mean()) < 0.08
    closed = days[~open_]
    assert bool((closed == closed.floor()).all()) and float(closed.min()) == 0.0


def test_gases_below_detection_read_zero_and_the_guarded_ratios_stay_finite() -> None:
    ppm, condition, serial = _samples(torch.Generator().manual_seed(0), 50, 4, 0)
    assert ppm.shape == (200, 5) and bool((ppm == 0).any())
    assert bool(((ppm == 0) | (ppm >= 1)).all())
    assert set(condition.unique().tolist()) <= set(range(6)) and serial.tolist()[:5] == [0, 0, 0, 0, 1]
    assert bool(torch.isfinite(_features(ppm, guarded=True)).all())


def test_aftershock_counts_grow_with_magnitude() -> None:
    z, window, count = _mainshocks(torch.Generator().manual_seed(0), 3000)
    assert bool((window >= 1).all()) and bool((window <= 30).all())
    big = z[:, 0] > 6.5
    assert float(count[big].mean()) > 5 * float(count[~big].mean())


def test_voyages_take_distance_over_speed_made_good_plus_a_wait() -> None:
    z, hours, made_good = _voyages(torch.Generator().manual_seed(0), 500)
    sea = z[:, 0] / made_good
    assert bool((hours >= sea).all()) and bool((hours <= sea + 52).all())


def test_strokes_start_in_their_direction() -> None:
    moves, direction = _strokes(torch.Generator().manual_seed(0), 400)
    start = moves[:, :STRAIGHT].sum(1)
    angle = torch.atan2(start[:, 1], start[:, 0]) % (2 * math.pi)
    nearest = torch.round(angle / (2 * math.pi / DIRECTIONS)).long() % DIRECTIONS
    assert float((nearest == direction).float().mean()) > 0.9


def test_saturated_spectra_read_flat_at_the_ceiling() -> None:
    spectra, roast = _spectra(torch.Generator().manual_seed(0), 1000)
    flat = (spectra == CEILING).all(1)
    assert 0.01 < float(flat.float().mean()) < 0.1
    assert not bool((spectra[~flat] == CEILING).any()) and set(roast.unique().tolist()) == {0, 1, 2, 3}


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "eta_nadam_batch32"]) == 0
    assert "blind28_eta_nadam_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind28_U16_arrival_dates_parsed_month_first"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
