"""The thirty-second blind split of the detection benchmark (`benchmarks/detection/blind32/`) is trained by the runner
with its own scripts, its jets are padded with empty slots, its radar gates include negative KDP, a few of its
methylation reads fail with no signal, its flat recordings are silent, its recorded chess moves land on a black
piece, and its sea-ice concentrations stay fractions (its declarations, a run through the hook, the oracle's labels:
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
from benchmarks.detection.blind32 import biomed, smoke, suite
from benchmarks.detection.blind32.grids import PLANES, _patches, _positions
from benchmarks.detection.blind32.physics import SLOTS, _gates, _jets

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_jets_are_padded_with_empty_slots_after_their_constituents() -> None:
    jets = _jets(torch.Generator().manual_seed(0), 200)
    mask, pt = jets["mask"], jets["pt"]
    assert pt.shape == (200, SLOTS)
    assert bool((pt[~mask] == 0).all()) and bool((pt[mask] > 0).all())
    assert int(mask.sum(1).min()) >= 3
    assert set(jets["top"].unique().tolist()) == {0.0, 1.0}


def test_some_radar_gates_measure_a_negative_kdp() -> None:
    x, kind = _gates(torch.Generator().manual_seed(0), 2000)
    assert 0.02 < float((x[:, 2] < 0).float().mean()) < 0.5  # the floor of the log matters
    assert float(x[:, 3].min()) >= 0.6 and float(x[:, 3].max()) <= 1.0
    assert set(kind.unique().tolist()) == {0, 1, 2, 3}


def test_a_few_methylation_reads_fail_with_no_signal_on_either_channel() -> None:
    g = torch.Generator().manual_seed(0)
    base, slope = 2.5 * torch.randn(biomed.PROBES, generator=g), torch.zeros(biomed.PROBES)
    meth, unmeth, age = biomed._samples(g, 50, base, slope)
    failed = (meth == 0) & (unmeth == 0)
    assert 0 < float(failed.float().mean()) < 0.01
    assert bool((meth >= 0).all()) and bool((unmeth >= 0).all())
    assert 20 <= float(age.min()) and float(age.max()) <= 80


def test_flat_recordings_are_silent_and_the_twin_keeps_the_bands_to_600_hz() -> None:
    power, murmur = biomed._recordings(torch.Generator().manual_seed(0), 800)
    flat = power.amax((1, 2)) == 0
    assert 0 < int(flat.sum()) < 60
    assert bool((power[~flat].amax((1, 2)) > 0).all())
    assert int(biomed.CUTOFF_HZ / (biomed.RATE / 2 / biomed.BANDS)) == 12
    assert 0.2 < float(murmur.mean()) < 0.5


def test_recorded_moves_land_on_a_black_piece_and_each_side_has_one_king() -> None:
    boards, target = _positions(torch.Generator().manual_seed(0), 100)
    assert boards.shape == (100, PLANES, 8, 8)
    flat = boards.flatten(2)
    assert bool((flat[:, 5].sum(1) == 1).all()) and bool((flat[:, 11].sum(1) == 1).all())
    black = flat[:, 6:11].sum(1)  # black pieces other than the king
    assert bool((black[torch.arange(100), target] == 1).all())


def test_sea_ice_concentrations_are_fractions_between_water_and_ice() -> None:
    tb, conc = _patches(torch.Generator().manual_seed(0), 20)
    assert tb.shape == (20, 4, 16, 16) and conc.shape == (20, 16, 16)
    assert float(conc.min()) >= 0 and float(conc.max()) <= 1
    assert 80 < float(tb.min()) and float(tb.max()) < 280  # kelvin


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "precipitation_adagrad_batch128"]) == 0
    assert "blind32_precipitation_adagrad_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind32_P22_qc_threshold_applied_to_training_only"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
