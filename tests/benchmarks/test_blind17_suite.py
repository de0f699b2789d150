"""The seventeenth blind split of the detection benchmark (`benchmarks/detection/blind17/`) is trained by the runner
with its own scripts, its captions name what the pictures show, its reversed strings keep their padding in place, its
molecules' bonds go both ways, its oblivious trees route every row to one leaf, its automaton starts from one live
cell, and its sketch classifier reads each drawing at its own end (its declarations, a run through the hook, the
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
from benchmarks.detection.blind17 import smoke, suite
from benchmarks.detection.blind17.drawings import (
    CHANNELS,
    POINTS,
    Automaton,
    SketchGRU,
    _drawings,
    _seed_state,
)
from benchmarks.detection.blind17.sequences import COLOURS, PAD, _pictures, _reversed, _strings
from benchmarks.detection.blind17.structures import ObliviousEnsemble, _molecules

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_captions_name_the_colour_and_place_of_the_shape() -> None:
    pics, caps = _pictures(torch.Generator().manual_seed(0), 16)
    for pic, cap in zip(pics, caps, strict=True):
        colour, place = int(cap[1]) - 2, int(cap[3]) - 10
        paint = pic - 0.2  # the background's level
        quadrants = [
            paint[:, 6 * (q // 2) : 6 * (q // 2) + 6, 6 * (q % 2) : 6 * (q % 2) + 6] for q in range(4)
        ]
        assert max(range(4), key=lambda q: float(quadrants[q].sum())) == place
        mean = quadrants[place].mean((1, 2))
        assert max(range(4), key=lambda k: float(torch.cosine_similarity(mean, COLOURS[k], 0))) == colour


def test_reversal_keeps_the_padding_where_it_was() -> None:
    strings, lengths = _strings(torch.Generator().manual_seed(0), 32)
    target = _reversed(strings, lengths)
    assert torch.equal(target == PAD, strings == PAD)
    for s, n, t in zip(strings, lengths, target, strict=True):
        assert t[: int(n)].tolist() == s[: int(n)].flip(0).tolist()


def test_molecules_bonds_go_both_ways_unless_stored_one_way() -> None:
    coef = (torch.zeros(4), torch.zeros(4, 4))
    _, adj, mask, _ = _molecules(torch.Generator().manual_seed(0), 6, coef)
    assert torch.equal(adj, adj.transpose(1, 2))
    assert bool((adj.sum(-1)[mask] >= 1).all())  # every atom is bonded
    _, one_way, _, _ = _molecules(torch.Generator().manual_seed(0), 6, coef, one_way=True)
    assert float(one_way.triu().sum()) == 0.0 or float(one_way.tril(-1).sum()) == 0.0


def test_oblivious_leaves_share_out_each_row() -> None:
    torch.manual_seed(0)
    model = ObliviousEnsemble(5, 3)
    x = torch.randn(4, 8)
    model.init_thresholds(x)
    value = torch.einsum("bf,tdf->btd", x, model.select.softmax(-1))
    right = torch.sigmoid((value - model.threshold) * torch.exp(-model.log_temp))
    taken = right.unsqueeze(2) * model.bits + (1 - right.unsqueeze(2)) * (1 - model.bits)
    assert torch.allclose(taken.prod(-1).sum(-1), torch.ones(4, 5), atol=1e-5)


def test_automaton_starts_from_one_live_cell_and_does_nothing_untrained() -> None:
    model, state = Automaton(16), _seed_state(2)
    assert int(model.alive(state)[0].sum()) == 9  # the seed and its eight neighbours
    assert state.shape[1] == CHANNELS
    assert torch.equal(model(state, torch.ones(2, 1, 16, 16)), state)  # the last layer starts at zero


def test_sketch_classifier_reads_each_drawing_at_its_own_end() -> None:
    seqs, lengths, _ = _drawings(torch.Generator().manual_seed(0), 4)
    assert seqs.shape == (4, POINTS, 3) and bool((lengths >= 8).all())
    torch.manual_seed(0)
    model = SketchGRU(8)
    short = model(seqs[:1, : int(lengths[0])], lengths[:1])
    assert torch.allclose(model(seqs[:1], lengths[:1]), short, atol=1e-5)  # padding after the end is not read


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "oblivious_nadam_depth3"]) == 0
    assert "blind17_oblivious_nadam_depth3" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    name = "blind17_E09_bonds_stored_one_way"
    truth = run._train_one((replace(BY_NAME[name], steps=3), 1, str(tmp_path)))
    assert truth.program == name and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
