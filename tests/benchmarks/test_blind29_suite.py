"""The twenty-ninth blind split of the detection benchmark (`benchmarks/detection/blind29/`) is trained by the runner
with its own scripts, its call counts follow the working day, its birds' missing masses are NaN until filled, its
scene's digital numbers are reflectance times 10000 with 0 for unlabelled pixels, its stays draw lactate now and then,
and its flaring regions are the minority (its declarations, a run through the hook, the oracle's labels:
`test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind29 import smoke, suite
from benchmarks.detection.blind29.monitoring import HOURS, _regions, _stays
from benchmarks.detection.blind29.operations import PICKERS, _orders, _volumes
from benchmarks.detection.blind29.surveys import BANDS, COVERS, SPECIES, _endmembers, _records, _scene

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_pick_times_grow_with_the_order_lines() -> None:
    num, cat, secs = _orders(torch.Generator().manual_seed(0), 2000, torch.zeros(PICKERS))
    small, large = secs[num[:, 0] <= 2], secs[num[:, 0] >= 6]
    assert float(large.median()) > 1.5 * float(small.median())
    assert int(cat[:, 1].max()) < PICKERS and bool((secs > 0).all())


def test_calls_come_in_working_hours_and_nights_have_empty_hours() -> None:
    counts, campaign = _volumes(torch.Generator().manual_seed(0))
    by_hour = counts.view(-1, 24)
    assert float(by_hour[:, 12].mean()) > 10 * float(by_hour[:, 3].mean())
    assert bool((counts == 0).any())  # the plain log of these is -inf
    assert set(campaign.unique().tolist()) == {0.0, 1.0}


def test_bird_records_miss_some_masses_and_cover_every_species() -> None:
    means = torch.full((SPECIES, 6), 20.0)
    traits, habitat, species = _records(torch.Generator().manual_seed(0), 500, means)
    missing = traits[:, 5].isnan()
    assert 0 < int(missing.sum()) < 60 and not traits[:, :5].isnan().any()
    assert set(species.tolist()) == set(range(SPECIES)) and int(habitat.max()) < 5


def test_scene_holds_digital_numbers_and_unlabelled_pixels() -> None:
    g = torch.Generator().manual_seed(0)
    dn, label = _scene(g, 400, _endmembers(g))
    assert dn.dtype == torch.long and dn.shape == (400, BANDS)
    assert int(dn.min()) >= 0 and int(dn.max()) <= 10000 and float(dn.float().mean()) > 500
    assert set(label.unique().tolist()) == set(range(COVERS + 1))


def test_stays_draw_lactate_now_and_then_and_at_onset_only_when_cut_there() -> None:
    vitals, _ = _stays(torch.Generator().manual_seed(0), 300)
    drawn = torch.isfinite(vitals[..., 5])
    assert vitals.shape == (300, HOURS, 6) and bool(drawn[:, 0].all())
    assert 0.1 < float(drawn[:, 1:].float().mean()) < 0.25
    assert torch.isfinite(vitals[..., :5]).all()
    onset, sepsis_o = _stays(torch.Generator().manual_seed(0), 300, to_onset=True)
    assert bool(torch.isfinite(onset[sepsis_o > 0, -1, 5]).all())


def test_flaring_regions_are_a_minority_with_positive_features() -> None:
    feats, flare = _regions(torch.Generator().manual_seed(0), 3000)
    assert bool((feats > 0).all()) and 0.03 < float(flare.mean()) < 0.25


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "blind29_flares_radam_hidden32"]) == 0
    assert "blind29_flares_radam_hidden32" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind29_T11_wing_and_tail_columns_swapped"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
