"""`overfit`'s worse-from-the-start path: a held-out metric that has only got worse since its first records.

Synthetic runs of 300 steps (`test_metric_against_loss.views`): the loss at every step, a held-out metric every 25
steps. A metric that slips a little at every record from its first on, beside a training loss that does not rise, is
named once; a metric that rose before it slipped (overfitting late), a slip within the bound, pure noise, and a
training loss that rises are not this path's."""

from __future__ import annotations

import numpy as np
import pytest

from tests.rules.streams import run
from tests.rules.test_metric_against_loss import STEPS, falling, views
from tests.rules.test_rule_state_round_trip import _round_trip_views
from trainguard.rules.overfit import Overfit
from trainguard.rules.step_view import StepView


def slipping(start: float, total: float, noise: float = 0.004):  # type: ignore[no-untyped-def]
    """A metric that loses `total` (a share of `start`) evenly over the run, with record noise."""
    return lambda t, r: start * (1 - total * t / STEPS) + float(r.normal(0, noise))


def _from_start(found: list) -> list:  # type: ignore[type-arg]
    return [f for f in found if "since its first evaluations" in f.message]


def test_an_r2_that_slips_from_its_first_record_on_is_named_once() -> None:
    found = run(Overfit(), views(slipping(0.6, 0.12), name="val_r2"))
    assert len(found) == 1
    f = found[0]
    assert f.rule == "overfit" and f.tensor == "val_r2"
    assert "'val_r2', which by its name should rise, went from" in f.message
    assert "never better since than its first window's best" in f.message
    # the two windows of 4 records (steps 25-100, then 4 after them) are apart at step 200; confirmed at 225
    assert f.step >= 225
    assert f.value is not None and f.threshold is not None and f.value < f.threshold


def test_an_error_that_rises_from_its_first_record_on_is_named() -> None:
    found = run(Overfit(), views(slipping(0.3, -0.15), name="val_mae"))
    assert len(_from_start(found)) == 1 and "should fall" in found[0].message


def test_a_metric_that_rose_before_it_slipped_is_not_worse_from_the_start() -> None:
    def late(
        t: int, r: np.random.Generator
    ) -> float:  # flat at its first records, up to 0.7, then down to 0.5
        level = 0.6 if t <= 100 else 0.7 if t <= 150 else 0.5
        return level + float(r.normal(0, 0.004))

    assert _from_start(run(Overfit(), views(late, name="val_acc"))) == []


@pytest.mark.parametrize(
    ("label", "metric", "loss"),
    [
        ("a slip of 3%, below the 5% bound", slipping(0.6, 0.04), falling),
        ("pure noise around a flat level", lambda t, r: 0.6 + float(r.normal(0, 0.05)), falling),
        (
            "the training loss rises too (the model does not fit)",
            slipping(0.6, 0.12),
            lambda t, r: 0.5 + t / 300,
        ),
    ],
)
def test_left_alone(label: str, metric, loss) -> None:  # type: ignore[no-untyped-def]
    for seed in range(5):
        assert _from_start(run(Overfit(), views(metric, name="val_r2", loss=loss, seed=seed))) == [], label


def test_off_when_start_worsening_is_none() -> None:
    assert run(Overfit({"start_worsening": None}), views(slipping(0.6, 0.12), name="val_r2")) == []


def test_a_held_out_metric_alone_makes_the_rule_checked() -> None:
    rule = Overfit()
    rule.update(StepView(step=1, scalars={"loss": 0.5}, eval_scalars={"val_mae": 0.3}))
    assert rule.checked


def test_the_path_resumes_from_its_state() -> None:
    _round_trip_views("overfit", {}, views(slipping(0.6, 0.12), name="val_r2"))
