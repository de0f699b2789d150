"""The fortieth blind split of the detection benchmark (`benchmarks/detection/blind40/`) is trained by the runner
with its own scripts, its furnace burners idle in a few windows, its tyres wear faster under-inflated, its dengue
counts of the last weeks are short of the late reports, its cloud-masked match-ups are dropped, its aged drone packs
sag further, and its blunders follow the mover's clock (its declarations, a run through the hook, the oracle's
labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind40 import smoke, suite
from benchmarks.detection.blind40.factory import _channels, _melt, _tyres
from benchmarks.detection.blind40.leisure import _flights, _move_inputs, _moves
from benchmarks.detection.blind40.nature import _districts, _lake_inputs, _matchups, _windows

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_furnace_burners_idle_in_a_few_windows_and_only_the_raw_ratio_turns_non_finite() -> None:
    raw, y = _melt(torch.Generator().manual_seed(0), 600, pascals=False, few_defects=False)
    assert raw.shape == (600, 6, 64) and 0.15 < float(y.mean()) < 0.35
    assert bool((raw[:, 3] == 0).all(-1).any())
    assert bool(torch.isfinite(_channels(raw, None)).all())
    assert not bool(torch.isfinite(_channels(raw, "oxygen_ratio_over_idle_burners")).all())
    pa, _ = _melt(torch.Generator().manual_seed(0), 600, pascals=True, few_defects=False)
    assert float(pa[:, 2].mean()) == pytest.approx(1000 * float(raw[:, 2].mean()), rel=1e-4)


def test_tyres_wear_faster_under_inflated() -> None:
    log, wear = _tyres(torch.Generator().manual_seed(0), 4000)
    low, high = log[:, 1] < 6.5, log[:, 1] > 8.5
    assert float((wear / log[:, 0])[low].mean()) > float((wear / log[:, 0])[high].mean())
    assert float(wear.max()) < 8


def test_dengue_counts_as_of_the_day_are_short_in_the_last_weeks() -> None:
    records = _districts(torch.Generator().manual_seed(0), 300)
    as_of, cases = _windows(records, True, raw_counts=False)
    filled, _ = _windows(records, False, raw_counts=False)
    assert as_of.shape == (300, 26, 4) and cases.shape == (300,)
    assert bool((as_of[:, -1, 0] <= filled[:, -1, 0]).all()) and bool((as_of[:, :-3] == filled[:, :-3]).all())


def test_lake_cloud_masked_matchups_read_zero_and_give_a_non_finite_index() -> None:
    m, log_chl = _matchups(torch.Generator().manual_seed(0), 500, summer_only=False)
    cloud = m[:, :8].abs().sum(-1) == 0
    assert 0.03 < float(cloud.float().mean()) < 0.2
    assert not bool(torch.isfinite(_lake_inputs(m, None)[cloud]).all())
    assert bool(torch.isfinite(_lake_inputs(m[~cloud], None)).all())
    _summer, high = _matchups(torch.Generator().manual_seed(0), 500, summer_only=True)
    assert float(high.min()) >= 1.2 > float(log_chl.min())


def test_aged_drone_packs_sag_further() -> None:
    flights, soh = _flights(torch.Generator().manual_seed(0), 500)
    assert flights.shape == (500, 3, 80)
    end = flights[:, 0, -10:].mean(-1)
    assert float(end[soh < 80].mean()) < float(end[soh > 90].mean())


def test_blunders_follow_the_movers_clock_and_a_zero_clock_breaks_the_plain_log() -> None:
    rows, _, _, labels = _moves(torch.Generator().manual_seed(0), 4000, millis=False)
    short = rows[:, 0] < 10
    assert float(labels[short, 0].mean()) > float(labels[~short, 0].mean())
    assert bool((rows[:, 0] == 0).any())
    assert bool(torch.isfinite(_move_inputs(rows, None)).all())
    assert not bool(torch.isfinite(_move_inputs(rows, "log_of_movers_clock_at_zero")).all())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "lake_adamw_hidden32"]) == 0
    assert "blind40_lake_adamw_hidden32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind40_D13_green_and_red_bands_swapped"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
