"""The twenty-seventh blind split of the detection benchmark (`benchmarks/detection/blind27/`) is trained by the runner
with its own scripts, its silent frames hold exact zeros and are never speech, its held-out songs come from artists
the training songs never had, its species rasters are indexed [latitude, longitude], its wines get whole marks from
3 to 9, its sides on the opening day have played no match, and only the training board's postings carry pay-band
tokens (its declarations, a run through the hook, the oracle's labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind27 import smoke, suite
from benchmarks.detection.blind27.audio import _frames, _songs
from benchmarks.detection.blind27.fields import GRID, _rasters, _sites, _wines
from benchmarks.detection.blind27.outcomes import VOCAB, _matches, _postings

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_silent_frames_hold_exact_zeros_and_are_never_speech() -> None:
    power, speech = _frames(torch.Generator().manual_seed(0), 400)
    silent = (power == 0).flatten(1).all(1)
    assert bool(silent.any()) and not bool(speech[silent].any())
    assert bool((power[~silent] > 0).all())
    assert 0.3 < float(speech.mean()) < 0.5


def test_held_out_songs_come_from_unseen_artists() -> None:
    num, _, artist, pop = _songs(torch.Generator().manual_seed(0), 300, (0, 180))
    _, _, artist_v, _ = _songs(torch.Generator().manual_seed(1), 300, (180, 240))
    assert not set(artist.tolist()) & set(artist_v.tolist())
    assert float(num[:, 5].max()) > 65504  # durations in milliseconds pass float16's range
    assert 0 <= float(pop.min()) and float(pop.max()) <= 100


def test_species_rasters_are_indexed_latitude_first() -> None:
    g = torch.Generator().manual_seed(0)
    rasters = _rasters(g)
    assert rasters.shape == (6, GRID, GRID)
    # temperature falls towards the high latitudes (rows), whatever the longitude
    assert float(rasters[0, :8].mean()) > float(rasters[0, -8:].mean()) + 5
    cells, present = _sites(g, rasters, 500)
    assert int(cells.min()) >= 0 and int(cells.max()) < GRID
    assert 0.1 < float(present.mean()) < 0.9


def test_wines_get_whole_marks_from_three_to_nine() -> None:
    m, q = _wines(torch.Generator().manual_seed(0), 500)
    assert m.shape == (500, 11) and bool((q == q.round()).all())
    assert 3 <= float(q.min()) and float(q.max()) <= 9 and len(q.unique()) >= 4
    assert float(m[:, 6].max()) > 100  # total sulfur dioxide in mg/L


def test_some_sides_have_played_no_match() -> None:
    teams, record, home, away = _matches(torch.Generator().manual_seed(0), 400)
    assert bool((teams[:, 0] != teams[:, 1]).all())
    assert bool((record[..., 2] == 0).any())
    assert bool((record[..., :2][record[..., 2] == 0] == 0).all())
    assert float((home > away).float().mean()) > float((away > home).float().mean())


def test_only_the_training_board_carries_pay_band_tokens() -> None:
    tokens, offsets, _, pay, monthly = _postings(torch.Generator().manual_seed(0), 50, True)
    plain, _, _, _, _ = _postings(torch.Generator().manual_seed(0), 50, False)
    assert int((tokens >= VOCAB).sum()) == 50 and not bool((plain >= VOCAB).any())
    assert len(offsets) == 50 and bool(monthly.any())
    assert float(pay[monthly].median()) < float(pay[~monthly].median())


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "wine_momentum"]) == 0
    assert "blind27_wine_momentum" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind27_V09_nodata_temperature_kept"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
