"""The forty-first blind split of the detection benchmark (`benchmarks/detection/blind41/`) is trained by the runner
with its own scripts, its standing axle-box windows are the only ones at speed 0, its coil patches are 12-bit counts,
its dive traces are timestamped a second apart at 1 Hz, its AOD is stored as scaled int16, its closed library weeks
lend nothing and its dough is never colder than the kitchen less a degree (its declarations, a run through the hook,
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
from benchmarks.detection.blind41 import smoke, suite
from benchmarks.detection.blind41.daily import WEEKS, _bakes, _loans
from benchmarks.detection.blind41.industry import SIDE, _patches, _windows
from benchmarks.detection.blind41.wild import SECONDS, _days, _dive_channels, _traces

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_only_the_standstill_windows_have_no_speed() -> None:
    moving = _windows(torch.Generator().manual_seed(0), 300, standstill=False)[1]
    assert float(moving.min()) >= 10
    _, speed, fault = _windows(torch.Generator().manual_seed(0), 2000, standstill=True)
    assert 0 < int((speed == 0).sum()) < 200 and set(fault.unique().tolist()) == {0, 1, 2, 3}


def test_coil_patches_are_twelve_bit_counts() -> None:
    frames, kind = _patches(torch.Generator().manual_seed(0), 50, centred=False)
    assert frames.shape == (50, 1, SIDE, SIDE) and float(frames.max()) <= 4095 and float(frames.min()) >= 0
    assert torch.equal(frames, frames.round()) and int(kind.max()) < 4


def test_dive_traces_run_a_second_apart_at_one_hertz() -> None:
    g = torch.Generator().manual_seed(0)
    depth, t, kind, wet = _traces(g, 20)
    x = _dive_channels(depth, t, g, None)
    assert x.shape == (20, SECONDS, 2) and bool(torch.isfinite(x).all())
    assert bool((wet[kind > 0] == 1).all())  # every dive is wet; some surface traces too


def test_aod_is_scaled_int16_with_a_next_day_reading() -> None:
    aod, met, pm = _days(torch.Generator().manual_seed(0), 400)
    assert aod.dtype == torch.long and int(aod.min()) >= -50 and int(aod.max()) < 32767
    assert met.shape == (400, 4) and bool((pm > 0).all())
    assert torch.equal(pm[1:, 0], pm[:-1, 1])


def test_closed_library_weeks_lend_nothing_and_dough_is_near_the_kitchen() -> None:
    loans, term = _loans(torch.Generator().manual_seed(0))
    assert loans.shape[1] == WEEKS == term.shape[0] and 0 < int((loans == 0).sum()) < 200
    feats, hours = _bakes(torch.Generator().manual_seed(0), 300)
    assert bool((feats[:, 2] >= feats[:, 6] - 1).all()) and bool((hours[:, 1] > hours[:, 0]).all())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "smoke_adagrad_batch256"]) == 0
    assert "blind41_smoke_adagrad_batch256" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind41_C03_defect_log_joined_without_antenna_offset"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
