"""The weights' blow-up is measured between two views also when their tensor sets differ.

Step 0 of a PyTorch run holds the initial-weights record (`init/<name>`) besides the weights, so its
tensor set differs from every later step's; the growth of the weights' norm from step 0 to the next
saved step (Adam at lr 10 triples it in 10 steps) must still be compared, on the weights both views hold.
The initial-weights record itself is one optimizer update before the weights of its view: the first step's
growth is measured from it.
"""

from __future__ import annotations

import numpy as np
import pytest

from trainguard.rules.step_view import COL, COLUMNS, INITIAL_COLLECTION, INITIAL_PREFIX, StepView, TensorMeta
from trainguard.rules.weight_update_ratio import WeightUpdateRatio

WEIGHTS = ("fc0.weight", "fc1.weight")


def _view(step: int, l2: float, *, initial: bool) -> StepView:
    """A view of both weights at norm `l2` each; with `initial`, their initial-weights record first (norm 1)."""
    names = tuple(INITIAL_PREFIX + n for n in WEIGHTS) * initial + WEIGHTS
    meta = tuple(
        TensorMeta(name=n, collection=INITIAL_COLLECTION if n.startswith(INITIAL_PREFIX) else "weights",
                   trainable=True, shape=(8, 8))
        for n in names
    )  # fmt: skip
    stats = np.zeros((len(names), len(COLUMNS)))
    stats[:, COL["count"]] = 64
    stats[:, COL["l2"]] = [1.0 if n.startswith(INITIAL_PREFIX) else l2 for n in names]
    return StepView(step=step, names=names, meta=meta, stats=stats)


def test_the_norm_growth_from_a_view_with_the_initial_record_is_measured() -> None:
    rule = WeightUpdateRatio()
    assert rule.update(_view(0, 1.5, initial=True)) == []  # 1.5x its initial record in one step: below 2x
    found = rule.update(_view(10, 5.25, initial=False))
    assert [(f.step, f.tensor) for f in found] == [(10, "fc0.weight")]
    assert found[0].value == pytest.approx(3.5)


def test_a_first_update_that_multiplies_the_initial_weights_is_a_blow_up_at_once() -> None:
    """Gradients left multiplied by a loss scale of 1024 (SGD at lr 0.05) take the weights to 2.1-3.4x their
    initial norm in the first step; healthy runs of the detection suites at most 1.52x."""
    found = WeightUpdateRatio().update(_view(0, 3.0, initial=True))
    assert [(f.step, f.tensor) for f in found] == [(0, "fc0.weight")]
    assert found[0].value == pytest.approx(3.0) and "grew 3x in 1 step at step 0" in found[0].message


def test_without_the_initial_record_the_first_view_only_sets_the_norm() -> None:
    assert WeightUpdateRatio().update(_view(0, 3.0, initial=False)) == []


def test_views_of_other_weights_are_not_compared() -> None:
    rule = WeightUpdateRatio()
    assert rule.update(_view(0, 2.0, initial=False)) == []
    other = _view(10, 7.0, initial=False)
    renamed = StepView(
        step=10,
        names=("fc2.weight", "fc3.weight"),
        meta=tuple(
            TensorMeta(name=n, collection="weights", trainable=True) for n in ("fc2.weight", "fc3.weight")
        ),
        stats=other.stats,
    )
    assert rule.update(renamed) == []
