"""The thirty-sixth blind split of the detection benchmark (`benchmarks/detection/blind36/`) is trained by the runner
with its own scripts, its standing-spindle windows carry no current and a crest factor of 0, its mixes leave slag and
fly ash out of many batches, its grain patches show one bright grain, its suspended cards count as unused, and its
trigram batches hand the bag each URL whole (its declarations, a run through the hook, the oracle's labels:
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
from benchmarks.detection.blind36 import smoke, suite
from benchmarks.detection.blind36.accounts import _rows, _statements, _trigrams, _urls, _utilisation
from benchmarks.detection.blind36.farming import SIDE, _patches
from benchmarks.detection.blind36.workshop import ZERO_COUNTS, _batches, _channels, _windows

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_standing_spindle_windows_read_zero_amperes_and_a_crest_factor_of_zero() -> None:
    counts, wear = _windows(torch.Generator().manual_seed(0), 400)
    standing = (counts == ZERO_COUNTS).all(-1).all(-1)
    assert 0 < int(standing.sum()) < 60
    x = _channels(counts, None)
    assert torch.isfinite(x).all() and not x[standing].any()
    assert float(wear.min()) >= 0 and float(wear.max()) <= 0.3
    assert torch.isnan(_channels(counts, "crest_factor_over_standing_spindle")[standing][:, 2]).all()


def test_many_mixes_use_no_slag_or_fly_ash() -> None:
    mixes, strength = _batches(torch.Generator().manual_seed(0), 500)
    assert 0.3 < float((mixes[:, 1] == 0).float().mean()) < 0.7
    assert 0.3 < float((mixes[:, 2] == 0).float().mean()) < 0.7
    assert bool((mixes[:, 7] >= 1).all()) and 0 < float(strength.median()) < 100


def test_grain_patches_show_one_bright_grain_on_a_dark_tray() -> None:
    patches, y = _patches(torch.Generator().manual_seed(0), 50)
    assert patches.dtype == torch.uint8 and patches.shape == (50, 1, SIDE, SIDE)
    assert int(y.min()) >= 0 and int(y.max()) < 4
    centre, corner = patches[:, 0, 6:10, 6:10].float().mean(), patches[:, 0, :2, :2].float().mean()
    assert float(centre) > float(corner) + 80


def test_suspended_cards_count_as_unused_unless_divided_unguarded() -> None:
    balance, limit, _, _ = _statements(torch.Generator().manual_seed(0), 300)
    suspended = limit == 0
    assert suspended.any()
    util = _utilisation(balance, limit, None)
    assert torch.isfinite(util).all() and not util[suspended].any()
    assert not torch.isfinite(_utilisation(balance, limit, "utilisation_over_suspended_zero_limit")).all()


def test_trigram_batches_hand_the_bag_each_url_whole() -> None:
    urls, label = _urls(torch.Generator().manual_seed(0), 20, http_for_phishing=False)
    assert set(label.unique().tolist()) <= {0.0, 1.0}
    ids, offsets = _trigrams(urls, None)
    assert len(ids) == sum(
        len(u) for u in urls
    )  # one trigram a character, the URL padded by a mark each side
    pick = torch.tensor([3, 0])
    flat, starts = _rows(ids, offsets, pick)
    assert starts.tolist() == [0, len(urls[3])]
    assert flat[len(urls[3]) :].tolist() == ids[: len(urls[0])].tolist()


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "concrete_nadam_hidden128"]) == 0
    assert "blind36_concrete_nadam_hidden128" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind36_H07_ridge_alpha_passed_as_weight_decay"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
