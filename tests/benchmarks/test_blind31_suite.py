"""The thirty-first blind split of the detection benchmark (`benchmarks/detection/blind31/`) is trained by the runner
with its own scripts, its students who leave fall silent, its unpaid claims carry no amount and its paid ones a final
reserve equal to the amount, its fires only spread to the neighbours of burning cells, its held-out binding data come
from proteins never trained on, and its land chips hold no ship (its declarations, a run through the hook, the
oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from benchmarks.detection import run
from benchmarks.detection.blind31 import smoke, suite
from benchmarks.detection.blind31.environment import AHEAD, HOURS, _fires, _river
from benchmarks.detection.blind31.records import WEEKS, _claims, _students
from benchmarks.detection.blind31.screening import PROTEINS, SEEN, _binding, _chips

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_students_who_leave_are_silent_afterwards() -> None:
    logs, leaves, last = _students(torch.Generator().manual_seed(0), 300)
    assert bool((last[leaves == 0] == WEEKS).all()) and bool((last[leaves > 0] < WEEKS).all())
    after = torch.arange(WEEKS).unsqueeze(0) >= last.unsqueeze(1)
    assert not logs.transpose(1, 2)[after].any()
    assert 0.2 < float(leaves.mean()) < 0.5


def test_unpaid_claims_have_no_amount_and_paid_ones_a_final_reserve_equal_to_it() -> None:
    fields, cat, count, amount = _claims(torch.Generator().manual_seed(0), 2000)
    paid = amount > 0
    assert 0.03 < float((~paid).float().mean()) < 0.12
    assert torch.equal(fields[paid, 4], amount[paid])
    assert bool((fields[:, 3] > 0).all()) and bool((count >= 1).all()) and cat.shape == (2000, 3)


def test_fires_spread_only_to_neighbours_of_burning_cells() -> None:
    x, tomorrow = _fires(torch.Generator().manual_seed(0), 50)
    near = F.max_pool2d(x[:, :1], 3, stride=1, padding=1) > 0
    assert not tomorrow[~near].any()
    assert tomorrow[(x[:, :1] == 0) & near].any()  # some fire spreads


def test_river_series_hold_oxygen_around_saturation() -> None:
    series = _river(torch.Generator().manual_seed(0), 100)
    assert series.shape == (100, HOURS + AHEAD, 4)
    assert 2 < float(series[..., 0].mean()) < 14 and bool((series[..., 2] >= 0).all())


def test_held_out_binding_data_come_from_unseen_proteins() -> None:
    pockets, bits, protein, kd = _binding(torch.Generator().manual_seed(0), 500)
    assert pockets.shape[0] == PROTEINS and bits.shape[0] == 1000
    assert int(protein[:500].max()) < SEEN <= int(protein[500:].min())
    assert bool((kd > 0).all()) and set(bits.unique().tolist()) == {0.0, 1.0}


def test_land_chips_hold_no_ship_and_ships_are_brighter_than_the_sea() -> None:
    chips, ship, land = _chips(torch.Generator().manual_seed(0), 400)
    assert not ship[land].any()
    sea = ~land
    assert float(chips[sea & (ship > 0)].amax((1, 2, 3)).median()) > float(
        chips[sea & (ship == 0)].amax((1, 2, 3)).median()
    )


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "ships_nadam_batch32"]) == 0
    assert "blind31_ships_nadam_batch32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind31_Q13_assay_units_mixed_nm_and_um"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
