"""`loss_not_decreasing` calls a run stuck on evidence, not on a curve that happens to sit still.

The synthetic MLP stream (`streams.py`), saved every 10th step, with losses shaped like those of
healthy runs that the rule once reported: a noisy loss that falls slowly while the eval loss falls,
a loss that fell and came back up, an objective that rises by design after it fell, a policy loss
around zero (the rule before it weighed evidence reported them at steps 150, 150, 590 and 160);
beside each, the stuck run it must still name. The noise is a fixed pattern (sines of
incommensurate periods), and every margin is wide: no verdict depends on float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest

from tests.rules.streams import StepData, Stream, run
from trainguard.rules import metric_progress
from trainguard.rules.loss_not_decreasing import LossNotDecreasing
from trainguard.rules.step_view import StepView


def noise(step: int) -> float:
    """A fixed zero-mean pattern of unit scale (standard deviation about 0.7) seen at every 10th step."""
    return math.sin(step * 1.7) + 0.5 * math.sin(step * 0.37 + 1.0)


def views(fault: Callable[[StepData], None], steps: int = 400) -> Iterator[StepView]:
    return (v for v in Stream(steps=steps, fault=fault) if v.step % 10 == 0)


def shaped(train: Callable[[int], float], val: Callable[[int], float] | None) -> Callable[[StepData], None]:
    """A fault that sets the training loss to train(step) and the eval loss to val(step) (none when val is None)."""

    def fault(d: StepData) -> None:
        d.scalars["loss"] = train(d.step)
        if val is None:
            d.eval_scalars.clear()
        elif d.eval_scalars:
            d.eval_scalars["loss"] = val(d.step)

    return fault


def slow_and_noisy(step: int) -> float:
    """Dropout 0.5 on batches of 8: 0.5% lower per 100 steps, under batch noise of +-6%."""
    return 3.0 * (1 - 0.00005 * step) * (1 + 0.06 * noise(step))


def test_a_noisy_loss_whose_eval_loss_falls_is_not_stuck() -> None:
    # at step 150 the last window is still within 2% of the first window's mean (2.94 against 2.98), but the
    # windows' standard error (about 0.1) is far above 2% of 3, and the eval loss has fallen 4.5% by then
    assert run(LossNotDecreasing(), views(shaped(slow_and_noisy, lambda s: 3.0 * (1 - 0.0003 * s)))) == []


def test_the_same_noise_over_a_flat_eval_loss_is_stuck() -> None:
    found = run(LossNotDecreasing(), views(shaped(slow_and_noisy, lambda s: 3.1)))
    assert found[0].step == 150 and found[0].tensor == "loss"
    assert (
        "cannot tell that alone, and the eval loss 3.1 is not 1% below its best earlier eval point 3.1"
        in found[0].message
    )


def test_a_flat_loss_is_stuck_on_the_training_loss_alone_when_the_noise_is_small() -> None:
    # batch noise of +-0.5%: the window sits 2% above the bound, many standard errors; no eval loss is needed
    found = run(LossNotDecreasing(), views(shaped(lambda s: 2.3 * (1 + 0.005 * noise(s)), None)))
    assert found[0].step == 150
    assert (
        "within 2% of its first value" in found[0].message
        and "standard errors of the batch noise" in found[0].message
    )


def test_a_noisy_loss_without_an_eval_loss_waits_for_the_blocks() -> None:
    # too noisy to tell, and nothing else says it is stuck: no verdict before the blocks (4 of 100 steps)
    found = run(LossNotDecreasing(), views(shaped(lambda s: 3.0 * (1 + 0.08 * noise(s)), None), steps=700))
    assert [f.step for f in found][:1] == [490] and "4 blocks in a row" in found[0].message


def held_out_error(name: str, val: Callable[[int], float]) -> Callable[[StepData], None]:
    """The noisy, slowly falling training loss with a held-out error metric `name` = val(step) and no eval loss."""

    def fault(d: StepData) -> None:
        d.scalars["loss"] = slow_and_noisy(d.step)
        if d.eval_scalars:
            d.eval_scalars.clear()
            d.eval_scalars[name] = val(d.step)

    return fault


def test_a_held_out_error_stands_in_for_an_eval_loss_the_run_does_not_record() -> None:
    # a prediction broadcast against its target: a Huber loss too noisy to tell, and the held-out MAE flat
    found = run(LossNotDecreasing(), views(held_out_error("val_mae", lambda s: 0.62)))
    assert found[0].step == 150 and (
        "cannot tell that alone, and the held-out error 'val_mae' 0.62 is not 1% below its best earlier eval point 0.62"
        in found[0].message
    )
    # the same loss beside a held-out error that falls 4.5% by step 150 is a slow learner
    assert (
        run(LossNotDecreasing(), views(held_out_error("val_rmse", lambda s: 0.62 * (1 - 0.0003 * s)))) == []
    )
    # a metric whose name does not say lower is better stands in for nothing
    assert (
        run(
            LossNotDecreasing(),
            views(held_out_error("val_spread", lambda s: 0.62)),
        )
        == []
    )


def test_without_an_error_metric_a_held_out_r2_stands_in_as_one_minus_r2() -> None:
    # a head whose outputs are 1000x too small: the loss too noisy to tell, the held-out R^2 creeping 0.01 -> 0.02
    # (1 - R^2 from 0.99 to 0.98: 0.1-0.3% between records, not 1% below the best before)
    found = run(LossNotDecreasing(), views(held_out_error("val_r2", lambda s: 0.01 + 0.00004 * s)))
    assert found[0].step == 150 and (
        "cannot tell that alone, and the held-out error 1 - 'val_r2' 0.984 is not 1% below its best earlier eval "
        "point 0.986" in found[0].message
    )
    # a slow learner's R^2, 0.05 -> 0.14 by step 150 (1 - R^2 falls 2.7% between records), is learning
    assert run(LossNotDecreasing(), views(held_out_error("val_r2", lambda s: 0.05 + 0.0006 * s))) == []
    # an error metric outranks it where the run records both: the flat R^2 beside a falling MAE is not stuck
    flat = held_out_error("val_r2", lambda s: 0.01)

    def both(d: StepData) -> None:
        flat(d)
        if d.eval_scalars:
            d.eval_scalars["val_mae"] = 0.62 * (1 - 0.0003 * d.step)

    assert run(LossNotDecreasing(), views(flat))[0].step == 150
    assert run(LossNotDecreasing(), views(both)) == []


@pytest.mark.parametrize(
    ("names", "stand_in"),
    [(("val_r2", "val_mae"), "val_mae"), (("val_r_squared",), "val_r_squared"), (("explained_variance",), "explained_variance"),
     (("val_r2_loss",), None), (("val_accuracy", "val_auc"), None)],
)  # fmt: skip
def test_which_held_out_scalar_stands_in_for_the_eval_loss(
    names: tuple[str, ...], stand_in: str | None
) -> None:
    # an error metric first; else an R^2 by any of its spellings, read as 1 - R^2; a loss-named R^2 or a share: none
    assert metric_progress.held_out_error(dict.fromkeys(names, 0.5)) == stand_in


def test_a_loss_that_fell_clearly_and_came_back_is_not_stuck_from_the_start() -> None:
    def fell_and_rose(step: int) -> float:
        """2.3 -> 1.9 by step 60, back up to 2.28 by step 150 (a regulariser's weight ramped up)."""
        level = 2.3 - 0.4 * min(step, 60) / 60 + 0.38 * min(max(step - 60, 0), 90) / 90
        return level * (1 + 0.01 * noise(step))

    assert run(LossNotDecreasing(), views(shaped(fell_and_rose, lambda s: 2.4))) == []
    # a window 50-99 clearly below the first one marks it learned; at 2.28 from the start it is stuck
    found = run(LossNotDecreasing(), views(shaped(lambda s: 2.28 * (1 + 0.01 * noise(s)), lambda s: 2.4)))
    assert found[0].step == 150


def test_a_loss_leaving_its_plateau_at_the_decision_is_a_slow_start_not_stuck() -> None:
    def slow_start(step: int) -> float:
        """At chance level until step 120, then falling 0.06% of it a step (a CNN under momentum SGD that breaks
        its symmetry late): at step 150 the last window's second half is 1.2% below its first, many standard errors
        of a 0.2% batch noise, while the window is still within 2% of the first value."""
        return 2.3 * (1 - 0.0006 * max(step - 120, 0)) * (1 + 0.002 * noise(step))

    every_step = Stream(
        steps=400, fault=shaped(slow_start, None)
    )  # its loss recorded at every step, as runs do
    assert run(LossNotDecreasing(), every_step) == []
    without_waiting = LossNotDecreasing({"leaving_significance": None})
    assert [f.step for f in run(without_waiting, Stream(steps=400, fault=shaped(slow_start, None)))] == [150]

    def drifting(step: int) -> float:
        """A rate too low: 0.2% lower per 50 steps under a batch noise of 0.5%, never leaving the band."""
        return 2.3 * (1 - 0.00004 * step) * (1 + 0.005 * noise(step))

    found = run(LossNotDecreasing(), Stream(steps=400, fault=shaped(drifting, None)))
    assert found[0].step == 150 and "within 2% of its first value" in found[0].message


def annealed(step: int, *, rise: bool) -> float:
    """A VAE's loss: 30 -> 25 over 80 steps, then (`rise`) up to 27.5 by step 400 as the KL weight grows."""
    level = 30 - 5 * min(step, 80) / 80 + (2.5 * min(max(step - 80, 0), 320) / 320 if rise else 0.0)
    return level * (1 + 0.01 * noise(step))


def test_an_objective_that_rises_by_design_after_it_fell_is_not_a_plateau() -> None:
    assert run(LossNotDecreasing(), views(shaped(lambda s: annealed(s, rise=True), None), steps=800)) == []
    # the same fall followed by a flat plateau 17% below the start (not a fifth) is still one, as before
    found = run(LossNotDecreasing(), views(shaped(lambda s: annealed(s, rise=False), None), steps=800))
    assert found[0].step == 590 and "4 blocks in a row" in found[0].message


def test_a_loss_below_zero_has_no_scale_for_percent_changes() -> None:
    # a policy-gradient loss wanders around 0: "within 2% of its first value" means nothing for it
    policy = shaped(lambda s: 0.04 * noise(s) - 0.01, None)
    assert run(LossNotDecreasing(), views(policy, steps=800)) == []


def with_metric(
    train: Callable[[int], float], metric: Callable[[int], float] | None, name: str = "val_accuracy"
) -> Callable[[StepData], None]:
    """A fault that sets the training loss to train(step) and records an eval metric `name` = metric(step) every 25
    steps (no eval loss; none at all when metric is None)."""

    def fault(d: StepData) -> None:
        d.scalars["loss"] = train(d.step)
        d.eval_scalars.clear()
        if metric is not None and d.step and d.step % 25 == 0:
            d.eval_scalars[name] = metric(d.step)

    return fault


def self_distillation(step: int) -> float:
    """A DINO loss under a slow teacher: 3.7 at step 0 (teacher and student one network), 4.2 by step 10 as the
    target moves, then down 0.0025 a step: 3.85 at step 150, above its first value, well below its first window."""
    level = 3.7 + 0.5 * min(step, 10) / 10 - 0.0025 * max(step - 10, 0)
    return level * (1 + 0.01 * noise(step))


def features_improve(step: int) -> float:
    """The run's nearest-centroid accuracy: 0.46 -> 0.64 by step 150 (recorded every 50th step of the saved views)."""
    return 0.46 + 0.0012 * step


def test_a_loss_above_its_first_value_while_the_runs_metric_improves_is_not_stuck() -> None:
    assert run(LossNotDecreasing(), views(with_metric(self_distillation, features_improve), steps=300)) == []
    # without the metric the same loss is one that rose from the start
    found = run(LossNotDecreasing(), views(with_metric(self_distillation, None), steps=300))
    assert found[0].step == 150 and "the loss rose instead of falling" in found[0].message
    # a metric that swings between records (label-sorted batches) is no evidence: 0.17 -> 0.40, 28% of the way to
    # 1, through 0.5 (the saved views hold the records of steps 50, 100 and 150)
    swings = {50: 0.17, 100: 0.5, 150: 0.4}
    found = run(
        LossNotDecreasing(), views(with_metric(self_distillation, lambda s: swings.get(s, 0.3)), steps=160)
    )
    assert found[0].step == 150


def test_an_improving_metric_outweighs_a_loss_at_its_first_level_only_away_from_chance() -> None:
    # flat at its first window's level with no chance level known (a Tweedie deviance, mostly irreducible noise):
    # the held-out metric climbing a third of the way to 1 says the model learns
    flat = with_metric(lambda s: 3.7 * (1 + 0.01 * noise(s)), features_improve)
    assert run(LossNotDecreasing(), views(flat)) == []
    # without the metric the same loss is stuck at its first window's level
    found = run(LossNotDecreasing(), views(with_metric(lambda s: 3.7 * (1 + 0.01 * noise(s)), None)))
    assert found[0].step == 150 and "is still within 2% of its first value" in found[0].message

    # at ln 64, chance level of an in-batch loss over the 64 inputs (a teacher hotter than its student: uniform)
    def collapsed(step: int) -> float:
        return (4.7 - 0.54 * min(step, 60) / 60) * (1 + 0.002 * noise(step))

    chance = (
        v
        for v in Stream(steps=400, fault=with_metric(collapsed, features_improve), inputs=True)
        if v.step % 10 == 0
    )
    found = run(LossNotDecreasing(), chance)
    assert (
        found[0].step == 150
        and "chance level for an in-batch contrastive loss over 64 pairs" in found[0].message
    )
    assert (
        "val_accuracy moved from 0.52 to 0.64, which does not outweigh a loss at this level"
        in found[0].message
    )


def vq_vae(step: int) -> float:
    """A VQ-VAE's total loss (reconstruction + codebook + commitment terms): flat at 0.65 for 25 steps, up to 2.0 by
    step 75 as the encoder's outputs spread and the codebook terms grow, then down 0.01 a step: 1.53 over steps
    100-150, twice its first window's mean (0.82)."""
    level = 0.65 + 1.35 * min(max(step - 25, 0), 50) / 50 - 0.01 * max(step - 75, 0)
    return level * (1 + 0.02 * noise(step))


def reconstruction_r2(step: int) -> float:
    """The run's held-out R^2 of the reconstruction: 0.2, 0.35, 0.5 at steps 50, 100, 150."""
    return 0.05 + 0.003 * step


def test_a_loss_that_rose_far_above_its_first_window_while_its_r2_rises_has_learned() -> None:
    assert run(LossNotDecreasing(), views(with_metric(vq_vae, reconstruction_r2, "val_r2"), steps=200)) == []
    # without the metric the same loss rose from the start, and the finding says so (not "within 2%")
    found = run(LossNotDecreasing(), views(with_metric(vq_vae, None), steps=200))
    assert found[0].step == 150 and "the loss rose instead of falling" in found[0].message
    assert "within 2%" not in found[0].message


def test_a_loss_that_rose_above_its_first_window_is_not_called_within_2_percent_of_it() -> None:
    # one outlier batch at step 0 (1.6) puts the first value above the rest: the window 100-150 (1.5) is below it,
    # and 1.34x the first window's mean (1.12: the outlier and 1.0 at steps 10-40); the finding quotes that, not
    # "still within 2%"
    def outlier_then_rise(step: int) -> float:
        return 1.6 if step == 0 else (1.0 + 0.5 * min(max(step - 50, 0), 50) / 50) * (1 + 0.005 * noise(step))

    found = run(LossNotDecreasing(), views(with_metric(outlier_then_rise, None), steps=200))
    assert found[0].step == 150 and "the loss rose instead of falling" in found[0].message
    assert "x its mean over the first 50 steps" in found[0].message and "within 2%" not in found[0].message


def every_step(
    fault: Callable[[StepData], None], steps: int = 400, interval: int = 10, *, inputs: bool = False
) -> Iterator[StepView]:
    """The stream as a run saved every `interval` steps reads it with the loss kept at every step (format 2.4): the
    saved steps' views, and between them views with the loss alone (`saved` False)."""
    for v in Stream(steps=steps, fault=fault, inputs=inputs):
        if v.step % interval == 0:
            yield v
        else:
            yield StepView(
                step=v.step, scalars={"loss": v.scalars["loss"]}, eval_scalars=v.eval_scalars, saved=False
            )


def test_the_windows_read_the_loss_of_every_step_and_decide_at_saved_steps() -> None:
    # the saved steps' losses sit at 3.0 (a sample that happens to miss the fall); every other step's loss falls
    # 10% by step 100: read at every step, the windows fell clearly, and the run is no stuck one
    def sampled_flat(step: int) -> float:
        return 3.0 if step % 10 == 0 else 3.0 * (1 - 0.001 * min(step, 100)) * (1 + 0.01 * noise(step))

    assert run(LossNotDecreasing(), every_step(shaped(sampled_flat, None))) == []
    # read at saved steps only, the same run is flat at its first value
    found = run(LossNotDecreasing(), views(shaped(sampled_flat, None)))
    assert found[0].step == 150
    # a loss flat at every step is stuck, and the finding comes at a saved step
    found = run(LossNotDecreasing(), every_step(shaped(lambda s: 2.3 * (1 + 0.005 * noise(s)), None)))
    assert found[0].step == 150 and "standard errors of the batch noise" in found[0].message


def test_a_held_out_loss_that_still_falls_outweighs_a_training_loss_flat_beyond_the_noise() -> None:
    # batch noise of +-0.5%: the window sits far above the stuck bound by the training loss alone, but the eval loss
    # fell 4.5% by step 150 (a slow learner whose training loss is dominated by dropout): not stuck
    flat = lambda s: 2.3 * (1 + 0.005 * noise(s))
    assert run(LossNotDecreasing(), views(shaped(flat, lambda s: 2.4 * (1 - 0.0003 * s)))) == []
    found = run(LossNotDecreasing(), views(shaped(flat, lambda s: 2.4)))
    assert found[0].step == 150 and "standard errors of the batch noise" in found[0].message


def test_a_held_out_concordance_far_above_one_half_says_the_model_learned_something() -> None:
    # a Cox partial likelihood, mostly irreducible: 4.3 in the first window, 4.25 after it (within 2%), while the
    # held-out concordance index stands at 0.77 from its first record (chance level 0.5): learned in the first steps
    def cox(step: int) -> float:
        return (4.31 if step < 50 else 4.25) * (1 + 0.003 * noise(step))

    assert (
        run(LossNotDecreasing(), views(with_metric(cox, lambda s: 0.77 + 0.002 * noise(s), "val_c_index")))
        == []
    )
    # at 0.52, within a fifth of the way from chance to 1, it says nothing against the loss
    found = run(
        LossNotDecreasing(), views(with_metric(cox, lambda s: 0.52 + 0.002 * noise(s), "val_c_index"))
    )
    assert found[0].step == 150 and "the model has learned nothing" in found[0].message
    # nor does an accuracy, however high: predicting the majority class scores its share
    found = run(
        LossNotDecreasing(), views(with_metric(cox, lambda s: 0.9 + 0.002 * noise(s), "val_accuracy"))
    )
    assert found[0].step == 150


def test_a_loss_near_chance_that_swings_from_batch_to_batch_beside_a_learning_metric_is_no_plateau() -> None:
    # near ln 64 = 4.16, chance level of an in-batch loss over the 64 inputs, after 4.9 at first, swinging 6% from
    # batch to batch (a likelihood that passes near ln K: a point process's over 2 outputs at 0.70), while the held-out
    # gain climbs 0.6 -> 0.8: uniform outputs would score ln 64 on every batch
    def near_chance(step: int) -> float:
        return (4.9 if step < 20 else 4.17) * (1 + 0.06 * noise(step))

    gain = with_metric(near_chance, lambda s: min(0.5 + 0.002 * s, 0.9), "val_gain")
    assert run(LossNotDecreasing(), every_step(gain, inputs=True)) == []
    # without the metric, read at every step, it sits at chance level beyond the noise
    found = run(LossNotDecreasing(), every_step(with_metric(near_chance, None), inputs=True))
    assert (
        found[0].step == 150
        and "chance level for an in-batch contrastive loss over 64 pairs" in found[0].message
    )
