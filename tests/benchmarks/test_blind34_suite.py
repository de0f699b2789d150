"""The thirty-fourth blind split of the detection benchmark (`benchmarks/detection/blind34/`) is trained by the runner
with its own scripts, its resistivity logs carry LAS nulls, its rain volumes overflow half precision, its crash
pulses stay within the logger's range, its snow depth is zero on some days, its rosettes have 3-10 leaves and its
dots are single pen points that the boxed rasteriser keeps finite (its declarations, a run through the hook, the
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
from benchmarks.detection.blind34 import smoke, suite
from benchmarks.detection.blind34.earth import NULL, WINDOW, _catchments, _well, _windows
from benchmarks.detection.blind34.hazards import SAMPLES, _days, _events
from benchmarks.detection.blind34.images import GRID, STROKES, _rasterise, _rosettes, _strokes

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_resistivity_carries_las_nulls_and_windows_end_at_the_classified_sample() -> None:
    curves, litho = _well(torch.Generator().manual_seed(0), 400)
    res = curves[:, 1]
    assert bool((res == NULL).any()) and bool((res[res != NULL] > 0).all())
    x, y = _windows(curves, litho)
    assert x.shape == (400 - WINDOW + 1, WINDOW, 5)
    assert torch.equal(x[:, -1], curves[WINDOW - 1 :]) and torch.equal(y, litho[WINDOW - 1 :])


def test_rain_volume_overflows_half_precision_only() -> None:
    attrs, peak = _catchments(torch.Generator().manual_seed(0), 400)
    volume = attrs[:, 0] * attrs[:, 1]
    assert bool(torch.isfinite(volume).all()) and float(volume.max()) > 65504
    assert not bool(torch.isfinite(attrs.half()[:, 0] * attrs.half()[:, 1]).all())
    assert bool((peak > 0).all())


def test_crash_pulses_stay_within_the_logger_range() -> None:
    x, y = _events(torch.Generator().manual_seed(0), 90)
    assert x.shape == (90, 3, SAMPLES) and set(y.unique().tolist()) == {0, 1, 2}
    assert float(x.abs().max()) < 50
    assert float(x[y == 2].abs().amax((1, 2)).min()) > float(x[y == 0].abs().amax((1, 2)).median())


def test_some_days_have_no_snow_and_levels_span_the_scale() -> None:
    days, level = _days(torch.Generator().manual_seed(0), 2000)
    assert bool((days[:, 5] == 0).any()) and bool((days[:, 5] > 0).any())
    assert set(level.unique().tolist()) == {0, 1, 2, 3, 4}


def test_rosettes_have_three_to_ten_leaves_and_dots_only_when_asked() -> None:
    images, count = _rosettes(torch.Generator().manual_seed(0), 20)
    dotted, _ = _rosettes(torch.Generator().manual_seed(0), 20, dots=True)
    assert images.shape == (20, 1, 24, 24) and set(count.unique().tolist()) <= set(range(3, 11))
    assert float(images.min()) >= 0 and float(images.max()) <= 1 and not torch.equal(images, dotted)


def test_a_dot_is_one_pen_point_and_the_boxed_rasteriser_keeps_it_finite() -> None:
    points, y = _strokes(torch.Generator().manual_seed(0), 80)
    dot = list(STROKES).index("dot")
    assert any(int(y[i]) == dot and bool((p == p[0]).all()) for i, p in enumerate(points))
    images = _rasterise(points, per_axis=False, summed=False)
    assert images.shape == (80, 1, GRID, GRID) and bool(torch.isfinite(images).all())
    assert float(images.max()) <= 1


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind34_floods_nadam_batch64"]) == 0
    assert "blind34_floods_nadam_batch64" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind34_K06_runoff_coefficient_from_observed_floods"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
