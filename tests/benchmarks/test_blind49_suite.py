"""The forty-ninth blind split of the detection benchmark (`benchmarks/detection/blind49/`) is trained by the runner
with its own scripts, its stuck twist-locks stall short of home, its bindings release harder in the cold, its
wetter bales attenuate more per unit density, its darker syrups let less light through, its films sell less week by
week, and its paddles' stroke rate stays finite on a window with one catch (its declarations, a run through the
hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind49 import smoke, suite
from benchmarks.detection.blind49.leisure import (
    FILMS,
    LAGS,
    SAMPLES,
    _paddles,
    _programme,
    _stroke_rate,
    _windows,
)
from benchmarks.detection.blind49.machinery import RIG, _cycles, _releases
from benchmarks.detection.blind49.produce import AT_560, BANDS, _bales, _gauge_features, _syrups

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_stuck_twist_locks_stall_short_of_home() -> None:
    x, fault = _cycles(torch.Generator().manual_seed(0), 6, 40)
    assert x.shape == (240, 4, 64) and set(fault.tolist()) == {0, 1, 2}
    final_angle = x[:, 2, -8:].mean(1)
    assert float(final_angle[fault == 0].mean()) > float(final_angle[fault == 1].mean()) + 5


def test_bindings_release_harder_in_the_cold() -> None:
    x, forward, twist = _releases(torch.Generator().manual_seed(0), 3000)
    assert x.shape == (3000, len(RIG)) and bool((forward > 0).all()) and len(twist) == 3000
    ratio = forward / (x[:, 5] * x[:, 4] / 1000 * 40)
    cold, mild = x[:, 8] < -15, x[:, 8] > 0
    assert float(ratio[cold].mean()) > float(ratio[mild].mean()) + 0.1


def test_wetter_bales_attenuate_more_and_calibration_rows_come_first() -> None:
    rows, dry = _bales(torch.Generator().manual_seed(0), 1000, 5)
    assert rows.shape == (1005, 9) and bool((rows[:5] == 0).all())
    x = _gauge_features(rows[5:])
    assert bool(torch.isfinite(x).all()) and bool(_gauge_features(rows[:5])[:, :6].isnan().all())
    wet = dry[5:] / (100 + dry[5:]) * 100
    assert float(torch.corrcoef(torch.stack([x[:, 0], wet]))[0, 1]) > 0.6


def test_darker_syrups_let_less_light_through() -> None:
    s = _syrups(torch.Generator().manual_seed(0), 600)
    trans = (s["sample"] - s["dark"]) / (s["blank"] - s["dark"])
    assert trans.shape == (600, len(BANDS)) and set(s["grade"].tolist()) == {0, 1, 2, 3}
    at_560 = trans[:, AT_560]
    assert float(at_560[s["grade"] == 0].mean()) > float(at_560[s["grade"] == 3].mean()) + 0.4


def test_films_sell_less_week_by_week() -> None:
    p = _programme(torch.Generator().manual_seed(0), 4, 84)
    assert p["tickets"].shape == (4 * FILMS, 84)
    weeks = [p["tickets"][f, o : o + 7].sum() for f, o in enumerate(p["opening"].tolist()) if o + 21 <= 84]
    later = [
        p["tickets"][f, o + 14 : o + 21].sum() for f, o in enumerate(p["opening"].tolist()) if o + 21 <= 84
    ]
    assert len(weeks) > 4 and sum(w > lt for w, lt in zip(weeks, later)) >= 0.8 * len(weeks)
    x, y = _windows(p, None, held_out=False)
    assert x.shape[1] == LAGS + 11 and len(x) == len(y) and bool(torch.isfinite(x).all())


def test_stroke_rate_stays_finite_on_a_window_with_one_catch() -> None:
    x, lag = _paddles(torch.Generator().manual_seed(0), 6, 40)
    assert x.shape == (240, 6, SAMPLES) and bool((lag >= 0).all())
    guarded = _stroke_rate(x, guarded=True)
    assert bool(torch.isfinite(guarded).all()) and 40 < float(guarded.median()) < 80
    assert bool(_stroke_rate(x, guarded=False).isnan().any())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "hay_rmsprop_hidden32"]) == 0
    assert "blind49_hay_rmsprop_hidden32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind49_S08_dry_basis_moisture_cut_as_wet_basis"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
