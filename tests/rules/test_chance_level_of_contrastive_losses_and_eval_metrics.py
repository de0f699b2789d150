"""Chance level read where a run's data say it: ln B for an in-batch contrastive loss (B the recorded inputs' batch),
an eval accuracy (1/K) or R² (0) that stays there while the training loss falls to nearly nothing, and an
accuracy at chance that does not change by one example while the loss falls (the model evaluated is not trained).

The synthetic MLP stream (`streams.py`: batches of 64 recorded as `input/x`, a last dense layer of 10 outputs),
with shaped losses and metrics; each stuck or leaking run beside the healthy one it must leave alone. Every margin
is wide: no verdict depends on float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from tests.rules.streams import BATCH, StepData, Stream, run
from tests.rules.test_loss_and_run_rules_fire import with_module_classes
from trainguard.rules.loss_not_decreasing import LossNotDecreasing
from trainguard.rules.metric_against_loss import MetricAgainstLoss
from trainguard.rules.overfit import Overfit
from trainguard.rules.step_view import StepView

LN_B = math.log(BATCH)


def contrastive(floor: float) -> Callable[[StepData], None]:
    """An InfoNCE loss from a high first value (a large logit scale) down to `floor`, with batch noise of 0.5%."""

    def fault(d: StepData) -> None:
        d.scalars["loss"] = (floor + 1.5 * math.exp(-d.step / 25)) * (1 + 0.005 * math.sin(d.step * 1.7))
        d.eval_scalars.clear()

    return fault


def views(fault: Callable[[StepData], None], *, inputs: bool = True, steps: int = 300) -> Iterator[StepView]:
    return with_module_classes(v for v in Stream(steps=steps, fault=fault, inputs=inputs) if v.step % 10 == 0)


def test_a_contrastive_loss_that_fell_to_ln_batch_and_stayed_learned_nothing() -> None:
    found = run(LossNotDecreasing(), views(contrastive(LN_B)))
    assert found[0].step == 150 and found[0].tensor == "loss"
    assert (
        "within 2% of ln 64 = 4.16, chance level for an in-batch contrastive loss over 64 pairs"
        in found[0].message
    )
    assert "two separately shuffled loaders" in (found[0].hint or "")


def test_a_contrastive_loss_that_falls_below_ln_batch_is_learning() -> None:
    assert run(LossNotDecreasing(), views(contrastive(0.6 * LN_B))) == []


def test_without_recorded_inputs_the_batch_and_its_chance_level_are_unknown() -> None:
    # 4.16 is 27% below the first loss and far from ln 10: no chance level applies, and 300 steps hold too few blocks
    assert run(LossNotDecreasing(), views(contrastive(LN_B), inputs=False)) == []


def metric_run(
    name: str, metric: Callable[[int], float], train: Callable[[int], float]
) -> Callable[[StepData], None]:
    """A run that records `name` (no eval loss) at its eval points (every 50 steps) and the training loss `train`."""

    def fault(d: StepData) -> None:
        d.scalars["loss"] = train(d.step)
        if d.eval_scalars:
            d.eval_scalars.clear()
            d.eval_scalars[name] = metric(d.step)

    return fault


def copying(step: int) -> float:
    """A training loss that falls from 2.3 to nearly 0 (a language model copying its inputs)."""
    return 2.3 * math.exp(-step / 20) + 1e-3


def test_an_eval_accuracy_at_chance_while_the_training_loss_vanishes_is_a_leak() -> None:
    fault = metric_run("val_accuracy", lambda s: 0.1 + 0.01 * math.sin(s), copying)
    found = run(Overfit(), views(fault, steps=400))
    # the third eval point (step 150): 0.097, 0.095, 0.093, never above the bound 0.1 + 10% of the way to 1 = 0.19
    assert found[0].step == 150 and found[0].tensor == "val_accuracy"
    assert found[0].message.startswith(
        "val_accuracy 0.0929 has never been more than 10% of the way from chance level 1/10 = 0.1 to 1 (best 0.0974 "
        "at 3 eval points, bound 0.19)"
    )
    assert "targets shifted by one" in (found[0].hint or "")


def test_an_eval_accuracy_that_starts_high_or_rises_is_learning() -> None:
    saturated = metric_run("val_acc", lambda s: 1.0, copying)
    rising = metric_run("val_acc", lambda s: min(0.9, 0.02 + s / 400), copying)
    # still within the chance band at the third eval point, but higher there than at the first: a slow start
    creeping = metric_run("val_acc", lambda s: 0.1 + s / 5000, copying)
    assert run(Overfit(), views(saturated, steps=200)) == []
    assert run(Overfit(), views(rising, steps=400)) == []
    assert run(Overfit(), views(creeping, steps=200)) == []


def test_an_eval_r2_at_zero_while_the_training_loss_vanishes_is_memorisation() -> None:
    found = run(Overfit(), views(metric_run("val_r2", lambda s: 0.0, copying), steps=400))
    assert found[0].step == 150 and "chance level 0 (the mean) to 1" in found[0].message


def test_an_eval_r2_that_reads_zero_while_the_loss_falls_slowly_waits() -> None:
    # a slow start: R² clipped at 0 for the first eval points while the training loss is at 40% of its first value
    slow = metric_run("val_r2", lambda s: max(0.0, (s - 150) / 300), lambda s: 1.0 * math.exp(-s / 160))
    assert run(Overfit(), views(slow, steps=400)) == []
    # the deeper fit the metric path asks for is what keeps it quiet: with a bound of 60% it fires
    assert run(Overfit({"flat_metric_train_fraction": 0.6}), views(slow, steps=400))[0].step == 150


def slowly_falling(step: int) -> float:
    """A training loss that falls by a third over 500 steps, under batch noise of 2%."""
    return (1.4 - 0.45 * step / 500) * (1 + 0.02 * math.sin(step * 1.7))


def test_an_accuracy_that_never_changes_at_chance_while_the_loss_falls_is_not_the_trained_model() -> None:
    fault = metric_run("val_teacher_accuracy", lambda s: 0.125, slowly_falling)
    found = run(MetricAgainstLoss(), views(fault, steps=500))
    # eval points every 50 steps: windows of 4 records (50-200, 250-400), confirmed at the next record
    assert found[0].step == 450 and found[0].tensor == "val_teacher_accuracy"
    assert found[0].message.startswith(
        "the eval metric 'val_teacher_accuracy' read exactly 0.125 at all 8 of its records in steps 50-450, "
        "0.0278 of the way from chance level 1/10 = 0.1 to 1"
    )
    assert "rebinds the loop variable" in (found[0].hint or "")


def test_an_accuracy_frozen_after_the_first_steps_short_of_half_way_is_not_the_trained_model() -> None:
    # an EMA built with decay 1.0 keeps the weights of its first update: on an easy task that model already scores
    # well above chance (0.46 for 10 classes: 0.4 of the way to 1), and never changes while the loss falls
    found = run(
        MetricAgainstLoss(), views(metric_run("val_accuracy", lambda s: 0.46, slowly_falling), steps=500)
    )
    assert found[0].step == 450 and "read exactly 0.46 at all 8 of its records" in found[0].message
    # past half-way (0.6 for 10 classes: 0.56 of the way) a still score may be a converged model's: not judged
    assert (
        run(MetricAgainstLoss(), views(metric_run("val_accuracy", lambda s: 0.6, slowly_falling), steps=500))
        == []
    )


def test_an_accuracy_that_stays_put_for_a_few_records_saturated_or_above_chance_is_not_frozen() -> None:
    def slow_teacher(step: int) -> float:
        return 0.125 if step <= 150 else min(0.9, 0.125 + (step - 150) / 400)

    for metric in (slow_teacher, lambda s: 1.0, lambda s: 0.82):
        assert run(MetricAgainstLoss(), views(metric_run("val_acc", metric, slowly_falling), steps=500)) == []
    # an R² clipped at 0 reads 0 however its model changes: not this reading's, but the chance-level reading's
    # (it never left chance while the loss fell)
    r2 = run(MetricAgainstLoss(), views(metric_run("val_r2", lambda s: 0.0, slowly_falling), steps=500))
    assert [f.step for f in r2] == [450] and "read exactly" not in r2[0].message
    assert "at or below 0.1, 0.1 of the way from its chance level 0 to 1" in r2[0].message
    # without the chance band the saturated language model's 0.82 would read as frozen
    wide = MetricAgainstLoss({"frozen_band": 0.9})
    assert run(wide, views(metric_run("val_acc", lambda s: 0.82, slowly_falling), steps=500))[0].step == 450
