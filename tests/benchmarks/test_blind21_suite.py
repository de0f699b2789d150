"""The twenty-first blind split of the detection benchmark (`benchmarks/detection/blind21/`) is trained by the runner
with its own scripts, its same-day bookings have no lead time, its flights arrive early as well as late, its probe
readings are 12-bit counts stored as int16 with oven-dry samples among them, its patients miss some BMIs, its slow
products often sell nothing, and its duplicate questions share their topic's concepts (its declarations, a run through
the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind21 import smoke, suite
from benchmarks.detection.blind21.commerce import PRODUCTS, SYNONYMS, TOPICS, _catalogue, _days, _pairs
from benchmarks.detection.blind21.fields import READINGS, _patients, _samples
from benchmarks.detection.blind21.travel import _bookings, _flights

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_bookings_include_same_day_ones_and_a_status_only_known_after_the_stay() -> None:
    num, cat, status, cancelled = _bookings(torch.Generator().manual_seed(0), 2000)
    assert bool((num[:, 0] == 0).any()) and bool((num[:, 0] >= 0).all())
    assert torch.equal(status, cancelled)
    assert 0.1 < float(cancelled.mean()) < 0.6
    assert int(cat.min()) >= 0


def test_flights_arrive_early_as_well_as_late() -> None:
    _, _, delay = _flights(torch.Generator().manual_seed(0), 2000)
    assert bool((delay < -1).any()) and bool((delay > 30).any())


def test_probe_readings_are_int16_counts_whose_sum_overflows_int16() -> None:
    readings, _, content = _samples(torch.Generator().manual_seed(0), 200)
    assert readings.dtype == torch.int16 and readings.shape == (200, READINGS)
    assert int(readings.min()) >= 0 and int(readings.max()) <= 4095
    assert int(readings.long().sum(1).max()) > 32767  # the oversampled sum needs more than 16 bits
    assert bool((content == 0).any()) and float(content.max()) < 0.5


def test_some_patients_miss_their_bmi_and_strokes_are_rare() -> None:
    num, smoking, stroke = _patients(torch.Generator().manual_seed(0), 3000)
    missing = num[:, 4].isnan()
    assert 0.01 < float(missing.float().mean()) < 0.1 and not num[:, :4].isnan().any()
    assert 0.01 < float(stroke.mean()) < 0.15 and int(smoking.max()) < 4


def test_slow_products_often_sell_nothing_and_prices_are_per_pack() -> None:
    g = torch.Generator().manual_seed(0)
    cat = _catalogue(g)
    ids, paid, units, truth = _days(g, 3000, cat, 0.3)
    assert bool((units == 0).any()) and int(ids[:, 0].max()) < PRODUCTS
    assert bool((paid > 0).all()) and bool(torch.isfinite(truth).all())
    assert set(cat[3].unique().tolist()) <= {1.0, 2.0, 4.0, 6.0}


def test_duplicate_questions_share_their_topic_and_others_share_one_concept() -> None:
    x, y = _pairs(torch.Generator().manual_seed(0), 60, SYNONYMS)
    concept = lambda w: (w - 1) // SYNONYMS
    for pair, label in zip(x, y, strict=True):
        a = {concept(int(w)) for w in pair[0] if 0 < w <= TOPICS * 2 * SYNONYMS}
        b = {concept(int(w)) for w in pair[1] if 0 < w <= TOPICS * 2 * SYNONYMS}
        assert (a == b) if label > 0 else len(a & b) == 1


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "prices_adamw_batch1024"]) == 0
    assert "blind21_prices_adamw_batch1024" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind21_A17_pack_price_taken_as_unit_price"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
