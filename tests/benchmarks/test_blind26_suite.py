"""The twenty-sixth blind split of the detection benchmark (`benchmarks/detection/blind26/`) is trained by the runner
with its own scripts, its rain record has the gauge's gaps, its bike rentals are counts, its fingerprints carry the
"not detected" code, some of its typists' flights roll over, its chest films include blank exports and its crack masks
lie on darker pixels (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind26 import smoke, suite
from benchmarks.detection.blind26.environment import BIKE_DAYS, DAYS, HOURS, _catchment, _rentals
from benchmarks.detection.blind26.imaging import _films, _patches
from benchmarks.detection.blind26.sensing import APS, NOT_DETECTED, _fingerprints, _typing

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_rain_record_has_gauge_gaps_and_the_river_always_flows() -> None:
    rain, temp, flow = _catchment(torch.Generator().manual_seed(0))
    assert rain.shape == temp.shape == flow.shape == (DAYS,)
    gaps = torch.isnan(rain)
    assert 0.005 < float(gaps.float().mean()) < 0.05
    assert bool((rain[~gaps] >= 0).all()) and bool((flow > 0).all())


def test_bike_rentals_are_hourly_counts() -> None:
    hour, weekday, weather, _, count = _rentals(torch.Generator().manual_seed(0))
    assert len(count) == BIKE_DAYS * HOURS and bool((count >= 0).all())
    assert torch.equal(count, count.round())
    assert set(weather.unique().tolist()) <= {0, 1, 2} and int(weekday.max()) == 6 and int(hour.max()) == 23


def test_fingerprints_hold_heard_strengths_or_the_not_detected_code() -> None:
    aps = 40.0 * torch.rand(APS, 2, generator=torch.Generator().manual_seed(0))
    rssi, pos = _fingerprints(torch.Generator().manual_seed(1), 300, aps)
    heard = rssi != NOT_DETECTED
    assert bool((rssi[heard] < -20).all()) and bool((rssi[heard] >= -95).all())
    assert pos.shape == (300, 2) and float(pos.min()) >= 0 and float(pos.max()) <= 40


def test_some_flights_roll_over_into_negative_up_down_times() -> None:
    hold, down_down, up_down, user, session = _typing(torch.Generator().manual_seed(0))
    assert bool((hold > 0).all()) and bool((down_down > 0).all())
    assert 0.05 < float((up_down < 0).float().mean()) < 0.15
    assert int(user.max()) == 15 and int(session.max()) == 7


def test_some_chest_films_are_blank_exports() -> None:
    films, y = _films(torch.Generator().manual_seed(0), 500)
    blank = films.flatten(1).eq(0).all(1)
    assert 0 < int(blank.sum()) < 20
    assert 0.2 < float(y.mean()) < 0.45


def test_crack_masks_lie_on_darker_pixels() -> None:
    patches, masks = _patches(torch.Generator().manual_seed(0), 40)
    assert set(masks.unique().tolist()) == {0.0, 1.0}
    assert float(patches.min()) >= 0 and float(patches.max()) <= 1
    assert float(patches[masks > 0].mean()) < float(patches[masks == 0].mean()) - 0.2


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind26_wifi_mlp_adam"]) == 0
    assert "blind26_wifi_mlp_adam" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind26_W10_longitude_latitude_columns_swapped"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
