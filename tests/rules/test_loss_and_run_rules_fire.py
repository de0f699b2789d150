"""Loss-curve rules, class imbalance, stalled training and the threshold watchpoint fire on their faults."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

import numpy as np
import pytest

from tests.rules.streams import StepData, Stream, first, run
from trainguard.api.enums import Severity
from trainguard.rules.class_imbalance import ClassImbalance
from trainguard.rules.diverging_loss import DivergingLoss
from trainguard.rules.loss_not_decreasing import LossNotDecreasing
from trainguard.rules.loss_spike import LossSpike
from trainguard.rules.oscillating_loss import OscillatingLoss
from trainguard.rules.overfit import Overfit
from trainguard.rules.overtraining import Overtraining
from trainguard.rules.stalled_training import StalledTraining
from trainguard.rules.step_view import COL, StepView, TensorMeta
from trainguard.rules.threshold import Threshold


def flat_loss(d: StepData) -> None:
    d.scalars["loss"] = 2.3 * (1 + 0.05 * math.sin(d.step * 1.7))
    if d.eval_scalars:  # the validation loss of a run that learns nothing does not fall either
        d.eval_scalars["loss"] = 2.4


def test_loss_not_decreasing_fires_at_the_end_of_the_first_block_that_did_not_improve() -> None:
    # the fast path for a loss that never moved is off here: the blocks are under test
    f = first(run(LossNotDecreasing({"stuck_steps": None}), Stream(steps=700, fault=flat_loss)))
    assert (f.step, f.tensor) == (499, "loss")  # blocks of 100 steps: 0-99 the best, the next four fail
    assert "over the last 100 steps is not 1% below the best earlier block" in f.message
    assert "4 blocks in a row" in f.message


def test_loss_not_decreasing_blocks_are_training_steps_at_any_save_interval() -> None:
    # saved every 5th step a block is still steps 0-99, 100-199, ...: it ends with the view at 95,
    # not with the one at 100 (which would stretch every block to 105 steps and report at 520)
    views = (v for v in Stream(steps=700, fault=flat_loss) if v.step % 5 == 0)
    f = first(run(LossNotDecreasing({"stuck_steps": None}), views))
    assert (f.step, f.tensor) == (495, "loss") and "4 blocks in a row" in f.message


def test_loss_not_decreasing_names_a_loss_that_never_moved_after_150_steps() -> None:
    # saved every 10th step: the mean of the views in the last 50 steps is still within 2% of the first loss; the
    # stream records no module classes, so chance level is not known and the first loss is the reference
    views = (v for v in Stream(steps=700, fault=flat_loss) if v.step % 10 == 0)
    found = run(LossNotDecreasing(), views)
    assert found[0].step == 150 and found[0].tensor == "loss"
    assert "within 2% of its first value 2.3 (above 2.25) after 150 steps" in found[0].message
    assert "labels match the inputs" in found[0].hint


def with_module_classes(views: Iterable[StepView]) -> Iterator[StepView]:
    """The views with each weight's module class recorded, as the PyTorch hook records it (`Linear`)."""
    for v in views:
        meta = tuple(replace(m, module_type="Linear") if m.collection == "weights" else m for m in v.meta)
        yield replace(v, meta=meta)


def test_loss_not_decreasing_names_a_loss_that_fell_to_chance_level_and_stayed() -> None:
    def to_chance(
        d: StepData,
    ) -> None:  # an inflated first loss (dropout with p 0.95) falling to ln 10 and no further
        d.scalars["loss"] = 2.3026 + 1.2 * math.exp(-d.step / 30) + 0.01 * math.sin(d.step * 1.7)
        if d.eval_scalars:  # nor does the validation loss of a model that learned nothing fall
            d.eval_scalars["loss"] = 2.35

    found = run(
        LossNotDecreasing(),
        with_module_classes(v for v in Stream(steps=300, fault=to_chance) if v.step % 10 == 0),
    )
    assert found[0].step == 170 and found[0].tensor == "loss"
    assert (
        "within 2% of ln 10 = 2.3, chance level for its 10 outputs (above 2.26; first value 3.5), after 170 steps"
        in (found[0].message)
    )
    # without module classes chance level is not known, and 300 steps are too few for 4 blocks
    assert run(LossNotDecreasing(), (v for v in Stream(steps=300, fault=to_chance) if v.step % 10 == 0)) == []


def test_loss_not_decreasing_leaves_a_plateau_the_gradient_barely_reaches_alone() -> None:
    def plateau(
        d: StepData,
    ) -> None:  # a deep sigmoid net at chance level: the first layer's gradient 1% of the last's
        flat_loss(d)
        d.set("grad/fc0.weight", l2=0.01 * d.cols["grad/fc3.weight"][COL["l2"]])

    assert run(LossNotDecreasing(), (v for v in Stream(steps=300, fault=plateau) if v.step % 10 == 0)) == []


