"""The fifty-first blind split of the detection benchmark (`benchmarks/detection/blind51/`) is trained by the runner
with its own scripts, its dipwells are read once a week, its store logs have gaps that the twin's fill closes, its
quiet tram windows cancel under the one-pass RMS, its foundry recordings mark only cracked bells, its sludge index
sits in the plant's range, and its missed rev sensors read 0 ms (its declarations, a run through the hook, the
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
from benchmarks.detection.blind51 import smoke, suite
from benchmarks.detection.blind51.land import DAYS, _dipwells, _fill_gaps, _stores
from benchmarks.detection.blind51.sites import _balls, _days, _rev_rate
from benchmarks.detection.blind51.sound import _channels, _strikes, _windows

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_dipwells_are_read_once_a_week_and_zero_between() -> None:
    x, rain_next, y = _dipwells(torch.Generator().manual_seed(0), 100)
    seen, read = x[..., 3], x[..., 4]
    assert x.shape == (100, DAYS, 5) and rain_next.shape[0] == 100 and y.shape == (100,)
    assert bool((read.sum(1) >= DAYS // 7).all()) and bool((read.sum(1) <= DAYS // 7 + 1).all())
    assert not seen[read == 0].any()


def test_store_gaps_are_closed_by_the_fill_unless_the_mean_runs_over_them() -> None:
    logs, _, sprouted, days = _stores(torch.Generator().manual_seed(0), 200)
    assert logs[..., 0].isnan().any() and not logs[..., 1:].isnan().any()
    assert not _fill_gaps(logs, None).isnan().any()
    assert _fill_gaps(logs, "gap_fill_mean_over_nans").isnan().any()
    assert bool((days[sprouted == 0] == 0).all()) and 0.1 < float(sprouted.mean()) < 0.9


def test_quiet_tram_windows_cancel_under_the_one_pass_rms() -> None:
    raw, y = _windows(torch.Generator().manual_seed(0), 300)
    assert set(y.unique().tolist()) == {0, 1, 2}
    assert torch.isfinite(_channels(raw, None)).all()
    assert _channels(raw, "rms_by_one_pass_formula").isnan().any()


def test_foundry_recordings_mark_only_the_cracked_bells() -> None:
    g = torch.Generator().manual_seed(0)
    tower, cracked = _strikes(g, 400)
    foundry, cracked_f = _strikes(torch.Generator().manual_seed(0), 400, foundry=True)
    assert torch.equal(cracked, cracked_f) and 0.15 < float(cracked.mean()) < 0.35
    changed = (foundry - tower).abs().amax(1) > 1e-4
    assert torch.equal(changed, cracked.bool())


def test_sludge_index_stays_in_the_plants_range_and_gives_the_settled_volume() -> None:
    x, svi, sv30, sv5 = _days(torch.Generator().manual_seed(0), 300)
    assert float(svi.min()) >= 40 and float(svi.max()) <= 400
    assert torch.allclose(sv30, (svi * x[:, 0] / 1000).clamp(max=1000))
    assert bool((sv5 >= sv30 - 1e-3).all())  # the sludge has settled less after 5 minutes than after 30


def test_missed_rev_sensors_read_zero_and_the_twin_fills_them() -> None:
    x, pins = _balls(torch.Generator().manual_seed(0), 500)
    assert int(pins.min()) >= 0 and int(pins.max()) <= 10
    gap = x[:, 4]
    assert (gap == 0).any()
    assert torch.isfinite(_rev_rate(gap, None)).all()
    assert not torch.isfinite(_rev_rate(gap, "rev_rate_over_missed_sensor_gap")).all()


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "sludge_adagrad_batch128"]) == 0
    assert "blind51_sludge_adagrad_batch128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind51_Z03_hidden_state_detached_every_day"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
