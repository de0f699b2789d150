"""`overtraining` reads a held-out error where the run records no eval loss: 1 - R^2, or an error metric.

The synthetic MLP stream (`streams.py`, an eval point every 50 steps, its training loss falling throughout) with its
eval loss replaced by a held-out R^2 or MAE: one that peaks and then falls back (the model fits what the held-out
data does not share), and beside it the shapes that must stay quiet: the same swings with no trend, a fall while the
training loss rises too, and a run that records its eval loss. The swings are a fixed pattern (sines of
incommensurate periods), and every margin is wide: no verdict depends on float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from tests.rules.streams import StepData, Stream, run
from trainguard.rules.overtraining import Overtraining
from trainguard.rules.step_view import StepView


def swing(step: int) -> float:
    """A fixed zero-mean pattern of unit scale over the eval points (one every 50 steps), with no period of 3."""
    k = step / 50
    return math.sin(k) + 0.6 * math.sin(2.7 * k + 0.5)


def peaked(step: int) -> float:
    """A held-out R^2 that rises to 0.7 by step 250, then falls back to 0.45 by step 800, swinging by +-0.015."""
    trend = 0.7 * min(step, 250) / 250 - 0.25 * max(step - 250, 0) / 550
    return trend + 0.015 * swing(step)


def views(fault: Callable[[StepData], None], steps: int = 800) -> Iterator[StepView]:
    return (v for v in Stream(steps=steps, fault=fault) if v.step % 10 == 0)


def held_out(
    name: str, val: Callable[[int], float], *, keep_loss: bool = False
) -> Callable[[StepData], None]:
    """A fault that records `name` = val(step) at each eval point, without the eval loss unless `keep_loss`."""

    def fault(d: StepData) -> None:
        if d.eval_scalars:
            if not keep_loss:
                d.eval_scalars.clear()
            d.eval_scalars[name] = val(d.step)

    return fault


def test_a_held_out_r2_that_fell_back_while_the_loss_fell_is_overtraining() -> None:
    found = run(Overtraining(), views(held_out("val_r2", peaked)))
    assert found and found[0].tensor == "val_r2"
    assert "held-out error 1 - 'val_r2'" in found[
        0
    ].message and "standard errors of its eval-to-eval noise" in (found[0].message)
    assert 550 <= found[0].step <= 650  # 37% above the best window, 4.2 standard errors


def test_a_held_out_error_metric_is_read_as_it_is() -> None:
    found = run(Overtraining(), views(held_out("val_mae", lambda s: 1.0 - peaked(s))))
    assert found and "held-out error 'val_mae'" in found[0].message


def test_swings_without_a_trend_are_not_overtraining() -> None:
    # swings of +-0.13 around 0.7 after the rise: a window of 3 eval points lies 25% above the best one, about one
    # standard error of the swings; only a rule that ignores the noise calls that a rise
    flat = lambda s: 0.7 * min(s, 250) / 250 + 0.08 * swing(s)
    assert run(Overtraining(), views(held_out("val_r2", flat))) == []
    assert run(Overtraining({"error_significance": 0.0}), views(held_out("val_r2", flat)))


def test_a_held_out_score_that_fell_while_the_training_loss_rose_is_not_overtraining() -> None:
    # training and held-out data both getting worse is no parting of the ways (diverging_loss's business)
    def fault(d: StepData) -> None:
        d.scalars["loss"] = 0.3 + 0.001 * d.step
        held_out("val_r2", peaked)(d)

    assert run(Overtraining(), views(fault)) == []


def test_an_eval_loss_outranks_the_held_out_error() -> None:
    # the stream's eval loss falls throughout: its paths judge the run, and the R^2 beside it is not read
    assert run(Overtraining(), views(held_out("val_r2", peaked, keep_loss=True))) == []


def test_the_path_survives_a_restart_of_the_evaluator() -> None:
    whole = run(Overtraining(), views(held_out("val_r2", peaked)))
    first, rest = Overtraining(), Overtraining()
    stream = list(views(held_out("val_r2", peaked)))
    run(first, iter(stream[:40]))
    rest.set_state(first.get_state())
    resumed = run(rest, iter(stream[40:]))
    assert [f.step for f in resumed][:1] == [f.step for f in whole][:1]
