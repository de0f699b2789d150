"""`overtraining`: the validation loss has turned upwards; time to stop (early stopping).

Prechelt's criteria ("Early stopping - but when?", 1998) on eval points, averaged over strips of
`strip_length` eval points: `up` (UP_s, the default) reports when the validation loss rose over
`strips` successive strips; `gl` (GL_alpha) when it is more than `alpha` percent above its best.
Validation losses are floored at a tenth of the first training loss (the untrained model's), so
noise on a loss near zero is no rise: 0.027 -> 0.033 on a run that started at 0.69 is not one.
`patience` is SageMaker's Overtraining (chosen automatically when its parameters are given): no
improvement by `delta` for `patience_validation` (validation) or `patience_train` (train) eval points.

Beside `up` and `gl`, a faster path on single eval points: the validation loss `rise_percent` or more
above its best (floored as above) at `rise_patience` eval points in a row while the training loss
kept falling (its mean since the previous eval point below the one at the best): train and
validation parting ways, the way SageMaker's patience on the validation loss names it, without
waiting for two strips of five eval points.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base, shared_loss
from trainguard.rules.step_view import StepView

_SAGEMAKER_KEYS = ("patience_train", "patience_validation", "delta")


class Overtraining(base.Rule):
    name = "overtraining"
    example_params: ClassVar[Mapping[str, Any]] = {"strip_length": 2}
    """For the state round-trip test: strips of 2 eval points, so a short run holds several."""
    category = RuleCategory.GENERALISATION
    default_action = Action.NOTIFY
    needs = "eval loss"
    summary = (
        "Validation loss turning upwards: Prechelt's UP (default) or GL criterion, or SageMaker's patience."
    )
    hint = "stop and keep the checkpoint with the best validation loss (early stopping), or add regularisation or data"

    class Params(base.Params):
        criterion: Literal["up", "gl", "patience"] = Field(
            default="up",
            description="up: Prechelt UP_s; gl: Prechelt GL_alpha; patience: SageMaker's Overtraining.",
        )
        strips: int = Field(
            default=2, ge=1, description="UP_s: successive strips with a rising validation loss."
        )
        strip_length: int = Field(
            default=5,
            ge=1,
            description="Eval points per strip (Prechelt's k = 5); a strip's value is their mean. Single eval "
            "points are too noisy: UP_3 on them fired on half the healthy benchmark runs.",
        )
        alpha: float = Field(
            default=5.0, gt=0, description="GL_alpha: percent above the best validation loss (strip means)."
        )
        patience_train: int = Field(
            default=5,
            ge=1,
            description="SageMaker: eval intervals without a train-loss improvement by delta.",
        )
        patience_validation: int = Field(
            default=10, ge=1, description="SageMaker: eval points without a val-loss improvement by delta."
        )
        delta: float = Field(
            default=0.01, ge=0, description="SageMaker: the absolute improvement that counts."
        )
        rise_percent: float | None = Field(
            default=30.0,
            gt=0,
            description="The parting path: the val loss this many percent above its best (both floored) at "
            "`rise_patience` eval points in a row while the training loss fell since the best. None: off (it is off "
            "under the `patience` criterion too, which is SageMaker's alone).",
        )
        rise_patience: int = Field(
            default=3,
            ge=1,
            description="Eval points in a row the parting path needs. On the realistic PyTorch suite's calibration "
            "seeds healthy runs stay below 15% above their best over 3 eval points in a row (below 21% over 2; a "
            "noisy numpy run with 16 eval points reaches 26% over 2), a training set of 128 samples 43-52%.",
        )
        loss_floor_fraction: float = Field(default=0.1, ge=0, le=1, description=shared_loss.LOSS_FLOOR_DOC)
        eval_loss_name: str | None = Field(
            default=None, description="Eval scalar to read; default `loss`, else the first *loss*."
        )

        @model_validator(mode="before")
        @classmethod
        def _sagemaker_criterion(cls, data: Any) -> Any:
            # A ported SageMaker config names only patience_*/delta; it means SageMaker's criterion.
            if isinstance(data, dict) and "criterion" not in data and any(k in data for k in _SAGEMAKER_KEYS):
                return {**data, "criterion": "patience"}
            return data

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: Overtraining.Params = self.params  # type: ignore[assignment]
        self.read_val = shared_loss.LossReader(mode="eval", name=p.eval_loss_name)
        self.train = shared_loss.TrainMean()
        self.s: dict[str, Any] = self._fresh()
        self.floor = shared_loss.LossFloor(p.loss_floor_fraction)

    @staticmethod
    def _fresh() -> dict[str, Any]:
        return {
            "strip_sum": 0.0, "strip_n": 0, "e_opt": None, "prev": None, "ups": 0,
            "best_val": None, "since_val": 0, "best_train": None, "since_train": 0,
            "rise_best": None, "rise_train": None, "rises": 0,
        }  # fmt: skip

    def has_input(self, view: StepView) -> bool:
        return self.read_val(view) is not None

    def check(self, view: StepView) -> list[base.Finding]:
        p: Overtraining.Params = self.params  # type: ignore[assignment]
        rising = p.rise_percent is not None and p.criterion != "patience"
        if p.criterion == "patience" or self.floor.first is None or rising:
            self.train.push(view)
        if self.train.last is not None and self.floor.first is None:
            self.floor(self.train.last)  # the floor is a fraction of the first *training* loss
        val = self.read_val(view) if view.eval_scalars else None
        if val is None or not math.isfinite(val):
            return []
        if p.criterion == "patience":
            return self._patience(view, val, p)
        parting = self._parting(view, val, p) if rising else []
        strips = self._strips(view, val, p)
        return parting or strips

    def _parting(self, view: StepView, val: float, p: Params) -> list[base.Finding]:
        """The parting path: val `rise_percent` above its best for `rise_patience` eval points while train fell."""
        s = self.s
        train = self.train.take()
        if train is None or not math.isfinite(train):
            return []
        v = self.floor(val)
        if s["rise_best"] is None or v < s["rise_best"]:
            s["rise_best"], s["rise_train"], s["rises"] = v, train, 0
            return []
        rise = 100.0 * (v / s["rise_best"] - 1.0) if s["rise_best"] > 0 else 0.0
        fell = train < s["rise_train"]
        s["rises"] = s["rises"] + 1 if rise >= (p.rise_percent or 0.0) and fell else 0
        if s["rises"] < p.rise_patience:
            return []
        msg = (
            f"val loss {base.fmt(val)} is {base.fmt(rise)}% above its best {base.fmt(s['rise_best'])}, at or above "
            f"{base.fmt(p.rise_percent)}% for {s['rises']} eval point{'s' if s['rises'] > 1 else ''} in a row, while the "
            f"training loss fell to {base.fmt(train)} from {base.fmt(s['rise_train'])} at the best {self.where(view)}"
        )
        return [self.finding(view, msg, tensor="loss", value=rise, threshold=p.rise_percent)]

    def _strips(self, view: StepView, val: float, p: Params) -> list[base.Finding]:
        """Prechelt's UP_s or GL_alpha on strip means."""
        s = self.s
        s["strip_sum"] += self.floor(val)
        s["strip_n"] += 1
        if s["strip_n"] < p.strip_length:
            return []
        e = s["strip_sum"] / s["strip_n"]
        s["strip_sum"], s["strip_n"] = 0.0, 0
        s["e_opt"] = e if s["e_opt"] is None else min(s["e_opt"], e)
        rose = s["prev"] is not None and e > s["prev"]
        s["ups"] = s["ups"] + 1 if rose else 0
        s["prev"] = e
        strip = f"strip mean of {p.strip_length} eval points" if p.strip_length > 1 else "value"
        if p.criterion == "gl":
            gl = 100.0 * (e / s["e_opt"] - 1.0) if s["e_opt"] > 0 else 0.0
            if gl <= p.alpha:
                return []
            msg = (
                f"val loss {base.fmt(e)} ({strip}) is {base.fmt(gl)}% above its best {base.fmt(s['e_opt'])}, "
                f"above GL alpha {base.fmt(p.alpha)}% {self.where(view)}"
            )
            return [self.finding(view, msg, tensor="loss", value=gl, threshold=p.alpha)]
        if s["ups"] < p.strips:
            return []
        msg = (
            f"val loss rose over {s['ups']} successive strips to {base.fmt(e)} ({strip}; best {base.fmt(s['e_opt'])}), "
            f"reaching UP_{p.strips} {self.where(view)}"
        )
        return [self.finding(view, msg, tensor="loss", value=float(s["ups"]), threshold=float(p.strips))]

    def _patience(self, view: StepView, val: float, p: Params) -> list[base.Finding]:
        s = self.s
        if s["best_val"] is None or val < s["best_val"] - p.delta:
            s["best_val"], s["since_val"] = val, 0
        else:
            s["since_val"] += 1
        train = self.train.take()
        if train is not None and math.isfinite(train):
            if s["best_train"] is None or train < s["best_train"] - p.delta:
                s["best_train"], s["since_train"] = train, 0
            else:
                s["since_train"] += 1
        if s["since_val"] >= p.patience_validation:
            msg = (
                f"val loss {base.fmt(val)} has not improved by {base.fmt(p.delta)} on its best {base.fmt(s['best_val'])} "
                f"for {s['since_val']} eval points (patience_validation {p.patience_validation}) {self.where(view)}"
            )
            return [
                self.finding(
                    view,
                    msg,
                    tensor="loss",
                    value=float(s["since_val"]),
                    threshold=float(p.patience_validation),
                )
            ]
        if s["since_train"] >= p.patience_train:
            msg = (
                f"train loss {base.fmt(train)} has not improved by {base.fmt(p.delta)} on its best {base.fmt(s['best_train'])} "
                f"for {s['since_train']} eval intervals (patience_train {p.patience_train}) {self.where(view)}"
            )
            return [
                self.finding(
                    view, msg, tensor="loss", value=float(s["since_train"]), threshold=float(p.patience_train)
                )
            ]
        return []

    def get_state(self) -> dict[str, Any]:
        return {**self.s, "train": self.train.get_state(), "floor": self.floor.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        self.s = self._fresh()
        self.s.update({k: v for k, v in state.items() if k in self.s})
        self.train.set_state(state.get("train", {}))
        self.floor.set_state(state.get("floor"))
