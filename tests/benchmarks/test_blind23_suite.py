"""The twenty-third blind split of the detection benchmark (`benchmarks/detection/blind23/`) is trained by the runner
with its own scripts, its monitor windows fill lost readings, its failed libraries are filtered, its curtailed records
are flagged on windy days, its tic-tac-toe values come from minimax over every open position, its signs stay in the
unit range and its distances are great-circle kilometres (its declarations, a run through the hook, the oracle's
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
from benchmarks.detection.blind23 import smoke, suite
from benchmarks.detection.blind23.clinic import _cohort, _fill_lost, _log_cpm, _patients
from benchmarks.detection.blind23.outcomes import SYMMETRIES, _positions, _records, _value
from benchmarks.detection.blind23.roads import SIDE, SIGNS, _haversine, _signs

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_lost_monitor_readings_are_zero_and_filled_by_the_last_good_one() -> None:
    raw, insulin, carbs = _patients(torch.Generator().manual_seed(0), 200, 54)
    lost = raw == 0
    assert 0 < float(lost.float().mean()) < 0.05
    assert bool((insulin > 0).all()) and bool((carbs >= 0).all())  # the basal rate always flows
    filled = _fill_lost(raw, lost)
    assert bool((filled > 0).all())
    row, col = map(int, (lost[:, 1:].nonzero()[0] + torch.tensor([0, 1])))
    assert float(filled[row, col]) == float(filled[row, col - 1])


def test_a_failed_library_is_filtered_before_counts_per_million() -> None:
    g = torch.Generator().manual_seed(0)
    counts, y = _cohort(g, torch.zeros(1000), 20, [0.25] * 4, torch.zeros(1000), failed=True)
    assert float(counts[0].sum()) == 0 and bool((counts[1:].sum(1) > 10_000).all())
    x, keep = _log_cpm(counts)
    assert not bool(keep[0]) and len(x) == 19 and bool(torch.isfinite(x).all())
    assert int(y.max()) < 4


def test_curtailed_records_are_flagged_on_windy_days_and_capped() -> None:
    records, true, logged = _records(torch.Generator().manual_seed(0), 4000)
    curtailed = records[:, 5] == 1
    assert bool((records[curtailed, 0] > 9).all()) and bool((logged[curtailed] <= 0.3).all())
    assert bool((true >= 0).all() and (true <= 1).all())
    assert float(true[records[:, 0] > 25].max()) == 0.0  # cut-out


def test_tictactoe_values_come_from_minimax_over_every_open_position() -> None:
    boards, movers, values = _positions()
    assert len(boards) == 4520 and set(values.tolist()) == {-1, 0, 1}
    assert _value((0,) * 9, 1) == 0  # perfect play draws
    assert _value((1, 1, 0, -1, -1, 0, 0, 0, 0), 1) == 1  # X to move completes the top row
    assert sorted(SYMMETRIES.sum(1).tolist()) == [36] * 8
    assert all(sorted(s.tolist()) == list(range(9)) for s in SYMMETRIES)
    assert bool((movers[(boards != 0).sum(1) % 2 == 0] == 1).all())  # X moves when the marks are even


def test_signs_are_unit_range_crops_of_every_class() -> None:
    x, y = _signs(torch.Generator().manual_seed(0), 140)
    assert x.shape == (140, 3, SIDE, SIDE) and float(x.min()) >= 0 and float(x.max()) <= 1
    assert set(y.tolist()) == set(range(SIGNS))


def test_haversine_gives_great_circle_kilometres() -> None:
    one_degree = _haversine(torch.tensor([[40.0, -74.0, 41.0, -74.0]]))
    assert float(one_degree) == pytest.approx(111.2, abs=0.2)
    assert float(_haversine(torch.tensor([[40.0, -74.0, 40.0, -74.0]]))) == 0.0


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "turbine_adamax_batch256"]) == 0
    assert "blind23_turbine_adamax_batch256" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind23_L18_outcomes_kept_from_x_side"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
