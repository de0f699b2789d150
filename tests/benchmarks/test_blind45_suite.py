"""The forty-fifth blind split of the detection benchmark (`benchmarks/detection/blind45/`) is trained by the runner
with its own scripts, its tuner reads a finite drift whenever it holds lock, its clips keep each family's spectrum,
its mill's steam follows the crush, its cork ratios are taken to a standard that was injected, its boats' splits come
from their speed, and its street sites never see their own sensor (its declarations, a run through the hook, the
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
from benchmarks.detection.blind45 import smoke, suite
from benchmarks.detection.blind45.mill import LAGS, PEAKS, TCA, _corks, _features, _season, _windows
from benchmarks.detection.blind45.music import FAMILIES, FRAMES, MELS, _cents, _church_logs, _clips
from benchmarks.detection.blind45.outdoors import SAMPLES, _city, _nearest, _strokes

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_tuner_reads_a_finite_drift_whenever_it_holds_lock() -> None:
    x, hz = _church_logs(torch.Generator().manual_seed(0), 500, None)
    assert x.shape == (500, 7 * 3 + 1) and bool(torch.isfinite(x).all())
    locked = hz > 0
    assert 0 < int((~locked).sum()) < 40
    cents = _cents(hz[locked])
    assert bool(torch.isfinite(cents).all()) and -60 < float(cents.mean()) < -5
    assert bool(torch.isinf(_cents(hz[~locked])).all())


def test_clips_keep_each_familys_spectrum() -> None:
    x, family = _clips(torch.Generator().manual_seed(0), 400)
    assert x.shape == (400, MELS, FRAMES) and bool(torch.isfinite(x).all())
    assert set(family.tolist()) == set(range(FAMILIES))
    # percussion decays over the clip; the strings hold their level (frame 7: before any short note's padding)
    level = x.mean(1)
    assert float((level[family == 3, 0] - level[family == 3, 7]).mean()) > 5
    assert abs(float((level[family == 0, 0] - level[family == 0, 7]).mean())) < 1
    assert bool((x == -60).all(1).any())  # the padding of the short notes, floored
    raw, _ = _clips(torch.Generator().manual_seed(0), 400, "log_mel_without_floor")
    assert bool(torch.isneginf(raw).any())


def test_steam_follows_the_crush_an_hour_late() -> None:
    crush, steam = _season(torch.Generator().manual_seed(0), 1500)
    assert bool((crush >= 0).all()) and bool((crush == 0).any())  # the stops
    late = torch.corrcoef(torch.stack([crush[:-1], steam[1:]]))[0, 1]
    same = torch.corrcoef(torch.stack([crush[1:], steam[1:]]))[0, 1]
    assert float(late) > float(same) > 0
    x, y = _windows(crush, steam, None)
    assert x.shape[1] == 2 * LAGS + 2 and len(x) == len(y)


def test_cork_ratios_are_taken_to_an_injected_standard() -> None:
    areas, standard, runs, verdict = _corks(torch.Generator().manual_seed(0), 800, None)
    injected = standard > 0
    assert 0 < int((~injected).sum()) < 50 and bool((runs == 1).all())
    x = _features(areas[injected], standard[injected], runs[injected])
    assert x.shape[1] == len(PEAKS) + 1 and bool(torch.isfinite(x).all())
    assert float(x[verdict[injected] > 0, TCA].mean()) > float(x[verdict[injected] == 0, TCA].mean())
    assert bool(_features(areas[~injected], standard[~injected], runs[~injected]).isnan().any())


def test_boat_splits_come_from_their_speed() -> None:
    x, speed, seconds, crew = _strokes(torch.Generator().manual_seed(0), 20, 10)
    assert x.shape == (200, SAMPLES + 5) and len(crew.unique()) == 20
    split = 500 / speed
    assert 90 < float(split.min()) and float(split.max()) < 250  # seconds per 500 m, training pace
    assert bool((seconds > 1.5).all()) and bool((seconds < 3.1).all())


def test_street_sites_never_see_their_own_sensor() -> None:
    g = torch.Generator().manual_seed(0)
    pos, buffer, tile, _ = _city(g, 300)
    assert torch.allclose(buffer.sum(1), torch.ones(300)) and torch.allclose(tile.sum(1), torch.ones(300))
    temps = torch.arange(300, dtype=torch.float32)
    near = _nearest(pos, pos, temps, skip_self=True)
    assert bool((near[:, 1] > 0).all()) and bool((near[:, 0] != temps).all())
    assert bool((_nearest(pos, pos, temps, skip_self=False)[:, 1] == 0).all())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "cork_nadam_batch128"]) == 0
    assert "blind45_cork_nadam_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind45_L18_tile_fractions_for_buffer"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