def test_loss_not_decreasing_needs_the_gradient_at_the_first_layer_at_every_view_of_the_window() -> None:
    def breaking_out(
        d: StepData,
    ) -> None:  # a deep sigmoid plateau: the first layer's share swings between 3% and 8%
        flat_loss(d)
        share = 0.08 if d.step % 20 < 10 else 0.03
        d.set("grad/fc0.weight", l2=share * d.cols["grad/fc3.weight"][COL["l2"]])

    # saved every 10th step, most windows hold three views at 8%: their median passes 0.05, their lowest does not
    assert (
        run(LossNotDecreasing(), (v for v in Stream(steps=300, fault=breaking_out) if v.step % 10 == 0)) == []
    )


def test_loss_not_decreasing_measures_convergence_from_the_first_steps_when_chance_level_is_unknown() -> None:
    def permuted(
        d: StepData,
    ) -> None:  # an init's large logits: 3.0 at first, at 2.3 for good within 30 steps
        d.scalars["loss"] = 2.3 + 0.7 * math.exp(-d.step / 8) + 0.01 * math.sin(d.step * 1.7)

    f = first(run(LossNotDecreasing(), Stream(steps=700, fault=permuted)))
    # 2.3 is 23% below the first loss but 4% below the first 50 steps' mean: no learning, reported by the blocks
    # (100-199 the best, the fall being in 0-99; the next four fail)
    assert (f.step, f.tensor) == (599, "loss") and "4 blocks in a row" in f.message


def test_loss_not_decreasing_does_not_judge_a_run_with_several_losses_and_no_total() -> None:
    def adversarial(
        d: StepData,
    ) -> None:  # a GAN: the discriminator's and the generator's losses, neither falls
        del d.scalars["loss"]
        d.scalars["d_loss"] = 1.38 * (1 + 0.02 * math.sin(d.step))
        if (
            d.step > 0
        ):  # the first saved step carries only the discriminator's (the other lands on the next step)
            d.scalars["g_loss"] = 0.7 * (1 + 0.02 * math.cos(d.step))

    assert run(LossNotDecreasing(), Stream(steps=700, fault=adversarial)) == []


def test_loss_not_decreasing_leaves_a_loss_that_fell_a_little_to_the_blocks() -> None:
    def slow_start(d: StepData) -> None:
        d.scalars["loss"] = 2.3 * (1 - 0.0004 * min(d.step, 100)) * (1 + 0.01 * math.sin(d.step * 1.7))

    found = run(LossNotDecreasing(), (v for v in Stream(steps=400, fault=slow_start) if v.step % 10 == 0))
    assert found == []  # 4% below its start by step 100: not stuck, and 300 steps are too few for 4 blocks


