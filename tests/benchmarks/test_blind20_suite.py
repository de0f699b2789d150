"""The twentieth blind split of the detection benchmark (`benchmarks/detection/blind20/`) is trained by the runner
with its own scripts, its PM2.5 series miss readings that the forward fill closes, its ocean grid keeps land apart,
its sky frames are uint8 with no clear-sky output at night, its short bird clips are padded with silence, its star
thresholds start ordered, and its signature file lists each writer's pairs together (its declarations, a run through
the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind20 import smoke, suite
from benchmarks.detection.blind20.atmosphere import GRID, _forward_filled, _ocean, _sst_inputs, _station
from benchmarks.detection.blind20.imagery import FRAMES, _clips, _skies
from benchmarks.detection.blind20.people import StarModel, _pairs, _writers

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_pm_series_miss_readings_that_the_forward_fill_closes() -> None:
    pm, wind, hum, _ = _station(torch.Generator().manual_seed(0), 200)
    assert pm.isnan().any() and not pm[:, -1].isnan().any()  # the target hour is never missing
    filled = _forward_filled(pm)
    assert not filled.isnan().any() and bool((filled > 0).all())
    assert bool((wind >= 0).all()) and bool(((hum >= 0) & (hum <= 1)).all())


def test_ocean_inputs_hold_anomalies_with_land_at_zero_unless_the_fill_is_kept() -> None:
    field, clim, land = _ocean(torch.Generator().manual_seed(0), 10)
    assert field.shape == (10, 3, GRID, GRID) and bool(field[:, :, land].isnan().all())
    x = _sst_inputs(field, clim, land, None)
    assert not x.isnan().any() and float(x[:, :2].abs().max()) < 10  # anomalies, not kelvin
    assert bool((x[:, :2][:, :, land] == 0).all()) and bool((x[:, 2][:, land] == 1).all())
    assert float(_sst_inputs(field, clim, land, "land_fill_value_kept").min()) == -999.0


def test_sky_frames_are_uint8_and_night_has_no_clear_sky_output() -> None:
    frames, elev, clear, power = _skies(torch.Generator().manual_seed(0), 300)
    assert frames.dtype == torch.uint8
    night = elev <= 0
    assert night.any() and bool((clear[night] == 0).all()) and bool((power[night] == 0).all())
    assert bool((power <= clear / 1000 + 1e-6).all())


def test_short_bird_clips_are_padded_with_silence() -> None:
    spec, y = _clips(torch.Generator().manual_seed(0), 100)
    assert bool((spec[:, :, -1] == 0).any()) and bool((spec[:, :, 0] > 0).all())
    assert set(y.unique().tolist()) == {0.0, 1.0} and spec.shape[-1] == FRAMES


def test_star_thresholds_start_ordered_and_probabilities_sum_to_one() -> None:
    model = StarModel(8)
    cuts = model.cut_points()
    assert bool((cuts[1:] > cuts[:-1]).all())
    logp = model(torch.randint(0, 50, (4, 10)))
    assert torch.allclose(logp.exp().sum(-1), torch.ones(4), atol=1e-5)


def test_signature_file_lists_each_writers_pairs_together() -> None:
    g = torch.Generator().manual_seed(0)
    ref, query, label = _pairs(g, _writers(g, 20), 200)
    assert ref.shape == query.shape == (200, 32, 2)
    assert float(ref.abs().amax((1, 2)).min()) == pytest.approx(1.0)  # each signature scaled to unit size
    assert 0.3 < float(label.mean()) < 0.7


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "solar_adamw"]) == 0
    assert "blind20_solar_adamw" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind20_B06_fields_stored_lon_lat"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
