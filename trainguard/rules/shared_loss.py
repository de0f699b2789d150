"""Helpers several rules share, about the loss: reading it from a view (`LossReader`), whether it
still improves or never did (`Progress`, `LossGate`: outcome gating of soft symptoms, with its
`GatedParams`), the training loss averaged between eval points (`TrainMean`), a floor under losses
near zero (`LossFloor`), the range a loss moves in (`LossRange`) and the mean of a window with its
standard error (`Spread`). Helpers about the model and its tensors are in `shared.py`.

Each helper holds its own small state and saves it as JSON-able values, so the rule that owns it
stays restorable, and keeps a bounded amount of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from trainguard.api.enums import Collection
from trainguard.rules import base
from trainguard.rules.shared import steps_since
from trainguard.rules.step_view import COL, StepView

EVAL_PREFIXES = ("val", "eval", "test", "valid")
"""A train-mode scalar named like these (val_loss) is a validation loss, never the training loss."""


class LossReader:
    """Reads the loss of a view.

    Train mode: the scalar `name`, else `loss`, else the first train scalar whose name contains
    "loss", not "scale" (a mixed-precision loss scale, `loss_scale`, is no loss) and does not start like a
    validation loss (val_loss), else the mean of the first tensor
    in the `losses` collection; once `loss` has been read, a view without it (its value was not finite
    and not kept) has no loss. Eval mode: the same among eval scalars, else a train-mode scalar
    named like a validation loss (val_loss recorded without mode="eval").

    With `single`, a run that records several losses and no total (`d_loss` and `g_loss` of a GAN,
    each task's loss without their sum) has no loss to read: which of them should go down is not
    known, and an adversarial loss need not go down at all. Once a second such loss has been seen,
    none is read again (a view may carry only one of them: the one recorded after an optimizer step
    can land on an unsaved step).
    """

    def __init__(
        self,
        *,
        mode: str = "train",
        name: str | None = None,
        use_losses_collection: bool = True,
        single: bool = False,
    ) -> None:
        self.mode = mode
        self.name = name
        self.use_losses_collection = use_losses_collection
        self.single = single
        self._losses_seen: set[str] = set()
        self._names: tuple[str, ...] | None = None
        self._row: int | None = None
        self._picked: dict[tuple[bool, frozenset[str]], str | None] = {}
        self._total_seen = False
        """A train scalar named exactly `loss` was read: no other scalar stands in for it at a view without it."""

    def __call__(self, view: StepView) -> float | None:
        if self.mode == "eval":
            found = self._scalar(view.eval_scalars, validation_only=False)
            return (
                found
                if found is not None or not view.scalars
                else self._scalar(view.scalars, validation_only=True)
            )
        found = self._scalar(view.scalars, validation_only=False)
        if found is not None or not self.use_losses_collection or not view.names:
            return found
        if self._names is not view.names and self._names != view.names:
            self._names = view.names
            rows = view.rows(collections=[Collection.LOSSES.value])
            self._row = int(rows[0]) if len(rows) else None
        return None if self._row is None else float(view.stats[self._row, COL["mean"]])

    def _scalar(self, scalars: Mapping[str, float], *, validation_only: bool) -> float | None:
        if not scalars:
            return None
        if self.name is not None:
            value = scalars.get(self.name)
            return None if value is None else float(value)
        if not validation_only and "loss" in scalars:
            self._total_seen = True
            return float(scalars["loss"])
        if not validation_only and self._total_seen:
            return None  # the run records `loss`; a view without it (a non-finite loss dropped) has none
        key = (validation_only, frozenset(scalars))
        if key not in self._picked:
            if len(self._picked) > 64:
                self._picked.clear()  # bounded: scalar sets vary little within a run
            want_validation = True if validation_only else (False if self.mode == "train" else None)
            candidates = [
                k
                for k in sorted(scalars)
                if "loss" in k.lower()
                and "scale" not in k.lower()
                and (want_validation is None or k.lower().startswith(EVAL_PREFIXES) == want_validation)
            ]
            self._picked[key] = (
                candidates[0] if candidates and not (self.single and len(candidates) > 1) else None
            )
            if not validation_only and len(self._losses_seen) < 2:
                self._losses_seen.update(candidates)
        if self.single and len(self._losses_seen) > 1:
            return None
        picked = self._picked[key]
        return None if picked is None else float(scalars[picked])


class Progress:
    """Whether a series (usually the loss) still improves: an EMA, its best value, and the
    training step at which the EMA last beat the best by `min_delta` (relative).

    Both time scales are in training steps, not in views, so the verdict does not depend on the
    save interval: the EMA forgets with time constant `ema_steps` (each view weighs
    1 - exp(-gap / ema_steps), gap = steps since the previous view), and the series counts as
    improving while the best is less than `patience` steps old.
    """

    def __init__(self, *, ema_steps: float, min_delta: float, patience: int) -> None:
        self.ema_steps = ema_steps
        self.min_delta = min_delta
        self.patience = patience
        self.ema: float | None = None
        self.best: float | None = None
        self.best_step: int | None = None
        self.last_step: int | None = None

    def push(self, x: float | None, step: int) -> None:
        if x is None or not math.isfinite(x):
            return
        gap = steps_since(self.last_step, step)
        self.last_step = step
        alpha = 1.0 - math.exp(-gap / self.ema_steps)
        self.ema = x if self.ema is None else self.ema + alpha * (x - self.ema)
        if self.best is None or self.ema < self.best - self.min_delta * abs(self.best):
            self.best = self.ema
            self.best_step = step
        elif self.best_step is None:  # restored from a state without it: count from here
            self.best_step = step

    @property
    def improving(self) -> bool:
        """True while the best value is recent. False when no value was ever seen."""
        if self.ema is None or self.best_step is None or self.last_step is None:
            return self.ema is not None
        return self.last_step - self.best_step < self.patience

    def get_state(self) -> dict[str, Any]:
        return {"ema": self.ema, "best": self.best, "best_step": self.best_step, "ema_step": self.last_step}

    def set_state(self, state: dict[str, Any]) -> None:
        self.ema = state.get("ema")
        self.best = state.get("best")
        self.best_step = state.get("best_step")
        self.last_step = state.get("ema_step")


class TrainMean:
    """Mean of the training loss since the last eval point (the last value if none came since)."""

    def __init__(self) -> None:
        self.read = LossReader(mode="train")
        self.total = 0.0
        self.n = 0
        self.last: float | None = None

    def push(self, view: StepView) -> None:
        x = self.read(view)
        if x is not None and math.isfinite(x):
            self.total += x
            self.n += 1
            self.last = x

    def take(self) -> float | None:
        """Return the mean since the last call and start a new interval."""
        mean = self.total / self.n if self.n else self.last
        self.total, self.n = 0.0, 0
        return mean

    def get_state(self) -> dict[str, Any]:
        return {"total": self.total, "n": self.n, "last": self.last}

    def set_state(self, state: dict[str, Any]) -> None:
        self.total = float(state.get("total", 0.0))
        self.n = int(state.get("n", 0))
        self.last = state.get("last")


class LossFloor:
    """A floor under the loss, `fraction` of the first positive loss seen. Ratios of a loss that
    approaches zero (an easy task) blow up without meaning; measured against this floor, a swing of
    0.001 -> 0.04 on a run that started at 2.3 stays a small one."""

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction
        self.first: float | None = None

    def __call__(self, loss: float) -> float:
        """Return max(loss, fraction * first loss), remembering the first loss on the way."""
        if self.first is None and loss > 0 and math.isfinite(loss):
            self.first = loss
        return max(loss, self.fraction * self.first) if self.first is not None else loss

    def get_state(self) -> float | None:
        return self.first

    def set_state(self, first: float | None) -> None:
        self.first = None if first is None else float(first)


LOSS_FLOOR_DOC = (
    "Losses are floored at this fraction of the first training loss before ratios are taken, so a "
    "loss approaching zero (an easy task) does not turn tiny differences into large ratios."
)


class LossRange:
    """The first and the lowest finite loss seen so far, how many finite losses there were, and
    the training steps of the first and the latest (when pushed with a step)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.lowest: float | None = None
        self.count = 0
        self.first_step: int | None = None
        self.last_step: int | None = None

    def push(self, x: float | None, step: int | None = None) -> None:
        if x is None or not math.isfinite(x):
            return
        self.first = x if self.first is None else self.first
        self.lowest = x if self.lowest is None else min(self.lowest, x)
        self.count += 1
        if step is not None:
            self.first_step = step if self.first_step is None else self.first_step
            self.last_step = step

    @property
    def span(self) -> int:
        """Training steps from the first loss to the latest (0 without steps)."""
        return 0 if self.first_step is None or self.last_step is None else self.last_step - self.first_step

    def get_state(self) -> dict[str, Any]:
        return {"first": self.first, "lowest": self.lowest, "views": self.count, "first_step": self.first_step,
                "last_step": self.last_step}  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self.first = None if state.get("first") is None else float(state["first"])
        self.lowest = None if state.get("lowest") is None else float(state["lowest"])
        self.count = int(state.get("views", 0))
        self.first_step = state.get("first_step")
        self.last_step = state.get("last_step")


class GatedParams(base.Params):
    """Parameters of a soft symptom that only counts while the training loss is not improving."""

    gate_on_loss: bool = Field(
        default=True,
        description="Report only while the training loss has stopped improving (outcome gating, as AUTOTRAINER "
        "does): the symptom alone is common in healthy runs. Without any loss in the run the gate stays open.",
    )
    gate_patience: int = Field(
        default=100,
        ge=1,
        description="The loss counts as improving while its EMA (time constant 50 training steps) set a new best "
        "within this many training steps. In steps, not views, so the gate does not depend on the save interval.",
    )
    gate_min_delta: float = Field(
        default=0.01, ge=0, description="Relative drop of the loss EMA that counts as a new best (0.01 = 1%)."
    )
    gate_stuck_steps: int = Field(
        default=50,
        ge=0,
        description="The gate also opens once the loss has stayed within `gate_stuck_drop` of its first value for "
        "this many training steps: a run stuck from the start (a deep sigmoid net at chance level) shows no progress "
        "to wait out. On the detection benchmark's calibration seeds every healthy run, slow starters included, is "
        "7% or more below its first loss within 50 steps, and runs stuck from the start stay within 2%. 0 turns "
        "this off.",
    )
    gate_stuck_drop: float = Field(
        default=0.05,
        ge=0,
        description="Relative fall below the first loss (0.05 = 5%) that counts as progress since the start.",
    )


class LossGate:
    """Outcome gate: tracks the training loss and says whether a soft symptom may be reported.

    Open when the loss EMA set no new best for `gate_patience` training steps, or at once after
    `gate_stuck_steps` steps in which no loss fell `gate_stuck_drop` below the first one (no
    progress since the start). Closed again as soon as the loss makes progress.
    """

    EMA_STEPS = 50.0
    """Time constant of the loss EMA in training steps (a weight of ~0.1 per view at save_interval 5)."""

    def __init__(self, params: GatedParams) -> None:
        self.enabled = params.gate_on_loss
        self.read = LossReader()
        self.progress = Progress(
            ema_steps=self.EMA_STEPS, min_delta=params.gate_min_delta, patience=params.gate_patience
        )
        self.stuck_steps = params.gate_stuck_steps
        self.stuck_drop = params.gate_stuck_drop
        self.range = LossRange()

    def push(self, view: StepView) -> float | None:
        """Read the view's loss into the gate; return it (None: the view has none)."""
        x = self.read(view)
        self.progress.push(x, view.step)
        self.range.push(x, view.step)
        return x

    @property
    def stuck(self) -> bool:
        """True when the loss has made no progress since the start: `stuck_steps` steps, no loss in
        them `stuck_drop` below the first."""
        first, lowest = self.range.first, self.range.lowest
        return (
            self.stuck_steps > 0
            and self.range.span >= self.stuck_steps
            and first is not None
            and lowest is not None
            and lowest > first - self.stuck_drop * abs(first)
        )

    @property
    def open(self) -> bool:
        """True when the symptom may be reported: gating is off, or the loss has stopped improving."""
        return not self.enabled or not self.progress.improving or self.stuck

    @property
    def note(self) -> str:
        """The clause a gated finding ends with."""
        if not self.enabled:
            return ""
        if self.stuck and self.range.first is not None:
            return (
                f" while the loss has stayed within {base.fmt(self.stuck_drop * 100)}% of its first value "
                f"{base.fmt(self.range.first)} for {self.range.span} steps"
            )
        return " while the loss is not improving"

    def get_state(self) -> dict[str, Any]:
        return {**self.progress.get_state(), **self.range.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        self.progress.set_state(state)
        self.range.set_state(state)


class Spread:
    """The mean of a series (a window of losses) and the standard error of that mean, from the sum and
    sum of squares of the values less the first one (no cancellation on losses of 1e5). Two windows
    differ beyond the batch noise when their means are `z` standard errors apart (`apart`)."""

    def __init__(self) -> None:
        self.shift: float | None = None
        self.sum = 0.0
        self.sq = 0.0
        self.n = 0

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        spread = cls()
        for x in values:
            spread.push(x)
        return spread

    def push(self, x: float) -> None:
        self.shift = x if self.shift is None else self.shift
        d = x - self.shift
        self.sum += d
        self.sq += d * d
        self.n += 1

    @property
    def mean(self) -> float:
        return (self.shift or 0.0) + self.sum / self.n if self.n else math.nan

    @property
    def var(self) -> float:
        """The sample variance (0 for fewer than two values, or beyond float range)."""
        if self.n < 2:
            return 0.0
        m = self.sum / self.n
        var = max(self.sq / self.n - m * m, 0.0) * self.n / (self.n - 1)
        return var if math.isfinite(var) else 0.0

    @property
    def sq_error(self) -> float:
        """The squared standard error of the mean (0 without a spread)."""
        return self.var / self.n if self.n else 0.0

    def get_state(self) -> list[float | int | None]:
        return [self.shift, self.sum, self.sq, self.n]

    def set_state(self, state: Sequence[Any] | None) -> None:
        shift, total, sq, n = state if state and len(state) == 4 else (None, 0.0, 0.0, 0)
        self.shift = None if shift is None else float(shift)
        self.sum, self.sq, self.n = float(total), float(sq), int(n)


def error_of_difference(a: Spread, b: Spread) -> float:
    """The standard error of a.mean - b.mean (0 when neither has a spread)."""
    return math.sqrt(a.sq_error + b.sq_error)