def test_loss_not_decreasing_names_a_learning_rate_that_collapsed_before_the_loss_fell() -> None:
    def collapsed(d: StepData) -> None:
        d.scalars["lr"] = 0.05 * 0.3 ** (d.step // 3)  # StepLR(step_size=3, gamma=0.3) stepped every batch
        d.scalars["loss"] = 2.3 - 0.2 * (1 - 0.3 ** (d.step // 3))

    found = run(LossNotDecreasing(), (v for v in Stream(steps=300, fault=collapsed) if v.step % 10 == 0))
    # below 1e-3 of the peak from step 20 on; a collapse must last `collapsed_lr_steps` (10) steps
    assert found[0].step == 30 and found[0].tensor == "lr"
    assert (
        "below 0.001 of its peak 0.05 (since step 20) at step 30" in found[0].message
        and "stepped every batch" in found[0].hint
    )


def test_loss_not_decreasing_ignores_a_schedule_that_touches_zero_for_a_step() -> None:
    # a cosine annealed to 0 at step 180, then SWALR raises the rate again: a turning point, not a collapse
    def swa(d: StepData) -> None:
        d.scalars["lr"] = 0.05 * 0.5 * (1 + math.cos(math.pi * d.step / 180)) if d.step <= 180 else 0.02
        d.scalars["loss"] = 2.3 - 0.1 * d.step / 300

    assert run(LossNotDecreasing({"stuck_steps": None}), Stream(steps=300, fault=swa)) == []


def test_loss_not_decreasing_waits_on_a_cosine_schedule_that_ends_after_the_loss_fell() -> None:
    def cosine(d: StepData) -> None:
        d.scalars["lr"] = 0.05 * 0.5 * (1 + math.cos(math.pi * d.step / 299))

    assert run(LossNotDecreasing(), Stream(steps=300, fault=cosine)) == []


def test_loss_not_decreasing_reads_sagemaker_parameters_and_the_eval_loss() -> None:
    # the fast path for a loss that never moved is off: SageMaker's blocks are under test
    rule = LossNotDecreasing(
        {"num_steps": "100", "diff_percent": "1", "mode": "EVAL", "patience": 1, "stuck_steps": None}
    )

    def rising_val(d: StepData) -> None:
        if d.eval_scalars:
            d.eval_scalars["loss"] = 1.0 + d.step / 1000

    f = first(run(rule, Stream(fault=rising_val)))
    # 100-step blocks: eval points 50, 100 | 150, 200
    assert f.step == 200 and f.message.startswith("eval loss: mean")


def overfitting(d: StepData) -> None:
    """From step 300 the validation loss climbs while the training loss keeps falling."""
    if d.eval_scalars and d.step >= 300:
        d.eval_scalars["loss"] = 1.0 + (d.step - 300) / 100


def test_overfit_fires_after_patience_eval_points_of_gap_while_val_worsens_and_train_improves() -> None:
    f = first(run(Overfit({"single_point_ratio": None}), Stream(fault=overfitting)))
    assert f.step == 450  # eval points 400, 450 (the gap passes 200% once the val loss has risen to 2)
    assert f.message.startswith(
        "val loss 2.5 is 496% above the train loss 0.42, above 200% for 2 eval points"
    )
    assert "with the val loss 225% above its best at step 450" in f.message


def test_overfit_fires_at_the_first_eval_point_whose_gap_is_above_single_point_ratio() -> None:
    f = first(run(Overfit(), Stream(fault=overfitting)))
    assert f.step == 400  # the gap is 331% there: above the single-point 300%, no second eval point needed
    assert f.message.startswith(
        "val loss 2 is 331% above the train loss 0.464, above 300% at once (the single-point"
    )
    assert f.threshold == 3.0
    # a gap between ratio_threshold and single_point_ratio still waits for `patience` eval points
    assert first(run(Overfit({"single_point_ratio": 3.5}), Stream(fault=overfitting))).step == 450


def test_overfit_weighs_the_validation_loss_against_every_steps_training_loss() -> None:
    # batches of 8 under heavy dropout, an eval point every 25 steps: the batches on saved steps between
    # two eval points (100, 110, 120) happen to be easy ones at 0.15 while every step's mean is 0.4; the val loss
    # 0.65 sits 8% above its best 0.6, a normal gap against 0.4 and 333% "above" the three easy batches
    def batch(s: int) -> float:
        easy = s % 10 == 0 and s >= 100
        return 0.15 if easy else 0.8 - 0.4 * min(s, 100) / 100 + 0.05 * math.sin(1.7 * s)

    views = []
    for s in range(150):
        views.append(StepView(step=s, scalars={"loss": batch(s)}, saved=s % 10 == 0))
        if s % 25 == 24:  # the eval point lands between saved steps
            val = 0.9 - 0.3 * min(s, 100) / 100 + (0.05 if s > 100 else 0.0)
            views.append(StepView(step=s, eval_scalars={"loss": val}, saved=s % 10 == 0))
    assert run(Overfit(), views) == []
    found = run(Overfit(), [v for v in views if v.saved or v.eval_scalars])  # the saved steps' losses only
    assert found[0].step == 124 and "above 300% at once" in found[0].message


def test_overfit_stays_quiet_on_a_steady_generalisation_gap() -> None:
    def gap(d: StepData) -> None:
        if d.eval_scalars:
            d.eval_scalars["loss"] = 1.5 * d.scalars["loss"]

    assert run(Overfit(), Stream(fault=gap)) == []


def test_overfit_names_a_validation_loss_that_never_fell_while_the_training_loss_did() -> None:
    def flat_val(d: StepData) -> None:
        if (
            d.eval_scalars
        ):  # at chance level (ln 10) from the first eval point on, as if the labels were shuffled
            d.eval_scalars["loss"] = 2.3 * (1 + 0.02 * math.sin(d.step))

    found = run(Overfit(), Stream(fault=flat_val))
    assert found[0].step == 300
    assert found[0].message.startswith(
        "val loss 2.25 has never been 10% below the first train loss 2.31 (6 eval points, best 2.25) while the train "
        "loss fell to 0.619 at step 300"
    )
    assert "validation inputs and labels are paired" in found[0].hint


def test_overfit_leaves_a_validation_loss_that_converged_before_the_first_eval_point_alone() -> None:
    def fast(
        d: StepData,
    ) -> None:  # learnt before the first eval point, flat since: not a flat validation loss
        if d.eval_scalars:
            d.eval_scalars["loss"] = 0.3 * (1 + 0.02 * math.sin(d.step))

    assert run(Overfit(), Stream(fault=fast)) == []


def test_overfit_with_sagemaker_defaults_fires_on_the_first_gap() -> None:
    sagemaker = {"patience": 1, "ratio_threshold": 0.1, "gate_on_val_progress": False}
    f = first(run(Overfit(sagemaker), Stream(fault=overfitting)))
    assert f.step == 300


def test_overtraining_fires_when_strip_means_of_five_eval_points_rose_twice() -> None:
    # the parting path (single eval points) is off here: the strips are under test
    f = first(run(Overtraining({"rise_percent": None}), Stream(steps=1000, fault=overfitting)))
    assert f.step == 750  # strips 50-250, 300-500, 550-750: two successive rises
    assert "strip mean of 5 eval points" in f.message and "reaching UP_2" in f.message


def test_overtraining_up_criterion_on_single_eval_points_fires_after_three_rises() -> None:
    f = first(
        run(Overtraining({"strips": 3, "strip_length": 1, "rise_percent": None}), Stream(fault=overfitting))
    )
    assert f.step == 400  # rises at 300 (0.73 at 250 -> 1.0), 350, 400
    assert "reaching UP_3" in f.message


def test_overtraining_names_train_and_validation_parting_ways_at_the_third_eval_point() -> None:
    f = first(run(Overtraining(), Stream(fault=overfitting)))
    assert (
        f.step == 400
    )  # 30% or more above the best 0.77 (step 250) at 300, 350 and 400, the train loss falling
    assert f.message.startswith("val loss 2 is 160% above its best 0.768, at or above 30% for 3 eval points")


def test_overtraining_parting_path_leaves_a_noisy_validation_loss_alone() -> None:
    def noisy(d: StepData) -> None:
        if d.eval_scalars:  # +-25% around a falling curve, never three points in a row 30% above the best
            d.eval_scalars["loss"] *= 1.25 if (d.step // 50) % 2 else 0.85

    assert run(Overtraining(), Stream(fault=noisy)) == []


def test_overtraining_gl_criterion_fires_when_val_loss_is_alpha_percent_above_its_best() -> None:
    f = first(
        run(Overtraining({"criterion": "gl", "alpha": 30, "strip_length": 1}), Stream(fault=overfitting))
    )
    assert f.step == 300 and "above GL alpha 30%" in f.message  # 1.0 vs the best 0.73 at step 250


def test_overtraining_ports_a_sagemaker_config_to_the_patience_criterion() -> None:
    rule = Overtraining({"patience_validation": 3, "delta": 0.01})
    assert rule.params.criterion == "patience"  # type: ignore[attr-defined]
    f = first(run(rule, Stream(fault=overfitting)))
    assert f.step == 400 and "patience_validation 3" in f.message


def test_loss_spike_fires_at_the_spike_and_names_a_gradient_co_spike() -> None:
    # a jump the loss does not come back from (5x from step 400 on): reported once the 3 steps after it are seen
    def spike(d: StepData) -> None:
        if d.step >= 400:
            d.scalars["loss"] *= 5
        if d.step == 400:
            d.scale("grad/fc3.weight", 20)

    found = run(LossSpike(), Stream(fault=spike))
    assert [(f.step, f.tensor, f.severity) for f in found] == [(403, "loss", Severity.WARNING)]
    assert "at step 400 (judged at step 403" in found[0].message
    assert (
        "with a gradient-norm co-spike" in found[0].message
        and "restart from a checkpoint" in found[0].message
    )
    # judged at once, as before the steps after a spike were read
    assert [f.step for f in run(LossSpike({"absorb_steps": None}), Stream(fault=spike))] == [400]


def test_loss_spike_without_a_gradient_spike_gives_the_data_hint() -> None:
    def spike(d: StepData) -> None:
        if d.step >= 400:
            d.scalars["loss"] *= 5

    f = first(run(LossSpike(), Stream(fault=spike)))
    assert "co-spike" not in f.message and "corrupt data" in f.message


def test_loss_spike_notes_a_spike_the_loss_absorbs_and_reports_spikes_that_recur() -> None:
    # one batch far harder than the rest (a rare configuration of a fitted potential): 5x for one step, back at the
    # next; noted at info level, not warned
    def once(d: StepData) -> None:
        if d.step == 400:
            d.scalars["loss"] *= 5

    found = run(LossSpike(), Stream(fault=once))
    assert [(f.step, f.severity) for f in found] == [(403, Severity.INFO)]
    assert "came back at once" in found[0].message and "absorbed" in found[0].message

    # a second absorbed spike within the window: spikes that recur are reported
    def twice(d: StepData) -> None:
        if d.step in (400, 450):
            d.scalars["loss"] *= 5

    found = run(LossSpike(), Stream(fault=twice))
    assert [(f.step, f.severity) for f in found] == [(403, Severity.INFO), (453, Severity.WARNING)]
    assert "the second such spike since step 400: spikes recur" in found[1].message


def test_loss_spike_does_not_take_a_steady_climb_for_a_spike() -> None:
    # a total loss that climbs 5% a step by design (a VQ-VAE's codebook terms): every step of the climb sits far above
    # the lagging rolling median, yet none jumps against the steps right before it
    def climb(d: StepData) -> None:
        d.scalars["loss"] *= 1.05 ** max(d.step - 450, 0)

    assert run(LossSpike(), Stream(fault=climb)) == []
    judged = run(
        LossSpike({"climb_steps": None}), Stream(fault=climb)
    )  # judged against the rolling median alone
    assert judged and all(f.step > 450 for f in judged)


def test_loss_spike_does_not_read_a_loss_scale_where_the_loss_is_missing() -> None:
    # a hand-written fp16 loss scaler: `loss_scale` at every step, `loss` dropped at a step where it overflowed
    def scaler(d: StepData) -> None:
        d.scalars["loss_scale"] = 2.0**20
        if d.step == 400:
            del d.scalars["loss"]

    assert run(LossSpike(), Stream(fault=scaler)) == []


def test_loss_spike_does_not_judge_one_of_several_adversarial_losses() -> None:
    # a GAN records d_loss and g_loss and no total: the discriminator's loss climbs when the generator improves
    def gan(d: StepData) -> None:
        loss = d.scalars.pop("loss")
        d.scalars["d_loss"] = loss * (5 if d.step == 400 else 1)
        d.scalars["g_loss"] = 2 * loss

    assert run(LossSpike(), Stream(fault=gan)) == []
    named = run(LossSpike({"loss_name": "d_loss", "absorb_steps": None}), Stream(fault=gan))
    assert [(f.step, f.tensor) for f in named] == [(400, "loss")]  # named, it is watched


def test_oscillating_loss_fires_after_the_loss_stops_improving() -> None:
    def oscillate(d: StepData) -> None:
        if d.step >= 300:
            d.scalars["loss"] = 1.0 * (1.6 if d.step % 2 else 0.6)

    f = first(run(OscillatingLoss(), Stream(fault=oscillate)))
    # the window is full of the swing by step 350 (95% of its differences must flip), but the gate
    # opens only 100 training steps after the loss EMA's last 1% best, near step 300
    assert 395 <= f.step <= 405 and f.tensor == "loss"
    assert "reverse direction" in f.message


WEIGHTS = [f"fc{i}.weight" for i in range(4)]


def overshoot(rate: float, share: float, start: int = 100) -> Callable[[StepData], None]:
    """From `start` on, every weight's norm grows by `rate` per step and the loss sits `share` of the
    way back from its lowest point towards its first value."""

    def fault(d: StepData) -> None:
        for name in WEIGHTS:
            d.cols[name][COL["l2"]] *= (1 + rate) ** max(d.step - start, 0)
        if d.step == 0:
            d.scalars["loss"] = 2.3
        elif d.step < start:
            d.scalars["loss"] = 2.3 - 1.3 * d.step / start
        else:
            d.scalars["loss"] = 1.0 + share * 1.3

    return fault


def test_oscillating_loss_window_stays_quiet_on_a_loss_that_flips_ten_times_in_eleven() -> None:
    # about what healthy runs saved at every step reach (up to 90%); a steady up-down swing flips every time
    period = [0.6, 1.6] * 4 + [0.6, 1.1, 1.6]  # 0.6 -> 1.1 -> 1.6 goes up twice

    def mostly_alternating(d: StepData) -> None:
        if d.step >= 300:
            d.scalars["loss"] = period[d.step % len(period)]

    diffs = np.diff([period[t % len(period)] for t in range(300, 350)])
    assert 0.89 < np.mean(np.sign(diffs[1:]) != np.sign(diffs[:-1])) < 0.95
    assert run(OscillatingLoss({"rebound_growth": None}), Stream(fault=mostly_alternating)) == []
    looser = OscillatingLoss({"rebound_growth": None, "sign_change_ratio": 0.85})
    assert run(looser, Stream(fault=mostly_alternating))


def test_oscillating_loss_reports_a_loss_thrown_back_up_while_the_weights_inflate() -> None:
    f = first(run(OscillatingLoss(), Stream(steps=200, fault=overshoot(0.03, 0.5))))
    # against the view 5 steps back: 0.6% per step at step 101, 1.2% at 102, then 2 of 3 views
    assert (f.step, f.tensor, f.threshold) == (103, "loss", 0.01)
    assert (
        "gave back 49.5% of its fall from 2.3 to 1.01" in f.message and "per step (threshold 1%)" in f.message
    )
    assert "lower the learning rate or the momentum" in f.message


def test_oscillating_loss_stays_quiet_when_only_one_of_growth_and_rebound_is_there() -> None:
    # each just under its threshold with the other far above it
    assert run(OscillatingLoss(), Stream(steps=200, fault=overshoot(0.009, 1.0))) == []
    assert run(OscillatingLoss(), Stream(steps=200, fault=overshoot(0.05, 0.28))) == []
    # weights growing 3% per step while the loss keeps falling (a small init growing to its scale)
    assert run(OscillatingLoss(), Stream(steps=200, fault=overshoot(0.03, 0.0))) == []
    assert run(OscillatingLoss({"rebound_growth": None}), Stream(steps=200, fault=overshoot(0.03, 0.5))) == []


def test_oscillating_loss_rebound_leaves_a_loss_below_zero_alone() -> None:
    # the same overshoot shifted below zero (an RBM's free-energy difference under contrastive divergence: from -0.04
    # towards -2 and half way back while its weights grow from a small init): its fall has no scale against its first
    # value, as a policy loss's has none
    fault = overshoot(0.03, 0.5)

    def shifted(d: StepData) -> None:
        fault(d)
        d.scalars["loss"] -= 2.34

    assert run(OscillatingLoss(), Stream(steps=200, fault=shifted)) == []


def test_class_imbalance_counts_label_count_scalars() -> None:
    def skewed(d: StepData) -> None:
        d.scalars["label_count/cat"] = 99.0
        d.scalars["label_count/dog"] = 1.0

    f = first(run(ClassImbalance(), Stream(steps=20, fault=skewed)))
    assert f.step == 4 and f.severity == Severity.INFO  # 500 labels after 5 steps
    assert "class cat has 99x the samples of class dog" in f.message


def test_class_imbalance_reads_binary_label_tensors_and_stays_quiet_when_balanced() -> None:
    meta = (TensorMeta("labels", "labels", shape=(64,)),)

    def view(step: int, positives: int) -> StepView:
        row = np.zeros((1, 12))
        row[0, [COL["count"], COL["zero"], COL["min"], COL["max"], COL["mean"]]] = [
            64,
            64 - positives,
            0,
            1,
            positives / 64,
        ]
        return StepView(step=step, names=("labels",), meta=meta, stats=row)

    assert run(ClassImbalance(), [view(s, 30) for s in range(20)]) == []
    f = first(run(ClassImbalance(), [view(s, 1) for s in range(20)]))
    assert f.step == 7 and "class 0 has 63x the samples of class 1" in f.message


def test_stalled_training_fires_on_a_heartbeat_long_after_the_last_step() -> None:
    views = Stream(steps=50).views()
    last = views[-1]
    heartbeats = [
        StepView(step=last.step, rank=0, wall_time=last.wall_time + s) for s in (60.0, 1000.0, 1900.0)
    ]
    rule = StalledTraining()
    found = run(rule, [*views, *heartbeats])
    assert [(f.step, f.value) for f in found] == [(49, 1900.0)]
    assert (
        "no new step since step 49 for 1900 s, longer than the threshold 1800 s on rank 0" in found[0].message
    )


def test_heartbeats_change_nothing_for_rules_that_do_not_ask_for_them() -> None:
    rule = LossSpike()
    run(rule, Stream(steps=30).views())
    before = rule.state_dict()
    run(rule, [StepView(step=29, wall_time=5000.0)] * 3)
    assert rule.state_dict() == before


def test_stalled_training_reports_a_gap_between_steps_when_evaluated_offline() -> None:
    def pause(d: StepData) -> None:
        if d.step >= 20:
            d.wall_time += 3600

    f = first(run(StalledTraining(), Stream(steps=30, fault=pause)))
    assert f.step == 20 and "came 3600 s after step 19" in f.message


def test_threshold_watchpoint_compares_a_statistic_of_a_collection() -> None:
    def big(d: StepData) -> None:
        if d.step >= 10:
            d.set("grad/fc1.weight", max=500.0)

    rule = Threshold({"statistic": "abs_max", "comparison": ">=", "value": 100}, collections=["gradients"])
    f = first(run(rule, Stream(steps=20, fault=big)))
    assert (f.step, f.tensor) == (10, "grad/fc1.weight")
    assert f.message.startswith("grad/fc1.weight: abs_max 500 >= 100 at step 10 on rank 0")


def test_threshold_watchpoint_on_a_scalar_and_on_a_regex() -> None:
    rule = Threshold({"scalar": "^lr$", "comparison": "<", "value": 0.01})
    f = first(run(rule, Stream(steps=20)))
    assert (f.step, f.tensor) == (0, "lr")  # warmup starts at 0.005
    rule = Threshold({"statistic": "zero_percentage", "comparison": ">", "value": 50}, tensors=["relu2$"])
    assert first(run(rule, Stream(steps=3))).tensor == "act/relu2"


def test_class_imbalance_reads_prediction_streams_binary_and_one_vs_rest() -> None:
    def counts(positives: float, negatives: float) -> np.ndarray:
        c = np.zeros((3, 16))
        c[0, 3], c[1, 5] = positives, negatives
        return c

    binary = [StepView(step=s, predictions={"pred/ctr": counts(2, 198)}) for s in range(5)]
    f = first(run(ClassImbalance(), binary))
    assert (f.step, f.tensor) == (2, "pred/ctr") and "class 0 has 99x the samples of class 1" in f.message
    multi = [
        StepView(
            step=s, predictions={"pred/digits/class0": counts(90, 10), "pred/digits/class7": counts(5, 95)}
        )
        for s in range(10)
    ]
    f = first(run(ClassImbalance(), multi))
    assert (f.step, f.tensor) == (5, "pred/digits") and "class 0 has 18x the samples of class 7" in f.message


def test_diverging_loss_names_a_loss_falling_without_bound() -> None:
    def nll_on_raw_logits(d: StepData) -> None:  # -mean(logit of the label): no lower bound, falls steadily
        d.scalars["loss"] = 0.05 - 0.04 * d.step

    found = run(DivergingLoss(), (v for v in Stream(steps=300, fault=nll_on_raw_logits) if v.step % 10 == 0))
    assert found[0].step == 140 and found[0].tensor == "loss"  # three 50-step windows: -0.75, -2.75, -4.75
    assert found[0].message.startswith("loss: falling without bound, -0.75 -> -2.75 -> -4.75")
    assert "log_softmax" in found[0].hint


def test_diverging_loss_judges_a_fall_the_same_wherever_zero_lies() -> None:
    # the same fall as nll_loss on raw logits, 3 lower (a loss below zero from the start): distances from the first
    # loss, not from zero, so it is found at the same step
    def shifted(d: StepData) -> None:
        d.scalars["loss"] = -2.95 - 0.04 * d.step

    found = run(DivergingLoss(), (v for v in Stream(steps=300, fault=shifted) if v.step % 10 == 0))
    assert found[0].step == 140 and found[0].message.startswith(
        "loss: falling without bound, -3.75 -> -5.75 -> -7.75 (means of 10-step medians over 50-step windows, 150 steps), 3x as far "
        "below the first loss -2.95"
    )

    # a loss that sat at its first value for 100 steps, then fell: windows 50-99, 100-149, 150-199
    def flat_then_falling(d: StepData) -> None:
        d.scalars["loss"] = 0.5 if d.step < 100 else 0.5 - 0.05 * (d.step - 100)

    found = run(DivergingLoss(), Stream(steps=300, fault=flat_then_falling))
    assert found[0].step == 199 and found[0].message.startswith(
        "loss: falling without bound, 0.5 -> -0.725 -> -3.23 (means of 10-step medians over 50-step windows, 150 steps), 3.73 below the "
        "first loss 0.5, which it had not left before"
    )
    # a healthy Gaussian NLL trained with Adam (the realistic suite's heteroscedastic regression, seed 0, every 10th
    # step): its windows fall 0.3 -> -0.47 -> -0.9 -> -1.27 as the variance head learns the noise, 1.7x as far
    # below its first loss as the first window; measured from zero (2.1x) it read as a fall without bound
    nll = [0.307, 0.18, 0.026, -0.102, -0.289, -0.4, -0.518, -0.645, -0.787, -0.516, -0.826, -0.913, -0.907, -0.909,
           -0.764, -1.077, -1.118, -1.14, -1.357, -1.325, -1.201, -1.36, -1.299, -1.208, -1.286]  # fmt: skip

    def gaussian_nll(d: StepData) -> None:
        d.scalars["loss"] = nll[min(d.step // 10, len(nll) - 1)]

    assert run(DivergingLoss(), (v for v in Stream(steps=250, fault=gaussian_nll) if v.step % 10 == 0)) == []


def test_diverging_loss_leaves_a_likelihood_that_sharpens_while_its_held_out_score_rises_alone() -> None:
    # a Gaussian policy cloned from a deterministic expert: its NLL falls 0.3 a window from -0.8 as its variance
    # shrinks, while the held-out goal progress climbs 0.82 -> 0.97 (recorded every 25 steps)
    def cloning(score: Callable[[int], float]) -> Callable[[StepData], None]:
        def fault(d: StepData) -> None:
            d.scalars["loss"] = -0.8 - 0.006 * d.step
            d.eval_scalars.clear()
            if d.step and d.step % 25 == 0:
                d.eval_scalars["val_goal_progress"] = score(d.step)

        return fault

    def views(score: Callable[[int], float]) -> list[StepView]:
        return [v for v in Stream(steps=300, fault=cloning(score)) if v.step % 5 == 0]

    assert run(DivergingLoss(), views(lambda s: min(0.8 + 0.0012 * s, 0.98))) == []
    # the same fall while the score, after rising 0.49 -> 0.61 in the first 50 steps, stays there (a CRF whose
    # log-partition sums over the wrong tags): no floor, whatever the score did at first
    found = run(DivergingLoss(), views(lambda s: 0.49 + 0.12 * min(s, 50) / 50))
    assert found and found[0].message.startswith("loss: falling without bound")
    # and without any held-out score
    assert run(DivergingLoss(), views(lambda s: math.nan))


def test_diverging_loss_names_a_loss_growing_steadily() -> None:
    def warmup_never_capped(d: StepData) -> None:
        d.scalars["loss"] = 0.3 * 1.01 ** max(d.step - 100, 0)

    found = run(DivergingLoss(), Stream(steps=400, fault=warmup_never_capped))
    assert found and found[0].message.startswith("loss: growing steadily") and "schedule" in found[0].hint


def test_diverging_loss_leaves_a_rise_within_the_batch_noise_alone() -> None:
    # batches of 8 saved every 10th step: five losses a window, one of them an outlier batch; the means rise
    # 0.30 -> 0.46 -> 0.72 (2.4x) while the windows' spread puts the last 1.7 standard errors above the first
    windows = ([0.47, 0.38, 0.04, 0.52, 0.11], [1.81, 0.12, 0.10, 0.14, 0.13], [0.11, 0.54, 1.43, 0.61, 0.93])
    losses = [2.3] * 15 + [x for w in windows for x in w]

    def batch_noise(d: StepData) -> None:
        d.scalars["loss"] = losses[min(d.step // 10, len(losses) - 1)]

    views = [v for v in Stream(steps=300, fault=batch_noise) if v.step % 10 == 0]
    assert run(DivergingLoss(), views) == []
    found = run(DivergingLoss({"min_significance": 1.5}), views)
    assert found[0].step == 290 and found[0].message.startswith(
        "loss: growing steadily, 0.304 -> 0.46 -> 0.724"
    )


def _every_step(losses: Callable[[int], float], steps: int) -> list[StepView]:
    """The loss recorded at every step, the other records at every 10th (format 2.4)."""
    return [StepView(step=s, scalars={"loss": losses(s)}, saved=s % 10 == 0) for s in range(steps)]


def test_diverging_loss_reads_every_steps_loss_not_a_sample_of_it() -> None:
    # a heavy-tailed batch loss (a regression with batches of 64): flat at every step, while the losses that
    # fall on saved steps rise 4.5 -> 7.2 -> 20 by chance, as five of them a window may
    heavy = (2.0, 5.0, 40.0, 8.0, 3.0, 15.0, 6.0, 25.0, 4.0)
    saved = (
        [4.5] * 15 + [4.0, 5.0, 4.0, 6.0, 3.5] + [5.0, 9.0, 6.0, 8.0, 8.0] + [15.0, 24.0, 18.0, 22.0, 20.5]
    )

    def sampled(s: int) -> float:
        return saved[min(s // 10, len(saved) - 1)] if s % 10 == 0 else heavy[s % 10 - 1]

    views = _every_step(sampled, 300)
    assert run(DivergingLoss(), [v for v in views if v.saved])[0].message.startswith("loss: growing steadily")
    assert run(DivergingLoss(), views) == []


def test_diverging_loss_finds_a_growing_loss_through_its_spikes() -> None:
    # an IRNN whose learning rate is too high: the loss grows 2% a step, with two batches near 5e4 on the way;
    # each part of a window is read by its median, so two batches do not decide a window
    def irnn(s: int) -> float:
        return {1: 5e4, 80: 3.5e4}.get(s, 1.3 * 1.02 ** max(s - 50, 0) * (1 + 0.1 * math.sin(1.7 * s)))

    found = run(DivergingLoss(), _every_step(irnn, 300))
    assert found[0].step == 149 and found[0].message.startswith("loss: growing steadily")


def test_diverging_loss_names_a_loss_that_ran_away_before_it_turned_non_finite() -> None:
    # a learning rate meant for another batch size: the loss climbs by orders of magnitude within ten steps, far too
    # fast for three windows, and overflows; named at the step it turns non-finite, once
    climb = [1.4, 1.5, 1.6, 1.5, 2.4, 4.3, 5.7, 5.4, 3.9e4, 3.4e16]
    found = run(DivergingLoss(), _every_step(lambda s: climb[s] if s < len(climb) else math.nan, 300))
    assert [f.step for f in found] == [10]
    assert found[0].message.startswith(
        "loss: ran away from its first value 1.4 to 3.4e16 at step 9, 2.4e16x its size"
    )
    assert found[0].value == pytest.approx((3.4e16 - 1.4) / 1.4) and found[0].threshold == 100
    assert "learning rate" in found[0].hint
    # the same climb to 1e2x its first value and no further: within the limit
    assert (
        run(DivergingLoss(), _every_step(lambda s: 1.4 * 10 ** min(s / 5, 1.9) if s < 10 else math.inf, 300))
        == []
    )


def test_diverging_loss_leaves_a_loss_turning_non_finite_from_where_it_was_to_exploding_tensor() -> None:
    # log(0) in a focal loss at step 40 (inf, then NaN), a NaN in the data from the first step, a loss of 0 at first
    def log_of_zero(s: int) -> float:
        return 2.3 * math.exp(-s / 100) if s < 40 else (math.inf if s == 40 else math.nan)

    for losses in (log_of_zero, lambda s: math.nan, lambda s: 0.0 if s < 5 else math.nan):
        assert run(DivergingLoss(), _every_step(losses, 300)) == []
    # a run that resumes from its checkpoint after the overflow and runs away again is named again
    twice = [StepView(step=s, scalars={"loss": 2.0 * 10**s if s < 10 else math.nan}) for s in range(15)]
    assert [f.step for f in run(DivergingLoss(), twice + twice)] == [10, 10]


def test_diverging_loss_leaves_a_likelihood_settling_at_its_floor_alone() -> None:
    # a Gaussian NLL under Adam settling at -1.5: its window means -0.09 -> -0.47 -> -0.76 shrink by 0.75 a
    # window, within keep_pace (0.7) of running away, and twice as far below the first loss as the first 50
    # steps went; the parts' spread about their trend shows the drops shrink steadily, not by chance
    def settling(s: int) -> float:
        return -1.5 + 1.7 * math.exp(-s / 174) + 0.01 * math.sin(1.7 * s)

    assert run(DivergingLoss(), _every_step(settling, 400)) == []


def test_diverging_loss_leaves_losses_with_a_floor_and_noise_near_zero_alone() -> None:
    def policy_gradient(d: StepData) -> None:  # wanders around 0 within the size of its first value
        d.scalars["loss"] = 0.2 * math.sin(d.step / 40)

    def converging_below_zero(d: StepData) -> None:  # a Gaussian likelihood settling at its floor
        d.scalars["loss"] = -3.0 + 4.0 * math.exp(-d.step / 60)

    def tiny_noise(d: StepData) -> None:  # an easy task near 0: 1e-4 -> 3e-4 is no growth
        d.scalars["loss"] = 2.3 if d.step == 0 else 1e-4 * (1 + d.step / 100)

    for fault in (policy_gradient, converging_below_zero, tiny_noise):
        assert run(DivergingLoss(), Stream(steps=600, fault=fault)) == [], fault.__name__


def test_loss_not_decreasing_names_a_loss_that_rose_whatever_reaches_the_first_layer() -> None:
    def swinging(
        d: StepData,
    ) -> (
        None
    ):  # label-sorted batches: the loss settles 10% above its first value, the first layer's share at 3%
        d.scalars["loss"] = 2.3 * (1.1 if d.step else 1.0) * (1 + 0.01 * math.sin(d.step * 1.7))
        d.set("grad/fc0.weight", l2=0.03 * d.cols["grad/fc3.weight"][COL["l2"]])

    f = first(run(LossNotDecreasing(), (v for v in Stream(steps=300, fault=swinging) if v.step % 10 == 0)))
    # no plateau of vanishing gradients: tiny steps leave a loss where it was, they do not make it worse
    assert (f.step, f.tensor) == (150, "loss") and "the loss rose instead of falling" in f.message
    assert "the gradient reaches the first layer" not in f.message
