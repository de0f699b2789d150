"""The thirty-third blind split of the detection benchmark (`benchmarks/detection/blind33/`) is trained by the runner
with its own scripts, its flat airflow windows and probe-off readings are where the scripts guard them, its humidity
sensor reads over 100 %, its m/z agree with the peptides' masses and charges, its X-ray crops stay in 12 bits, its
noise levels are roadside levels and its trigram hashes fall in their buckets (its declarations, a run through the
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
from benchmarks.detection.blind33 import smoke, suite
from benchmarks.detection.blind33.labs import MASSES, PROTON, SIDE, WATER, _joints, _peptides
from benchmarks.detection.blind33.monitors import _carry_forward, _greenhouse, _nights, _vpd
from benchmarks.detection.blind33.regions import BUCKETS, _hours, _language, _posts, _trigrams

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_flat_airflow_and_probe_off_readings_are_there_and_carried_forward() -> None:
    spo2, flow, scored, label = _nights(torch.Generator().manual_seed(0), 400)
    flat = (flow == 0).all(1)
    assert 0 < int(flat.sum()) < 60
    assert bool((spo2 == 0).any(1).any()) and not bool((_carry_forward(spo2) == 0).any())
    assert set(label.unique().tolist()) == {0.0, 1.0} and set(scored.unique().tolist()) <= {0.0, 1.0}


def test_humidity_reads_over_saturation_and_gives_a_negative_deficit() -> None:
    fields, inside = _greenhouse(torch.Generator().manual_seed(0), 200)
    assert bool((fields[..., 5] > 100).any()) and float(fields[..., 5].max()) <= 103
    assert bool((_vpd(fields) < 0).any())
    assert torch.equal(fields[..., 0], inside)


def test_peptide_mz_agrees_with_mass_and_charge() -> None:
    counts, mz, charge = _peptides(torch.Generator().manual_seed(0), 300)
    z = charge + 1
    mass = counts @ MASSES + WATER
    assert float(((mz * z - z * PROTON - mass).abs() / mass).max()) < 1e-4
    assert set(z.unique().tolist()) <= {1, 2, 3, 4} and len(z.unique()) >= 3
    assert bool(((counts.sum(1) >= 7) & (counts.sum(1) <= 30)).all())


def test_xray_crops_stay_in_twelve_bits() -> None:
    counts, y = _joints(torch.Generator().manual_seed(0), 100)
    assert counts.dtype == torch.int16 and counts.shape == (100, 1, SIDE, SIDE)
    assert int(counts.min()) >= 0 and int(counts.max()) <= 4095
    assert set(y.unique().tolist()) == {0, 1, 2, 3, 4}


def test_noise_levels_are_roadside_levels() -> None:
    numbers, surface, level = _hours(torch.Generator().manual_seed(0), 500)
    assert 45 < float(level.mean()) < 85 and float(level.std()) > 3
    assert bool((numbers[:, :3] >= 0).all()) and int(surface.max()) <= 3


def test_trigram_hashes_fall_in_their_buckets() -> None:
    posts, y = _posts(torch.Generator().manual_seed(0), 20, _language(0))
    grams, offsets = _trigrams(posts)
    assert len(grams) == sum(len(p) - 2 for p in posts) and len(offsets) == 20
    assert int(grams.min()) >= 0 and int(grams.max()) < BUCKETS
    assert int(y.max()) < 5


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "roads_rmsprop_hidden128"]) == 0
    assert "blind33_roads_rmsprop_hidden128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind33_N16_truck_counts_joined_by_row_order"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
