"""The twelfth blind split of the detection benchmark (`benchmarks/detection/blind12/`) is trained by the runner
with its own scripts, its CRF tagger decodes the best tag path, and its interatomic potential keeps its forces finite
only with the identity under the distances' square root (its declarations, a run through the hook, the oracle's
labels: `test_blind_splits.py`).

No rule is built or run here: the split stays unscored until the end of the rule work.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from benchmarks.detection import run
from benchmarks.detection.blind12 import smoke, suite
from benchmarks.detection.blind12.language import LONGEST, TAGS, CRFTagger
from benchmarks.detection.blind12.science import LATTICE, PairPotential

BY_NAME = {p.name: p for p in suite.catalogue()}


def test_viterbi_finds_the_path_a_brute_force_search_finds() -> None:
    torch.manual_seed(0)
    model = CRFTagger(8, 16)
    with torch.no_grad():
        for p in (model.start, model.end, model.trans):
            p.normal_()
    words, length = torch.randint(1, 40, (1, LONGEST)), 4
    with torch.no_grad():
        emit = model.emissions(words)[0]
        decoded = model.viterbi(words, torch.tensor([length]))[0, :length]

    def score(path: tuple[int, ...]) -> float:
        total = model.start[path[0]] + emit[0, path[0]] + model.end[path[-1]]
        for i in range(1, length):
            total = total + model.trans[path[i - 1], path[i]] + emit[i, path[i]]
        return float(total.detach())

    best = max(itertools.product(range(TAGS), repeat=length), key=score)
    assert tuple(decoded.tolist()) == best


@pytest.mark.parametrize("bug", [None, "self_distance_under_sqrt"])
def test_forces_stay_finite_only_with_the_identity_under_the_square_root(bug: str | None) -> None:
    torch.manual_seed(0)
    model = PairPotential(16)
    pos = (LATTICE + 0.1 * torch.randn(3, *LATTICE.shape)).requires_grad_()
    (grad,) = torch.autograd.grad(model(pos, bug=bug).sum(), pos)
    assert bool(torch.isfinite(grad).all()) == (bug is None)


def test_smoke_runner_and_benchmark_runner_train_this_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert smoke.main(["--steps", "3", "--programs", "tarnet_effects_adam"]) == 0
    assert "blind12_tarnet_effects_adam" in capsys.readouterr().out
    # the split's programs subclass the first split's: the runner must hand them to this split's scripts
    truth = run._train_one(
        (replace(BY_NAME["blind12_K16_claim_free_rows_dropped"], steps=3), 1, str(tmp_path))
    )
    assert truth.program == "blind12_K16_claim_free_rows_dropped" and len(truth.losses) == 3
    assert all(math.isfinite(x) for x in truth.losses)
