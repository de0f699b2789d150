"""The re-implemented detectors of `benchmarks/detection/baselines.py` on hand-made views.

A step's statistics and its loss can reach the evaluator in two segments (a flush between the
hook's two writes), which gives two views of that step: the detectors must read a view without
the loss as saying nothing about it, not as a NaN loss.
"""

from __future__ import annotations

import math

import numpy as np

from benchmarks.detection import baselines
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta

META = (TensorMeta("fc1.weight", "weights", module="fc1", trainable=True),)


def _stats(mean: float) -> np.ndarray:
    row = np.zeros((1, len(COLUMNS)))
    row[0, COL["count"]] = 100
    row[0, COL["mean"]] = mean
    return row


def _views(losses: list[float | None]) -> list[StepView]:
    """One view per step with a moving weight mean; a None loss is a step split in two views."""
    views = []
    for step, loss in enumerate(losses):
        stats = _stats(0.1 + 0.01 * step)
        scalars = {} if loss is None else {"loss": loss}
        views.append(StepView(step, names=("fc1.weight",), meta=META, stats=stats, scalars=scalars))
        if loss is None:
            views.append(StepView(step, scalars={"loss": 1.0}))  # the same step's loss, flushed later
    return views


def test_deeplocalize_reads_a_view_without_the_loss_as_no_news() -> None:
    assert baselines.deeplocalize(_views([1.0, None, 1.0, None, 1.0])) == []


def test_deeplocalize_still_alarms_on_a_non_finite_loss() -> None:
    alarms = baselines.deeplocalize(_views([1.0, None, math.nan, 1.0]))
    assert [(a.step, a.category) for a in alarms] == [(2, "NaN")]
