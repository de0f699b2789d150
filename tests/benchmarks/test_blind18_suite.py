"""The eighteenth blind split of the detection benchmark (`benchmarks/detection/blind18/`) is trained by the runner
with its own scripts, its road graph is symmetric with one broken detector, its radar frames are dry outside the rain
cells, its beats are stored as ADC counts under heavy imbalance, its galaxies span the detector's range, its protein
states are padded as coil, and its cloudy months are masked in every band (its declarations, a run through the hook,
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
from benchmarks.detection.blind18 import smoke, suite
from benchmarks.detection.blind18.grids import (
    FRAME,
    INPUTS,
    SENSORS,
    STUCK,
    ConvLSTMNowcaster,
    _normalised,
    _road_graph,
    _speeds,
    _storms,
)
from benchmarks.detection.blind18.instruments import PREVALENCE, SIDE, _beats, _galaxies
from benchmarks.detection.blind18.sequences import COIL, MONTHS, RESIDUES, Tagger, _chains, _fields

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_road_graph_is_symmetric_and_one_detector_is_stuck() -> None:
    adj = _road_graph()
    assert torch.equal(adj, adj.T) and bool((adj.sum(1) >= 2).all())
    a_hat = _normalised(adj)
    assert torch.allclose(a_hat, a_hat.T) and bool(torch.isfinite(a_hat).all())
    speeds = _speeds(torch.Generator().manual_seed(0), 200, adj)
    assert speeds.shape == (200, SENSORS)
    assert float(speeds[:, STUCK].std()) == 0.0
    assert float(speeds[:, [i for i in range(SENSORS) if i != STUCK]].std(0).min()) > 1.0


def test_radar_frames_are_dry_outside_the_cells_and_the_cell_keeps_its_frames() -> None:
    storms = _storms(torch.Generator().manual_seed(0), 8)
    assert storms.shape == (8, INPUTS + 1, FRAME, FRAME)
    assert bool((storms >= 0).all()) and float((storms == 0).float().mean()) > 0.3
    torch.manual_seed(0)
    model = ConvLSTMNowcaster(4)
    assert model(storms[:, :INPUTS]).shape == (8, FRAME, FRAME)


def test_beats_are_adc_counts_under_heavy_imbalance() -> None:
    counts, y = _beats(torch.Generator().manual_seed(0), 4000)
    assert counts.shape[0] == 4000 and torch.equal(counts, counts.round())
    assert abs(float(counts.median()) - 1024) < 100  # the baseline sits at the converter's mid-scale
    share = torch.bincount(y, minlength=4).float() / len(y)
    assert torch.allclose(share, torch.tensor(PREVALENCE), atol=0.02)


def test_galaxies_span_the_detectors_range() -> None:
    counts, y = _galaxies(torch.Generator().manual_seed(0), 200)
    assert counts.shape == (200, SIDE, SIDE) and set(y.tolist()) == {0, 1, 2, 3, 4}
    peaks = counts.amax((1, 2))
    assert float(peaks.min()) > 1000 and float(peaks.max()) > 65504  # beyond float16 for some


def test_protein_padding_is_coil_and_the_forward_half_alone_is_read_twice() -> None:
    res, states, lengths = _chains(torch.Generator().manual_seed(0), 16)
    pad = res == RESIDUES
    assert torch.equal(pad.sum(1), res.shape[1] - lengths)
    assert bool((states[pad] == COIL).all()) and set(states[~pad].tolist()) == {0, 1, 2}
    torch.manual_seed(0)
    model = Tagger(8)
    seq, _ = model.lstm(model.embed(res))
    half = torch.cat([seq[..., :8], seq[..., :8]], -1)
    assert torch.allclose(model(res, forward_only=True), model.out(half))


def test_cloudy_months_are_masked_in_every_band() -> None:
    stored, yields = _fields(torch.Generator().manual_seed(0), 300)
    assert stored.shape == (300, MONTHS, 4) and yields.shape == (300,)
    masked = (stored == 0).all(-1)
    assert bool(((stored == 0).any(-1) == masked).all())  # a month is masked in all bands or none
    assert 0.1 < float(masked.float().mean()) < 0.3
    assert float(stored.max()) > 1000  # stored reflectance, 10,000 for full


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "crop_adagrad"]) == 0
    assert "blind18_crop_adagrad" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind18_D15_forward_direction_only"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
