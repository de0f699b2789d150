"""The forty-third blind split of the detection benchmark (`benchmarks/detection/blind43/`) is trained by the runner
with its own scripts, its buoy reads a wave height from a moment that can fall below the noise floor, its tanks count
the days since rain from the log's start, its cocoa histograms are shares of the bean's pixels, its taps ring at the
plate's first mode, its races are won by real runners from real stalls, and its pollen traps are read every day
(its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind43 import smoke, suite
from benchmarks.detection.blind43.field import RUNNERS, _races, _seasons
from benchmarks.detection.blind43.goods import BANDS, BINS, FREQS, _boards, _photos
from benchmarks.detection.blind43.water import _days_since_rain, _records, _tank_logs

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_wave_height_is_read_from_a_moment_that_can_fall_below_the_noise_floor() -> None:
    x, tension = _records(torch.Generator().manual_seed(0), 400, None)
    assert bool(torch.isfinite(x).all()) and bool((x[:, :, 0] >= 0).all())
    assert bool((x[:, :, 0] == 0).any())  # calm records whose moment fell under the floor are clamped
    assert 500 < float(tension.min()) and float(tension.max()) < 5000  # kN
    raw, _ = _records(torch.Generator().manual_seed(0), 400, "hs_from_moment_below_noise_floor")
    assert bool(raw[:, :, 0].isnan().any())


def test_days_since_rain_count_from_the_log_start_and_reset_on_rainy_days() -> None:
    level, rain, _, _ = _tank_logs(torch.Generator().manual_seed(0), 30)
    assert float(level.min()) >= 0 and float(level.max()) <= 1
    since = _days_since_rain(rain, None)
    assert bool(torch.isfinite(since).all())
    assert bool((since[rain > 0] == 0).all()) and bool((since[rain == 0] > 0).all())
    assert bool(_days_since_rain(rain[:, 1:] * 0, "days_since_rain_ffill_leading_gap").isnan().all())


def test_cocoa_histograms_are_shares_of_the_beans_pixels() -> None:
    counts, area, grade = _photos(torch.Generator().manual_seed(0), 400, False)
    kept = area > 0
    shares = counts[kept] / area[kept].unsqueeze(1)
    assert torch.allclose(shares.view(-1, 3, BINS).sum(2), torch.ones(int(kept.sum()), 3))
    assert bool((counts[~kept] == 0).all()) and 0 < int((~kept).sum()) < 40
    assert set(grade.unique().tolist()) == {0, 1, 2, 3}


def test_taps_ring_loudest_at_the_plates_first_mode() -> None:
    feats, log_modulus = _boards(torch.Generator().manual_seed(0), 200, None)
    assert feats.shape == (200, BANDS + 3) and bool(torch.isfinite(feats).all())
    assert 7 < float(log_modulus.exp().min()) and float(log_modulus.exp().max()) < 22  # GPa
    loudest = FREQS[feats[:, :BANDS].argmax(1)]
    assert 30 < float(loudest.min()) and float(loudest.max()) < 400
    taps, _ = _boards(torch.Generator().manual_seed(0), 200, "every_tap_kept_as_row")
    assert len(taps[:, -3:].unique(dim=0)) == 10  # ten boards, twenty taps each


def test_races_are_won_by_real_runners_from_real_stalls() -> None:
    x, mask, winner, windraw, price, best = _races(torch.Generator().manual_seed(0), 300, None)
    assert x.shape == (300, RUNNERS, 6)
    assert bool(mask.gather(1, winner.unsqueeze(1)).all()) and bool(mask.gather(1, best.unsqueeze(1)).all())
    fields = mask.sum(1)
    draws = x[:, :, 3]
    for row in range(20):
        assert sorted(draws[row, mask[row]].long().tolist()) == list(range(1, int(fields[row]) + 1))
    assert bool((windraw >= 1).all()) and bool((windraw <= fields).all())
    assert bool((price > 0.85).all()) and float(price.median()) > 2  # 1 / (1.15 p): a 15 % over-round
    assert 0.3 < float((winner == best).float().mean()) < 0.9  # the strongest runner does not always win


def test_pollen_season_peaks_in_its_middle() -> None:
    counts, weather = _seasons(torch.Generator().manual_seed(0), 20)
    assert bool((counts >= 0).all()) and weather.shape == (20, counts.shape[1], 3)
    peak_day = counts.mean(0).argmax()
    assert 40 < int(peak_day) < 110


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "races_nadam_hidden32"]) == 0
    assert "blind43_races_nadam_hidden32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind43_A17_winner_read_as_winning_stall"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
