"""`overfit`: the validation loss sits well above the training loss and stopped improving.

At each eval point (a view with an eval-mode loss) the gap (val - train) / train is computed
against the mean training loss since the previous eval point (SageMaker's Overfit, with
`patience` and `ratio_threshold`). A gap alone is normal, so by default it counts only while the
validation loss sets no new best; `patience` consecutive eval points are needed.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from trainguard.rules import base, signals
from trainguard.rules.view import StepView


class Overfit(base.Rule):
    name = "overfit"
    summary = "Validation loss more than `ratio_threshold` above the training loss for `patience` eval points, not improving."
    hint = "add regularisation (weight decay, dropout, augmentation), get more data, or stop early at the best checkpoint"

    class Params(base.Params):
        ratio_threshold: float = Field(
            default=0.1, gt=0, description="(val - train) / train above which the gap counts."
        )
        patience: int = Field(
            default=3, ge=1, description="Consecutive eval points the gap must persist (SageMaker: 1)."
        )
        gate_on_val_progress: bool = Field(
            default=True,
            description="Count the gap only at eval points where the validation loss sets no new best.",
        )
        eval_loss_name: str | None = Field(
            default=None, description="Eval scalar to read; default `loss`, else the first *loss*."
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: Overfit.Params = self.params  # type: ignore[assignment]
        self.train = signals.TrainMean()
        self.read_val = signals.LossReader(mode="eval", name=p.eval_loss_name)
        self.best_val: float | None = None
        self.streak = 0

    def check(self, view: StepView) -> list[base.Finding]:
        p: Overfit.Params = self.params  # type: ignore[assignment]
        self.train.push(view)
        val = self.read_val(view) if view.eval_scalars else None
        if val is None or not math.isfinite(val):
            return []
        train = self.train.take()
        improved = self.best_val is None or val < self.best_val
        self.best_val = val if improved else self.best_val
        if train is None or train == 0:
            return []
        gap = (val - train) / abs(train)
        counts = gap > p.ratio_threshold and not (p.gate_on_val_progress and improved)
        self.streak = self.streak + 1 if counts else 0
        if self.streak < p.patience:
            return []
        msg = (
            f"val loss {base.fmt(val)} is {base.fmt(gap * 100)}% above the train loss {base.fmt(train)}, above "
            f"{base.fmt(p.ratio_threshold * 100)}% for {self.streak} eval points"
            f"{' without a new best val loss' if p.gate_on_val_progress else ''} {self.where(view)}"
        )
        return [self.finding(view, msg, tensor="loss", value=gap, threshold=p.ratio_threshold)]

    def get_state(self) -> dict[str, Any]:
        return {"train": self.train.get_state(), "best_val": self.best_val, "streak": self.streak}

    def set_state(self, state: dict[str, Any]) -> None:
        self.train.set_state(state.get("train", {}))
        self.best_val = state.get("best_val")
        self.streak = int(state.get("streak", 0))
