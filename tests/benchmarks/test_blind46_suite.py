"""The forty-sixth blind split of the detection benchmark (`benchmarks/detection/blind46/`) is trained by the runner
with its own scripts, its once-reporting bog loggers copy the evening reading, its kelp grows faster where nitrate and
light are high, its stalled door drives report no current, its drum ripple grows with the spin speed, its episodes keep
no listeners past their end, and only two of its pools carry a pH probe (its declarations, a run through the hook, the
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
from benchmarks.detection.blind46 import smoke, suite
from benchmarks.detection.blind46.audience import LATER, MINUTES, _episodes, _pool_days
from benchmarks.detection.blind46.farms import _frost_features, _lines, _nights
from benchmarks.detection.blind46.machines import STROKE, TRACE, TUMBLE, _cycles, _spins

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_once_reporting_bog_loggers_copy_the_evening_reading_and_the_twin_fills_their_rate() -> None:
    x, sprinkler, canopy, _ = _nights(torch.Generator().manual_seed(0), 1000)
    once = x[:, 2] == 0
    assert 50 < int(once.sum()) < 300 and bool((x[once, 0] == x[once, 1]).all())
    assert bool(torch.isfinite(_frost_features(x, sprinkler, bug=None)).all())
    frost = canopy < x[:, 7]
    assert 0.05 < float(frost.float().mean()) < 0.6 and bool((sprinkler[frost] > 0).all())


def test_kelp_grows_faster_where_nitrate_and_light_are_high() -> None:
    x, rate, day, line = _lines(torch.Generator().manual_seed(0), 4, 5, 12)
    assert x.shape == (240, 7) and bool((day > 0).all()) and int(line.max()) == 19
    rich = (x[:, 1] > x[:, 1].median()) & (x[:, 2] > x[:, 2].median())
    poor = (x[:, 1] < x[:, 1].median()) & (x[:, 2] < x[:, 2].median())
    assert float(rate[rich].mean()) > float(rate[poor].mean())


def test_stalled_door_drives_report_no_current_and_the_others_a_positive_one() -> None:
    cur, state = _cycles(torch.Generator().manual_seed(0), 200)
    assert cur.shape == (200, STROKE) and set(state.unique().tolist()) == {0, 1, 2, 3, 4}
    assert bool(cur[state == 4].isnan().all()) and bool(torch.isfinite(cur[state != 4]).all())
    assert float(cur[state != 4].mean()) > 0.5


def test_drum_ripple_grows_with_the_spin_speed_and_the_unbalance() -> None:
    speed, command, mass = _spins(torch.Generator().manual_seed(0), 400)
    assert speed.shape == (400, TRACE) and bool((command[:TUMBLE] == 50).all()) and float(command[-1]) > 990
    heavy = mass > 500
    ramp = (speed[:, -32:] - command[-32:]).std(1)
    tumble = (speed[:, :TUMBLE] - command[:TUMBLE]).std(1)
    assert float(ramp[heavy].mean()) > float(tumble[heavy].mean()) + 0.5
    assert float(ramp[heavy].mean()) > float(ramp[mass < 100].mean())


def test_episodes_keep_no_listeners_past_their_end() -> None:
    early, cols, later, downloads = _episodes(torch.Generator().manual_seed(0), 500)
    assert early.shape == (500, MINUTES) and later.shape == (500, len(LATER)) and cols.shape == (500, 9)
    assert bool(((early >= 0) & (early <= 1)).all()) and bool(((later >= 0) & (later <= 1)).all())
    length = cols[:, 0]
    assert bool((later[length < LATER[0]] == 0).all()) and bool((early[length < 3] == 0).all())
    assert bool((downloads >= 1.3).all())


def test_only_two_pools_carry_a_ph_probe() -> None:
    x, demand, stroke, probe = _pool_days(torch.Generator().manual_seed(0), 10, 40)
    assert x.shape == (400, 8) and int(probe.sum()) == 80
    assert float(demand.mean()) > 0 and bool(((stroke >= 0.5) & (stroke <= 3)).all())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "pool_adagrad_batch128"]) == 0
    assert "blind46_pool_adagrad_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind46_K18_demand_from_pump_strokes_at_one_ml"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
