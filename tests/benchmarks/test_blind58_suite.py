"""The fifty-eighth blind split of the detection benchmark (`benchmarks/detection/blind58/`) is trained by the runner
with its own scripts, its entrance crops carry their pollen loads low where a centre crop cuts them off and a yellow
threshold misses the other colours, only its canopy sensor's readings over 100 % turn the log VPD into NaN, its
annealer logs cool after the soak and the second supplier's coefficients are a tenth of the studio's, its rim
profiles of faulty wheels stand out from the passed ones, its log's drift by Pythagoras is NaN only where the boat
makes less over the ground than through the water, and its choir's unvoiced notes and high notes are what the bugs
mistake (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind58 import smoke, suite
from benchmarks.detection.blind58.growers import CROP, LAGS, PollenNet, _crops, _features, _season
from benchmarks.detection.blind58.makers import POINTS, SAMPLES, TruingAE, _inputs, _pieces, _wheels
from benchmarks.detection.blind58.passage import (
    NOTES,
    RECORDS,
    PartEncoder,
    _log_features,
    _logs,
    _note_features,
    _singers,
)

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_entrance_crops_carry_pollen_low_and_a_centre_crop_keeps_none_of_the_bottom_rows() -> None:
    c = _crops(torch.Generator().manual_seed(0), 400)
    img, pollen = c["img"], c["pollen"]
    assert img.shape == (400, 3, CROP, CROP) and 0.25 < float(pollen.mean()) < 0.55
    assert bool((c["colour"][pollen == 0] == -1).all()) and len(c["colour"][pollen > 0].unique()) == 4
    assert float(img.min()) >= 0 and float(img.max()) <= 1
    # the loads are bright: the crops of foragers are brighter in their bottom rows than the others'
    low = img[:, :, 8:, :].mean((1, 2, 3))
    assert float(low[pollen > 0].mean()) > float(low[pollen == 0].mean())
    assert PollenNet(4)(img).shape == (400,)


def test_only_a_saturated_humidity_reading_makes_the_log_vpd_nan_and_lags_add_columns() -> None:
    s = _season(torch.Generator().manual_seed(0), 500)
    assert s["x"].shape == (500, 9) and bool((s["swp"] < 0).all())
    fixed = _features(s, None)
    assert fixed.shape == (500, 9) and bool(torch.isfinite(fixed).all())
    buggy = _features(s, "log_vpd_of_supersaturated_humidity")
    assert torch.equal(buggy[:, 6].isnan(), s["x"][:, 6] > 100) and bool((s["x"][:, 6] > 100).any())
    assert _features(s, "eto_lag_for_every_day_since_bloom").shape == (500, 9 + LAGS)
    # drier soil, more stress
    dry = s["x"][:, 0] < 20
    assert float(s["swp"][dry].mean()) < float(s["swp"][~dry].mean())


def test_annealer_logs_cool_after_the_soak_and_the_cut_export_never_does() -> None:
    p = _pieces(torch.Generator().manual_seed(0), 300)
    assert p["temp"].shape == (300, SAMPLES) and 0.1 < float(p["crack"].mean()) < 0.7
    assert float((p["temp"][:, 0] - p["temp"][:, -1]).min()) > 300
    trace, cols = _inputs(p, None)
    assert trace.shape == (300, 2, SAMPLES) and cols.shape == (300, 2)
    cut, _ = _inputs(p, "controller_export_cut_after_soak")
    assert float(cut[:, 0, -1].mean()) > float(trace[:, 0, -1].mean()) + 1
    _, ppm = _inputs(p, "colour_coefficient_in_ppm_from_second_supplier")
    second = p["second"]
    assert torch.equal(ppm[~second], cols[~second]) and float(ppm[second, 1].min()) > 50


def test_faulty_wheels_stand_out_from_the_passed_ones() -> None:
    w = _wheels(torch.Generator().manual_seed(0), 400, faulty=0.3)
    prof, bad = w["prof"], w["bad"]
    assert prof.shape == (400, 2, POINTS) and 0.2 < float(bad.mean()) < 0.4
    # a dent or a loose spoke leaves a sharper peak in the profile than the trued wheel's harmonics
    peak = (prof - prof.mean(-1, keepdim=True)).abs().amax((1, 2))
    assert float(peak[bad > 0].mean()) > float(peak[bad == 0].mean())
    assert TruingAE(4, "zeros")(prof).shape == prof.shape


def test_drift_by_pythagoras_is_nan_only_where_the_ground_speed_is_the_lower() -> None:
    w = _logs(torch.Generator().manual_seed(0), 300)
    assert w["target"].shape == (300, 2)
    fixed = _log_features(w, None)
    assert fixed.shape == (300, RECORDS, 8) and bool(torch.isfinite(fixed).all())
    buggy = _log_features(w, "drift_speed_by_pythagoras_of_speeds")
    slower = w["sog"] < w["stw"]
    assert bool(slower.any()) and torch.equal(buggy[..., 6].isnan(), slower)


def test_choir_notes_unvoiced_ones_and_high_ones_are_what_the_bugs_mistake() -> None:
    s = _singers(torch.Generator().manual_seed(0), 300)
    assert s["f0"].shape == (300, NOTES) and len(s["part"].unique()) == 4
    unvoiced = s["f0"] == 0
    assert bool(unvoiced.any())
    fixed = _note_features(s, None)
    assert bool(torch.isfinite(fixed).all())
    assert torch.equal(
        ~torch.isfinite(_note_features(s, "unvoiced_notes_logged_at_zero_hz")[..., 0]), unvoiced
    )
    ceiling = _note_features(s, "speech_tracker_ceiling_of_400_hz")
    high = s["f0"] > 400
    assert bool(high.any()) and bool((ceiling[..., 0][high] < fixed[..., 0][high]).all())
    # sopranos sing higher than basses
    assert float(s["f0"][s["part"] == 0].max()) > float(s["f0"][s["part"] == 3].max())
    assert PartEncoder(8, 1e5)(fixed).shape == (300, 4)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind58_stress_adagrad_batch128"]) == 0
    assert "blind58_stress_adagrad_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind58_R14_atlas_set_read_as_direction_from"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
