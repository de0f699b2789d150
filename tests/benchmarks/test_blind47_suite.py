"""The forty-seventh blind split of the detection benchmark (`benchmarks/detection/blind47/`) is trained by the runner
with its own scripts, its ferries' load factors stay finite on cancelled days, its shots make more often near the
basket, its piles heat and drop at a turning, its kiln's free lime follows the previous hour's burning, its bow
strokes differ by stroke, and its tea patches keep a hue on the grey belt (its declarations, a run through the hook,
the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind47 import smoke, suite
from benchmarks.detection.blind47.processes import HOURS, READINGS, _compost_windows, _kiln, _piles
from benchmarks.detection.blind47.sensing import SAMPLES, STROKES, _bowing, _hue, _patches
from benchmarks.detection.blind47.services import LAGS, _routes, _shots, _windows

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_ferry_load_factors_stay_finite_on_cancelled_days() -> None:
    routes = _routes(torch.Generator().manual_seed(0), 6, 60)
    assert bool((routes["seats"] == 0).any()) and bool((routes["out"][routes["seats"] == 0] == 0).all())
    x, level, y = _windows(routes, None, held_out=False)
    assert x.shape == (6 * (60 - LAGS), 2 * LAGS + 11) and bool(torch.isfinite(x).all())
    assert len(level) == len(y) and bool((y >= 0).all())
    broken, _, _ = _windows(routes, "cancelled_sailings_load_factor", held_out=False)
    assert bool(broken.isnan().any())


def test_shots_make_more_often_near_the_basket() -> None:
    x, made = _shots(torch.Generator().manual_seed(0), 40, 30, None)
    assert x.shape == (1200, 8) and set(made.unique().tolist()) == {0.0, 1.0}
    near, far = x[:, 0] < 8, x[:, 0] > 22
    assert float(made[near].mean()) > float(made[far].mean()) + 0.15
    assert bool(x[:, 2].isnan().any())  # the defenders the tracking lost


def test_piles_heat_up_and_drop_at_a_turning() -> None:
    logs = _piles(torch.Generator().manual_seed(0), 8, 200)
    core, ambient, turned = logs[..., 0], logs[..., 1], logs[..., 4]
    assert float((core[:, 100:] - ambient[:, 100:]).mean()) > 15
    h = turned.nonzero()
    drops = core[h[:, 0], h[:, 1]] - core[h[:, 0], h[:, 1] - 1]
    assert len(h) > 0 and float(drops.mean()) < -3
    x, y = _compost_windows(logs, None)
    assert x.shape[1:] == (HOURS, 7) and len(x) == len(y) and bool(torch.isfinite(x).all())


def test_kiln_free_lime_follows_the_previous_hours_burning() -> None:
    readings, lime = _kiln(torch.Generator().manual_seed(0), 2000)
    assert readings.shape == (2000, len(READINGS)) and bool((lime > 0).all())
    burn = readings[:, 0]
    before = torch.corrcoef(torch.stack([burn[:-1], lime[1:]]))[0, 1]
    same = torch.corrcoef(torch.stack([burn[1:], lime[1:]]))[0, 1]
    assert float(before) < float(same) < 0  # hotter burning, less free lime, an hour later


def test_bow_strokes_differ_by_stroke() -> None:
    x, stroke = _bowing(torch.Generator().manual_seed(0), 6, 40)
    assert x.shape == (240, 6, SAMPLES) and set(stroke.tolist()) == set(range(STROKES))
    bounce = x[:, 1].std(1)
    assert float(bounce[stroke == 3].mean()) > 2 * float(bounce[stroke == 1].mean())  # spiccato bounces


def test_tea_patches_keep_a_hue_on_the_grey_belt() -> None:
    img, grade = _patches(torch.Generator().manual_seed(0), 60)
    assert img.shape == (60, 3, 16, 16) and float(img.min()) >= 0 and float(img.max()) <= 1
    hue = _hue(img, guarded=True)
    assert bool(torch.isfinite(hue).all())
    assert bool(_hue(img, guarded=False).isnan().any())  # the belt's grey pixels have no chroma
    assert set(grade.tolist()) == {0, 1, 2, 3}


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "kiln_nadam_hidden128"]) == 0
    assert "blind47_kiln_nadam_hidden128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind47_J13_lab_sample_joined_to_hour_it_was_taken"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
