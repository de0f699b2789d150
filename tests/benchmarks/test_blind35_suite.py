"""The thirty-fifth blind split of the detection benchmark (`benchmarks/detection/blind35/`) is trained by the runner
with its own scripts, its milk analyser logs offline days as a protein of 0 that the script carries over, its argon
recipes run without CF4, its short clips are padded with silence, its landmarks come in pixels with the wrist first,
its conflicts are neither rare nor the rule, and its rallies end on the feed's marker that a forecast never sees (its
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
from benchmarks.detection.blind35 import smoke, suite
from benchmarks.detection.blind35.sensing import (
    BANDS,
    FRAMES,
    SHAPES,
    _clips,
    _hands,
    _log_power,
    _wrist_frame,
)
from benchmarks.detection.blind35.tracks import END_SERVER, SHOWN, _first_shots, _pairs, _points
from benchmarks.detection.blind35.yields import DAYS, _carry_last_reading, _etch_features, _herd, _recipes

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_offline_analyser_days_are_there_and_carried_over() -> None:
    records, _ = _herd(torch.Generator().manual_seed(0), 300)
    assert records.shape == (300, DAYS + 1, 7)
    protein = records[:, :DAYS, 6]
    assert bool((protein == 0).any()) and not bool((_carry_last_reading(protein) == 0).any())
    total = records[:, DAYS, 0] + records[:, DAYS, 1]
    assert 10 < float(total.mean()) < 40


def test_argon_recipes_run_without_cf4_and_only_the_ratio_breaks() -> None:
    recipes, rate = _recipes(torch.Generator().manual_seed(0), 500)
    assert bool((recipes[:, 3] == 0).any()) and float(rate.std()) > 10
    assert bool(torch.isfinite(_etch_features(recipes, None)).all())
    assert not bool(torch.isfinite(_etch_features(recipes, "o2_to_cf4_ratio_over_argon_recipes")).all())


def test_short_clips_are_padded_with_silence_that_only_the_floor_keeps_finite() -> None:
    power, label = _clips(torch.Generator().manual_seed(0), 200, hum_with_crackles=False)
    assert power.shape == (200, BANDS, FRAMES) and set(label.unique().tolist()) == {0.0, 1.0}
    assert bool((power == 0).all(1).any())
    assert bool(torch.isfinite(_log_power(power, None)).all())
    assert not bool(torch.isfinite(_log_power(power, "log_power_of_silence_padding")).all())


def test_landmarks_come_in_pixels_and_the_wrist_frame_is_scale_free() -> None:
    pixels, y = _hands(torch.Generator().manual_seed(0), 200)
    assert pixels.shape == (200, 21, 3) and float(pixels[..., 0].max()) < 1280 and int(y.max()) < len(SHAPES)
    frame = _wrist_frame(pixels)
    assert torch.allclose(frame.view(200, 21, 3)[:, 0], torch.zeros(200, 3))
    assert torch.allclose(frame.view(200, 21, 3)[:, 9, :2].norm(dim=-1), torch.ones(200), atol=1e-5)


def test_conflicts_are_neither_rare_nor_the_rule_and_the_alert_follows_them() -> None:
    states, label, alert = _pairs(torch.Generator().manual_seed(0), 2000)
    assert states.shape == (2000, 2, 6) and 0.05 < float(label.mean()) < 0.4
    assert bool((alert <= label).all()) and float(alert.sum()) > 0.5 * float(label.sum())


def test_rallies_end_on_the_marker_a_forecast_never_sees() -> None:
    tokens, rank, won, _ = _points(torch.Generator().manual_seed(0), 100)
    assert bool((tokens[:, -1] >= END_SERVER).all())
    assert torch.equal(tokens[:, -1] == END_SERVER, won > 0)
    shown = _first_shots(tokens)
    assert shown.shape == (100, SHOWN) and int(shown.max()) < END_SERVER and rank.shape == (100, 2)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "etch_nadam_batch32"]) == 0
    assert "blind35_etch_nadam_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind35_J14_headings_fed_in_degrees"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
