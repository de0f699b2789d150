"""The thirty-eighth blind split of the detection benchmark (`benchmarks/detection/blind38/`) is trained by the runner
with its own scripts, its failed hygrometers read 0 % and its dew point stays finite, its noon reports under 5 kn are
filtered out, its bunches' band means stay finite over dead pixels, its calibration logs are dropped, its pharmacy
windows take their level from the history alone, and its full tosses have no travel after the bounce (its declarations,
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
from benchmarks.detection.blind38 import smoke, suite
from benchmarks.detection.blind38.ledgers import HISTORY, _deliveries, _lbw_features, _series, _windows
from benchmarks.detection.blind38.produce import _band_means, _bunches, _ferment_inputs, _fermentations
from benchmarks.detection.blind38.sensors import _channels, _noon_reports, _scada

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_failed_hygrometers_read_zero_and_the_dew_point_stays_finite() -> None:
    records, ice, stopped = _scada(torch.Generator().manual_seed(0), 300)
    assert bool((records[..., 6] == 0).any())
    assert bool(torch.isfinite(_channels(records, None)).all())
    assert not bool(torch.isfinite(_channels(records, "dew_point_of_zero_humidity")).all())
    assert bool((stopped <= ice).all()) and 0.1 < float(ice.mean()) < 0.6


def test_noon_reports_under_five_knots_are_filtered_unless_the_bug_keeps_them() -> None:
    feats, loss_pct = _noon_reports(torch.Generator().manual_seed(0), 500, None)
    assert bool((feats[:, 0] >= 5).all()) and float(loss_pct.abs().max()) < 100
    kept, loss_kept = _noon_reports(torch.Generator().manual_seed(0), 500, "anchored_reports_in_speed_loss")
    assert len(kept) == 500 and float(loss_kept.max()) > 500


def test_band_means_stay_finite_over_dead_pixels() -> None:
    refl, brix, before = _bunches(torch.Generator().manual_seed(0), 50)
    assert bool((refl == 0).any()) and bool((before < brix).all())
    assert _band_means(refl, None).shape == (50, 24) and bool(torch.isfinite(_band_means(refl, None)).all())
    assert not bool(torch.isfinite(_band_means(refl, "absorbance_of_dead_pixels")).all())


def test_calibration_logs_in_water_are_dropped() -> None:
    gravity, temp, fg, _ = _fermentations(torch.Generator().manual_seed(0), 200, calibration=True)
    feats, keep = _ferment_inputs(gravity, temp, None)
    assert 0 < int((~keep).sum()) < 50 and bool((fg[~keep] == 1.0).all())
    assert bool(torch.isfinite(feats[keep]).all()) and not bool(torch.isfinite(feats[~keep]).all())


def test_pharmacy_windows_take_their_level_from_the_history_alone() -> None:
    counts, drug = _series(torch.Generator().manual_seed(0), 20)
    x, d, level, y = _windows(counts, drug, range(2), None)
    assert x.shape == (40, HISTORY + 1) and d.shape == level.shape == y.shape == (40,)
    history_mean = counts[:, :HISTORY].mean(1) + 0.1
    assert torch.allclose(level[:20], torch.log(7 * history_mean))
    _, _, leaked, _ = _windows(counts, drug, range(2), "series_level_with_forecast_week")
    assert not torch.allclose(leaked, level)


def test_full_tosses_have_no_travel_and_the_drift_stays_finite() -> None:
    tracking, hand, out, called = _deliveries(torch.Generator().manual_seed(0), 400)
    assert bool((tracking[:, 0] == tracking[:, 4]).any())
    assert bool(torch.isfinite(_lbw_features(tracking, hand, None)).all())
    assert not bool(torch.isfinite(_lbw_features(tracking, hand, "drift_per_metre_over_full_tosses")).all())
    assert set(hand.unique().tolist()) == {-1.0, 1.0} and 0.05 < float(out.mean()) < 0.6
    assert bool((called > out).any()) and bool((called < out).any())  # the umpire errs both ways


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "hull_radam_batch32"]) == 0
    assert "blind38_hull_radam_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind38_F05_cleaning_counter_reset_at_port_calls"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
