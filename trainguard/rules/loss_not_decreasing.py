"""`loss_not_decreasing`: the loss stopped going down.

The loss is averaged over blocks of `num_steps` training steps; at the end of each block its mean
must be at least `diff_percent` percent below the best earlier block's mean; `patience` blocks in
a row that do not are reported.
Averaging over blocks (SageMaker compares two single steps) keeps batch noise from alarming; once
the loss has halved since the first step, a plateau is convergence and is not reported.
SageMaker Debugger's `num_steps`, `diff_percent`, `mode` and `use_losses_collection`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator

from trainguard.api.enums import RuleCategory
from trainguard.rules import base, signals
from trainguard.rules.view import StepView


def normalise_mode(v: object) -> object:
    """Accept SageMaker's TRAIN/EVAL/GLOBAL spellings: GLOBAL means the training loss here."""
    if isinstance(v, str):
        v = v.lower()
        return "train" if v == "global" else v
    return v


class LossNotDecreasing(base.Rule):
    name = "loss_not_decreasing"
    category = RuleCategory.LOSS
    summary = (
        "The mean loss over the last `num_steps` views is not `diff_percent` below the best earlier block."
    )
    hint = (
        "check the learning rate (too low, or decayed to zero), that optimizer.step() and zero_grad() run, "
        "and that the labels match the inputs"
    )

    class Params(base.Params):
        num_steps: int = Field(
            default=100,
            ge=1,
            description="Training steps per block (the loss is averaged over each). With `patience` 4 the rule "
            "needs 400 steps without progress, and a 600-step run can still be reported.",
        )
        diff_percent: float = Field(
            default=1.0,
            ge=0,
            lt=100,
            description="Percent the block mean must drop below the best earlier block (SageMaker: 0.1, which a "
            "loss falling 0.4% per 100 steps, an LR 1e4x too small, passes).",
        )
        mode: Literal["train", "eval"] = Field(
            default="train", description="Which loss: train or eval (SageMaker's TRAIN/EVAL/GLOBAL accepted)."
        )
        use_losses_collection: bool = Field(
            default=True,
            description="Without a loss scalar, use the mean of the first tensor in the losses collection.",
        )
        patience: int = Field(
            default=4,
            ge=1,
            description="Blocks in a row that must fail to improve: on a slowly falling, noisy loss single blocks "
            "miss by chance (two in a row still did on the throughput benchmark's healthy run), and the "
            "detection benchmark's deeper sigmoid net sits near chance level for 300-400 steps before it learns "
            "(three in a row, once blocks are aligned to the steps).",
        )
        ignore_below_fraction: float | None = Field(
            default=0.5,
            gt=0,
            le=1,
            description="Stay quiet once the best block mean is below this fraction of the first loss: the run "
            "learned, and a plateau then is convergence, not a fault. None reports every plateau (SageMaker).",
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the first scalar named *loss*."
        )

        _mode = field_validator("mode", mode="before")(normalise_mode)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: LossNotDecreasing.Params = self.params  # type: ignore[assignment]
        self.read = signals.LossReader(
            mode=p.mode, name=p.loss_name, use_losses_collection=p.use_losses_collection
        )
        self.block_sum = 0.0
        self.block_n = 0
        self.block_start: int | None = None
        self.last_step: int | None = None
        self.failed = 0
        self.best: float | None = None
        self.first: float | None = None

    def check(self, view: StepView) -> list[base.Finding]:
        p: LossNotDecreasing.Params = self.params  # type: ignore[assignment]
        loss = self.read(view)
        if loss is None or not math.isfinite(loss):
            return []
        self.first = loss if self.first is None else self.first
        if self.block_start is None:
            self.block_start = view.step
        self.block_sum += loss
        self.block_n += 1
        gap = signals.steps_since(self.last_step, view.step)
        self.last_step = view.step
        # blocks are measured in training steps, as SageMaker's num_steps is, not in saved views: a
        # block ends with the last view before the next block, the one the save interval says is next
        if view.step + gap < self.block_start + p.num_steps:
            return []
        mean = self.block_sum / self.block_n
        self.block_sum, self.block_n, self.block_start = 0.0, 0, None
        best, self.best = self.best, mean if self.best is None else min(self.best, mean)
        if best is None or mean < best - abs(best) * p.diff_percent / 100.0:
            self.failed = 0
            return []
        self.failed += 1
        if self.failed < p.patience:
            return []
        if p.ignore_below_fraction is not None and best < p.ignore_below_fraction * self.first:
            return []  # converged after real progress
        msg = (
            f"{p.mode} loss: mean {base.fmt(mean)} over the last {p.num_steps} steps is not {base.fmt(p.diff_percent)}% "
            f"below the best earlier block ({base.fmt(best)}), {self.failed} blocks in a row, {self.where(view)}"
        )
        return [self.finding(view, msg, tensor="loss", value=mean, threshold=best)]

    def get_state(self) -> dict[str, Any]:
        return {
            "sum": self.block_sum, "n": self.block_n, "start": self.block_start, "last": self.last_step, "failed": self.failed, "best": self.best, "first": self.first
        }  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self.block_sum = float(state.get("sum", 0.0))
        self.block_n = int(state.get("n", 0))
        self.block_start = state.get("start")
        self.last_step = state.get("last")
        self.failed = int(state.get("failed", 0))
        self.best = state.get("best")
        self.first = state.get("first")
