"""The weights' blow-up is measured between two views also when their tensor sets differ.

Step 0 of a PyTorch run holds the initial-weights record (`init/<name>`) besides the weights, so its
tensor set differs from every later step's; the growth of the weights' norm from step 0 to the next
saved step (Adam at lr 10 triples it in 10 steps) must still be compared, on the weights both views hold.
The initial-weights record itself is one optimizer update before the weights of its view: the first step's
growth is measured from it.
"""

from __future__ import annotations

from dataclasses import replace

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


def _steps(rule: WeightUpdateRatio, losses: list[float], l2: tuple[float, float]) -> list:  # type: ignore[type-arg]
    """Feed a saved view at step 0 (weights at norm l2[0], loss losses[0]), every step's loss in between, and a saved
    view at step len(losses) - 1 (norm l2[1]); return the findings."""
    last = len(losses) - 1
    found = rule.update(replace(_view(0, l2[0], initial=False), scalars={"loss": losses[0]}))
    for t in range(1, last):
        found += rule.update(StepView(step=t, scalars={"loss": losses[t]}, saved=False))
    return found + rule.update(replace(_view(last, l2[1], initial=False), scalars={"loss": losses[last]}))


def test_weights_that_grow_while_every_steps_loss_falls_are_no_blow_up() -> None:
    # full-batch training (a PINN under Rprop): the weights grow 4x in 10 steps while the loss falls at every one of
    # them, 0.038 -> 0.016: no step overshot, so none was too large
    falling = [0.038 * 0.917**t for t in range(11)]
    assert _steps(WeightUpdateRatio(), falling, (2.0, 8.0)) == []
    # the same growth and the same fall over the 10 steps, one step's loss rising on the way: a blow-up
    rising = [*falling[:5], falling[4] * 1.3, *falling[6:]]
    assert [f.step for f in _steps(WeightUpdateRatio(), rising, (2.0, 8.0))] == [10]
    # every step's loss unrecorded (saved steps only): nothing tells the steps were not too large
    saved_only = WeightUpdateRatio()
    found = saved_only.update(replace(_view(0, 2.0, initial=False), scalars={"loss": falling[0]}))
    assert found == [] and [
        f.step
        for f in saved_only.update(replace(_view(10, 8.0, initial=False), scalars={"loss": falling[10]}))
    ] == [10]


def _two_windows(window: list[float]) -> list:  # type: ignore[type-arg]
    """Saved views at steps 0 (weights at norm 2), 10 (2.2) and 20 (5.5: 2.5x in 10 steps); every step's loss in
    between, minibatch noise around 0.5 for steps 1-10 (the median change of log(loss) from step to step 0.095),
    then `window` for steps 11-20; return the findings."""
    before = [0.50, 0.55, 0.47, 0.53, 0.49, 0.56, 0.48, 0.52, 0.50, 0.54]
    rule, found = WeightUpdateRatio(), []
    for step, loss in enumerate([0.52, *before, *window]):
        if step % 10:
            found += rule.update(StepView(step=step, scalars={"loss": loss}, saved=False))
        else:
            l2 = {0: 2.0, 10: 2.2, 20: 5.5}[step]
            found += rule.update(replace(_view(step, l2, initial=False), scalars={"loss": loss}))
    return found


def test_a_growth_the_loss_does_not_see_beyond_its_noise_is_no_blow_up() -> None:
    # a noisy loss on its plateau, every step's within its noise (the highest climb 0.04 in log, under 2 x 0.095),
    # while the weights' norm grows 2.5x in 10 steps (Rprop growing one entry the loss does not depend on)
    held = [0.50, 0.49, 0.51, 0.50, 0.49, 0.50, 0.51, 0.49, 0.50, 0.50]
    assert _two_windows(held) == []
    # the same growth while the loss climbs back for five steps, 0.38 -> 0.70 (0.61 in log, 6x its noise): the steps
    # overshoot, a blow-up
    overshoot = [0.48, 0.45, 0.42, 0.40, 0.38, 0.40, 0.45, 0.52, 0.60, 0.70]
    assert [f.step for f in _two_windows(overshoot)] == [20]
    # a jump above the previous window's level at the first step after the view is a climb as well
    jumped = [0.80, 0.79, 0.81, 0.80, 0.79, 0.80, 0.81, 0.79, 0.80, 0.80]
    assert [f.step for f in _two_windows(jumped)] == [20]
