"""The twenty-fifth blind split of the detection benchmark (`benchmarks/detection/blind25/`) is trained by the runner
with its own scripts, its thin order books leave deep levels empty on both sides, its closed car parks report no
spaces, a fifth of its reactions have no additive, its spellings are pronounced one phoneme a letter, and its leaf
photographs come as 8-bit HWC arrays (its declarations, a run through the hook, the oracle's labels:
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
from benchmarks.detection.blind25 import smoke, suite
from benchmarks.detection.blind25.chemistry import _effects, _reactions
from benchmarks.detection.blind25.markets import LEVELS, _book, _occupancy
from benchmarks.detection.blind25.recognition import PHONEMES, SIZE, _encode, _photos, _pronounce, _words

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_thin_books_leave_deep_levels_empty_on_both_sides() -> None:
    mid, book, changes, direction, _, thin = _book(torch.Generator().manual_seed(0), 2000)
    bid_size, ask_size = book[:, 1], book[:, 3]
    both_empty = (bid_size == 0) & (ask_size == 0)
    assert both_empty.any() and not both_empty[~thin[:, 0, 0]].any()
    assert bool((book[:, 0] < mid.unsqueeze(1)).all()) and bool((book[:, 2] > mid.unsqueeze(1)).all())
    assert book.shape == (2000, 4, LEVELS) and changes.shape == (2000, 6)
    assert set(direction.unique().tolist()) == {0, 1, 2}


def test_closed_car_parks_report_no_spaces_and_open_ones_are_never_over_full() -> None:
    cars, capacity = _occupancy(torch.Generator().manual_seed(0))
    closed = capacity == 0
    assert closed.any() and not cars[closed].any()
    assert bool((cars[~closed] <= capacity[~closed]).all())
    assert not closed[:, -168:].any()  # the held-out week has every lot open


def test_a_fifth_of_reactions_have_no_additive_and_yields_are_percentages() -> None:
    g = torch.Generator().manual_seed(0)
    r = _reactions(g, 2000, _effects(g))
    share = float((r["equiv"] == 0).float().mean())
    assert 0.15 < share < 0.25
    assert float(r["yield"].min()) >= 0 and float(r["yield"].max()) <= 100


def test_words_are_pronounced_one_phoneme_a_letter() -> None:
    assert _pronounce("cape") == ["K", "EY", "P", "_"]
    assert _pronounce("shell") == ["SH", "_", "EH", "L", "_"]
    assert _pronounce("cigar")[0] == "S"
    words = _words(torch.Generator().manual_seed(0), 200)
    ids, targets = _encode(words)
    assert len(set(words)) == 200 and int(ids.min()) == 0 and int(ids[:, 0].min()) >= 1
    assert bool(((ids > 0) == (targets >= 0)).all()) and int(targets.max()) < len(PHONEMES)


def test_leaf_photographs_are_8_bit_hwc_arrays() -> None:
    photos, y = _photos(torch.Generator().manual_seed(0), 50)
    assert photos.dtype == torch.uint8 and photos.shape == (50, SIZE, SIZE, 3)
    assert int(y.min()) >= 0 and int(y.max()) < 5


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "parking_momentum_warmup"]) == 0
    assert "blind25_parking_momentum_warmup" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind25_X06_window_minmax_scaled_per_sample"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
