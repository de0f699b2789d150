"""`loss_not_decreasing` names a schedule that stopped a model while it still learned.

A plateau scheduler whose mode does not match what it is stepped on (mode 'max' on a loss) cuts the rate at every
check while the loss falls; the model then sits on a plateau of its own making, below the level a converged run
reaches, and the loss alone looks converged. The synthetic MLP stream (`streams.py`) with the loss of every step
(format 2.4) and the rate recorded at saved steps, every 10th; the noise is a fixed pattern (sines of incommensurate
periods) and every margin is wide: no verdict depends on float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from tests.rules.streams import StepData, Stream, run
from trainguard.rules.loss_not_decreasing import LossNotDecreasing
from trainguard.rules.step_view import StepView

PEAK = 0.003


def noise(step: int) -> float:
    """A fixed zero-mean pattern of unit scale (standard deviation about 0.7)."""
    return math.sin(step * 1.7) + 0.5 * math.sin(step * 0.37 + 1.0)


def halved_every_30_from(start: int) -> Callable[[int], float]:
    """ReduceLROnPlateau(factor=0.5, patience=2) checked every 10 steps on a quantity that never improves: the rate
    halved at `start` and every 30 steps after it (below 1% of the peak from the seventh cut, `start` + 180)."""

    def lr(step: int) -> float:
        return PEAK * 0.5 ** (0 if step < start else (step - start) // 30 + 1)

    return lr


def falls_then_sits(settle: float) -> Callable[[int], float]:
    """A loss that falls from 3 towards 1 with time constant `settle`, under 2% batch noise."""
    return lambda step: (1.0 + 2.0 * math.exp(-step / settle)) * (1 + 0.02 * noise(step))


def schedule(
    lr: Callable[[int], float], loss: Callable[[int], float], steps: int = 400
) -> Iterator[StepView]:
    """The stream saved every 10th step, with the loss of every step and the rate at saved steps."""

    def fault(d: StepData) -> None:
        d.scalars["loss"] = loss(d.step)
        d.scalars["lr"] = lr(d.step)
        d.eval_scalars.clear()

    for v in Stream(steps=steps, fault=fault):
        if v.step % 10 == 0:
            yield v
        else:
            yield StepView(step=v.step, scalars={"loss": v.scalars["loss"]}, saved=False)


def test_a_plateau_scheduler_that_cuts_while_the_loss_falls_stopped_the_training() -> None:
    # cut first at step 40, while the loss still falls (2.15 -> 1.3 over the halves of the 50 steps before), below 1%
    # of the peak from step 220, held there a quarter of the 220 steps before (55): reported at the saved step 280
    found = run(LossNotDecreasing(), schedule(halved_every_30_from(40), falls_then_sits(15.0)))
    assert len(found) == 1 and found[0].step == 280 and found[0].tensor == "lr"
    assert "below 0.01 of its peak 0.003 since step 220" in found[0].message
    assert "first lowered at step 40" in found[0].message
    assert "the schedule has stopped the training" in found[0].message
    assert "ReduceLROnPlateau" in found[0].hint


def test_the_same_cuts_on_a_plateau_the_loss_reached_first_are_convergence() -> None:
    # the loss settled by step 40; the scheduler cuts from step 100 on, as it should on a plateau: the rate is below
    # 1% of its peak from step 280 to the end, but the loss did not fall in the 50 steps before the first cut
    assert run(LossNotDecreasing(), schedule(halved_every_30_from(100), falls_then_sits(5.0))) == []


def test_cuts_as_a_converging_loss_levels_off_are_convergence() -> None:
    # the same cuts from step 100 on a loss still creeping down (time constant 30): 1.26 -> 1.11 over the halves of
    # the 50 steps before the first cut, well beyond the noise, but 17% of its fall from the first window's 1.99;
    # a plateau scheduler watching a held-out score that stopped improving cuts there, and it is convergence
    lr, loss = halved_every_30_from(100), falls_then_sits(30.0)
    assert run(LossNotDecreasing(), schedule(lr, loss)) == []
    # read with a share below that, the same run is reported: the share is what holds it back
    found = run(LossNotDecreasing({"stopped_fall_share": 0.1}), schedule(lr, loss))
    assert len(found) == 1 and found[0].tensor == "lr" and "first lowered at step 100" in found[0].message


def test_a_model_still_learning_under_a_low_rate_is_not_stopped() -> None:
    # a second stage at 0.5% of the first stage's rate (a backbone unfrozen at step 100) whose loss keeps falling
    def two_stages(step: int) -> float:
        return PEAK if step < 100 else 0.005 * PEAK

    def falling(step: int) -> float:
        return 3.0 * (1 - 0.0015 * step) * (1 + 0.01 * noise(step))

    assert run(LossNotDecreasing(), schedule(two_stages, falling)) == []


def test_a_schedule_that_reaches_one_percent_at_its_end_is_not_judged_early() -> None:
    # a cosine annealed over the 400 steps spends its last 4% below 1% of its peak: far less than a quarter
    def cosine(step: int) -> float:
        return PEAK * 0.5 * (1 + math.cos(math.pi * step / 400))

    assert run(LossNotDecreasing(), schedule(cosine, falls_then_sits(30.0))) == []
    # the same held at 0 for another 200 steps after it ended (below 1% from the saved step 380): the schedule
    # stopped the training, and the steps since are spent on nothing
    ended = run(
        LossNotDecreasing(), schedule(lambda s: cosine(min(s, 400)), falls_then_sits(30.0), steps=600)
    )
    assert len(ended) == 1 and ended[0].tensor == "lr" and ended[0].step == 480


def test_the_reading_is_off_without_its_fraction() -> None:
    rule = LossNotDecreasing({"stopped_lr_fraction": None})
    assert run(rule, schedule(halved_every_30_from(40), falls_then_sits(15.0))) == []
