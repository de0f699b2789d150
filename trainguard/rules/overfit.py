"""`overfit`: the validation loss sits well above the training loss and is getting worse.

At each eval point (a view with an eval-mode loss) the gap (val - train) / train is computed
against the mean training loss since the previous eval point (SageMaker's Overfit, with
`patience` and `ratio_threshold`); the divisor is floored at a tenth of the first training loss.
The training loss of every step is read (`every_step`), where it is recorded (format 2.4): at an eval
point every 25 steps, the saved steps between two eval points are two or three batches, and two easy
batches of 8 (0.2 and 0.11) put a healthy run's val loss 0.70 "348% above" the training loss, which is 0.41
over those 25 steps (72%).
A steady gap is the normal generalisation gap, so by default it counts only while the validation
loss is also `val_rise_percent` above its best and the training loss below what it was then;
`patience` consecutive eval points are needed, or one whose gap is above `single_point_ratio`
(evidence that strong needs no second validation pass).

A second path needs no rise: the validation loss never `flat_val_drop` below the first training
loss (the untrained model's, chance level for a classifier) while the training loss fell below
`flat_train_fraction` of it (by the third eval point): what the model learns does not carry to the
validation data at all (it memorises, or the validation inputs or labels do not match the
training ones).

A run that records an eval accuracy (`val_acc`, `val_token_accuracy`, `top1`, ...) or R² (`val_r2`) and no eval
loss gets the same path on it: the metric never more than `flat_val_drop` of the way from chance level (1/K for
an accuracy, K the outputs of the last dense layer; 0 for an R², predicting the mean) to 1, and no higher than
at its first eval point, while the training loss fell below `flat_metric_train_fraction` of its first value. A
language model whose targets are its inputs (not shifted by one) drives its cross-entropy to nearly 0 by copying
and predicts held-out next tokens at chance; so does a decoder fed the sequence it must predict; an implicit
network (SIREN) whose initialisation lets it interpolate its training points and nothing between them reaches a
training loss of 1e-5 and a held-out R² of 0.

A worse-from-the-start path reads any held-out (eval-mode) metric whose name says which way is better (an R², an
accuracy, an AUC, an error: `metric_against_loss.direction`), in a run with or without an eval loss: its latest
window of records worse than its first by `start_significance` standard errors of its own noise and by
`start_worsening` of the first window's magnitude, no record since its first window better than that window's best,
while the training loss's latest window is not above its first, at `start_confirm` records in a row
(`worse_from_start`). The model has been getting worse on held-out data since its first evaluations: it fits what the
held-out data does not share (too few distinct training rows, a feature that only the training rows carry, codes
that name one thing in training and another in held-out data). A model that overfits late was better once, and is
left to the paths above.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base, chance, shared, shared_loss, worse_from_start
from trainguard.rules.metric_against_loss import direction
from trainguard.rules.step_view import StepView


class Overfit(base.Rule):
    name = "overfit"
    category = RuleCategory.GENERALISATION
    default_action = Action.NOTIFY
    needs = "eval loss"
    every_step = True
    summary = (
        "Validation loss well above the training loss for `patience` eval points (or once far above it), worsening "
        "while training improves."
    )
    hint = "add regularisation (weight decay, dropout, augmentation), get more data, or stop early at the best checkpoint"

    class Params(base.Params):
        ratio_threshold: float = Field(
            default=2.0,
            gt=0,
            description="(val - train) / train above which the gap counts (SageMaker: 0.1). On the detection "
            "benchmark's calibration seeds, healthy runs reach 1.6 at eval points where the val loss got worse "
            "(batches of 8: a noisy train mean); overfitting ones pass 3.5 at the first eval point after their best "
            "val loss and 4.5 at the second.",
        )
        patience: int = Field(
            default=2,
            ge=1,
            description="Consecutive eval points the gap must persist (SageMaker: 1): one noisy validation pass "
            "alone does not alarm.",
        )
        single_point_ratio: float | None = Field(
            default=3.0,
            gt=0,
            description="A gap above this counts at once, without waiting `patience` eval points (still only where "
            "the val loss got worse while the training loss improved). On the detection benchmark's calibration "
            "seeds healthy runs stay at 1.6 or below at such eval points, overfitting ones reach 3.5 to 5.6 at the "
            "first after their best. None: always wait `patience` eval points.",
        )
        gate_on_val_progress: bool = Field(
            default=True,
            description="Count the gap only at eval points where the validation loss is `val_rise_percent` above its "
            "best while the training loss is below its value then: a steady gap is the normal generalisation gap; "
            "val getting worse while train gets better is overfitting.",
        )
        val_rise_percent: float = Field(
            default=5.0,
            ge=0,
            description="How far (percent, of the floored best) the val loss must sit above its best.",
        )
        eval_loss_name: str | None = Field(
            default=None, description="Eval scalar to read; default `loss`, else the first *loss*."
        )
        loss_floor_fraction: float = Field(default=0.1, ge=0, le=1, description=shared_loss.LOSS_FLOOR_DOC)
        flat_val_drop: float | None = Field(
            default=0.1,
            gt=0,
            lt=1,
            description="The flat-validation path: the val loss never this fraction below the first training loss "
            "while the training loss fell below `flat_train_fraction` of it. None: off.",
        )
        flat_train_fraction: float = Field(
            default=0.3,
            gt=0,
            lt=1,
            description="How far the training loss must have fallen for the flat-validation path.",
        )

        flat_metric_train_fraction: float = Field(
            default=0.05,
            gt=0,
            lt=1,
            description="The flat-validation path on an eval accuracy or R² (a run without an eval loss): how far the "
            "training loss must have fallen, as a fraction of its first value. Deeper than `flat_train_fraction`: "
            "an accuracy or a clipped R² at chance hides a slow start that a val loss would show falling (on the "
            "fourth blind split's healthy N-BEATS with a Huber loss R² reads 0 for 74 steps while the training "
            "loss is at 37-61% of its first value); the runs that fit their targets and predict at chance were at "
            "0.01-1.8% by their third eval point (a language model copying its inputs, a decoder fed its targets, "
            "SIREN networks that interpolate their training points).",
        )

        start_worsening: float | None = Field(
            default=0.05,
            gt=0,
            lt=1,
            description="The worse-from-the-start path: the share of its first window's magnitude by which a held-out "
            "metric's latest window must be worse (with no record since better than the first window's best, the "
            "training loss not rising). On the detection benchmarks' stored healthy runs (2-core x86-64 VM) one of "
            "2,347 met it with `start_significance` 5 (a pharmacy MLP 30% below its first record, overfitting from its "
            "first evaluation); the bugs it finds lose 5-15%. None: off.",
        )
        start_significance: float = Field(
            default=5.0,
            gt=0,
            description="Standard errors of the metric's own noise (the spread within each window) by which its "
            "latest window must be worse than its first, for the worse-from-the-start path.",
        )
        start_confirm: int = Field(
            default=2,
            ge=1,
            description="Records in a row at which the worse-from-the-start path must hold: its latest window slides "
            "one record at a time, and a noisy metric tested again at each one crosses its bound by chance.",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: Overfit.Params = self.params  # type: ignore[assignment]
        self.start = (
            None
            if p.start_worsening is None
            else worse_from_start.WorseFromStart(p.start_worsening, p.start_significance, p.start_confirm)
        )
        self.start_reported = False
        self.train = shared_loss.TrainMean()
        self.read_val = shared_loss.LossReader(mode="eval", name=p.eval_loss_name)
        self.best_val: float | None = None
        self.train_at_best: float | None = None
        self.streak = 0
        self.floor = shared_loss.LossFloor(p.loss_floor_fraction)
        self.evals = 0
        self.flat_reported = False
        self.train_acc = shared_loss.TrainMean()
        """The training loss since the previous eval accuracy (the accuracy path's own interval)."""
        self.acc_points = 0
        self.acc_best: float | None = None
        self.acc_first: float | None = None
        self.classes: int | None = None

    def has_input(self, view: StepView) -> bool:
        return self.read_val(view) is not None or any(
            chance.is_placed(n) or direction(n) for n in view.eval_scalars
        )

    def check(self, view: StepView) -> list[base.Finding]:
        p: Overfit.Params = self.params  # type: ignore[assignment]
        self.train.push(view)
        self.train_acc.push(view)
        if self.train.last is not None:
            self.floor(self.train.last)
        if view.names and self.classes is None:
            self.classes = shared.output_classes(view)
        if self.start is not None and not self.start_reported:
            since_start = self.start(view)
            if since_start is not None:
                self.start_reported = True
                return [self._worse_from_start(view, since_start, self.start.worsening)]
        flat_acc = self._flat_accuracy(view, p) if view.eval_scalars else []
        if flat_acc:
            return flat_acc
        val = self.read_val(view) if view.eval_scalars else None
        if val is None or not math.isfinite(val):
            return []
        train = self.train.take()
        self.evals += 1
        flat = self._flat_validation(view, val, train, p)
        if flat:
            return flat
        if self.best_val is None or val < self.best_val:
            self.best_val, self.train_at_best = val, train
        best = self.best_val
        if train is None:
            return []
        scale = self.floor(abs(train))
        if scale <= 0:
            return []
        gap = (val - train) / scale
        # overfitting: the validation loss got worse while the training loss kept improving
        worse = val - best > p.val_rise_percent / 100.0 * self.floor(best)
        learning = self.train_at_best is None or train < self.train_at_best
        counts = gap > p.ratio_threshold and ((worse and learning) or not p.gate_on_val_progress)
        self.streak = self.streak + 1 if counts else 0
        at_once = counts and p.single_point_ratio is not None and gap > p.single_point_ratio
        if self.streak < p.patience and not at_once:
            return []
        if self.streak >= p.patience:
            bound, over = (
                p.ratio_threshold,
                f"for {self.streak} eval points" if self.streak > 1 else "at 1 eval point",
            )
        else:  # at_once: single_point_ratio is set
            bound, over = p.single_point_ratio or p.ratio_threshold, "at once (the single-point threshold)"
        msg = (
            f"val loss {base.fmt(val)} is {base.fmt(gap * 100)}% above the train loss {base.fmt(train)}, above "
            f"{base.fmt(bound * 100)}% {over}"
            f"{f' with the val loss {base.fmt(val / best * 100 - 100)}% above its best' if p.gate_on_val_progress else ''} "
            f"{self.where(view)}"
        )
        return [self.finding(view, msg, tensor="loss", value=gap, threshold=bound)]

    def _flat_validation(
        self, view: StepView, val: float, train: float | None, p: Params
    ) -> list[base.Finding]:
        """The flat-validation path (see the module docstring); reported once."""
        first_train = self.floor.first
        if (
            p.flat_val_drop is None
            or self.flat_reported
            or train is None
            or first_train is None
            or first_train <= 0
            or self.evals < 3
        ):
            return []
        best = min(val, self.best_val if self.best_val is not None else val)
        if best < (1 - p.flat_val_drop) * first_train or train >= p.flat_train_fraction * first_train:
            return []
        self.flat_reported = True
        msg = (
            f"val loss {base.fmt(val)} has never been {base.fmt(100 * p.flat_val_drop)}% below the first train loss "
            f"{base.fmt(first_train)} ({self.evals} eval points, best {base.fmt(best)}) while the train loss fell to "
            f"{base.fmt(train)} {self.where(view)}: nothing learnt carries to the validation data"
        )
        hint = (
            "check that validation inputs and labels are paired and preprocessed as the training ones are, and that "
            "the training labels match their inputs (a model memorising noise learns nothing that generalises)"
        )
        return [self.finding(view, msg, tensor="loss", value=best / first_train, threshold=1 - p.flat_val_drop,
                             hint=hint)]  # fmt: skip

    def _worse_from_start(self, view: StepView, w: worse_from_start.Worsened, bound: float) -> base.Finding:
        """The worse-from-the-start path's finding (see the module docstring); `bound`: the least share worse."""
        msg = (
            f"the held-out metric {w.name!r}, which by its name should {'rise' if w.sign > 0 else 'fall'}, went from "
            f"a mean of {base.fmt(w.first)} over its first records (steps {w.first_steps[0]}-{w.first_steps[1]}) to "
            f"{base.fmt(w.latest)} over its latest (steps {w.latest_steps[0]}-{w.latest_steps[1]}), "
            f"{base.fmt(100 * w.share)}% worse (at least {base.fmt(100 * bound)}%) and "
            f"{base.fmt(w.z)} standard errors of its own noise, never better since than its first window's best "
            f"{base.fmt(w.best)}, while the train loss went from {base.fmt(w.loss_first)} to "
            f"{base.fmt(w.loss_latest)} {self.where(view)}: the model has been getting worse on held-out data since "
            "its first evaluations"
        )
        hint = (
            "check that the training rows are many and varied enough (a deduplication or filter that leaves few), that "
            "no feature is filled in training rows and missing or filled differently in held-out ones, and that ids "
            "and codes mean the same in both; else regularise, or keep the earliest checkpoint"
        )
        return self.finding(view, msg, tensor=w.name, value=w.latest, threshold=w.first, hint=hint)

    def _flat_accuracy(self, view: StepView, p: Params) -> list[base.Finding]:
        """The flat-validation path on an eval accuracy or R², for a run without an eval loss; reported once."""
        found = chance.placed(view.eval_scalars, self.classes)
        if found is None or self.read_val(view) is not None or p.flat_val_drop is None or self.flat_reported:
            return []
        name, acc, level = found
        train = self.train_acc.take()
        self.acc_points += 1
        self.acc_best = acc if self.acc_best is None else max(self.acc_best, acc)
        self.acc_first = acc if self.acc_first is None else self.acc_first
        first_train = self.floor.first
        if train is None or first_train is None or first_train <= 0 or self.acc_points < 3:
            return []
        said = f"1/{self.classes} = {base.fmt(level)}" if level > 0 else "0 (the mean)"
        bound = level + p.flat_val_drop * (1.0 - level)
        if (
            self.acc_best > bound
            or acc > self.acc_first
            or train >= p.flat_metric_train_fraction * first_train
        ):
            return []  # above chance once, or still rising from its first point (a slow start), or not fitted
        self.flat_reported = True
        msg = (
            f"{name} {base.fmt(acc)} has never been more than {base.fmt(100 * p.flat_val_drop)}% of the way from chance "
            f"level {said} to 1 (best {base.fmt(self.acc_best)} at {self.acc_points} eval points, bound "
            f"{base.fmt(bound)}) while the train loss fell to {base.fmt(train)}, {base.fmt(100 * train / first_train)}% "
            f"of its first value {base.fmt(first_train)}, {self.where(view)}: the model fits the training targets and "
            "predicts held-out data at chance"
        )
        hint = (
            "check that the training targets are not visible in the inputs (a language model's targets shifted by one "
            "token, a decoder fed the tokens it must predict), that validation inputs and labels are paired and "
            "preprocessed as the training ones are, and, for a network that memorises its training points, its "
            "initialisation and capacity"
        )
        return [self.finding(view, msg, tensor=name, value=self.acc_best, threshold=bound, hint=hint)]

    def get_state(self) -> dict[str, Any]:
        return {
            "train_acc": self.train_acc.get_state(),
            "acc_points": self.acc_points,
            "acc_best": self.acc_best,
            "acc_first": self.acc_first,
            "classes": self.classes,
            "evals": self.evals,
            "flat_reported": self.flat_reported,
            "train": self.train.get_state(),
            "best_val": self.best_val,
            "train_at_best": self.train_at_best,
            "streak": self.streak,
            "floor": self.floor.get_state(),
            "start": self.start.get_state() if self.start is not None else None,
            "start_reported": self.start_reported,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.train.set_state(state.get("train", {}))
        self.best_val = state.get("best_val")
        self.train_at_best = state.get("train_at_best")
        self.streak = int(state.get("streak", 0))
        self.floor.set_state(state.get("floor"))
        self.evals = int(state.get("evals", 0))
        self.flat_reported = bool(state.get("flat_reported", False))
        self.train_acc.set_state(state.get("train_acc", {}))
        self.acc_points = int(state.get("acc_points", 0))
        self.acc_best = state.get("acc_best")
        self.acc_first = state.get("acc_first")
        self.classes = state.get("classes")
        if self.start is not None and state.get("start"):
            self.start.set_state(state["start"])
        self.start_reported = bool(state.get("start_reported", False))
