"""`diverging_loss`: a finite training loss running away, downwards below zero or steadily upwards.

The loss is averaged over windows of `window_steps` training steps. Over the last three windows:
- falling without bound: every window below the one before, the last one negative and at least
  `growth` times as far below the run's first loss as the first of the three and as any loss in the
  run's first window, and the fall not slowing down (the last drop at least `keep_pace` of the one
  before). Distances are taken from the first loss, not from zero: a likelihood (a Gaussian NLL, a
  negative ELBO) is below zero by design and adding a constant to it changes nothing, so the same
  fall must read the same wherever zero lies. A loss with a floor decelerates towards it, and a
  policy-gradient loss wanders around 0 within the size it had from the start;
  `nll_loss` on raw logits (no log_softmax) has no floor and falls from about 0 to -1e5, steadily;
- growing without bound: every window above the one before, the last at least `growth` times the
  first (floored at `floor_fraction` of the first loss, so noise on a loss near 0 is no growth), and
  the rise not slowing down: steps that are too large and getting larger (a warmup that never
  stops) before anything turns non-finite.
Either way the last window's mean must differ from the first's by `min_significance` standard
errors, estimated from the spread of the losses within the two windows: a noisy loss (batches of 8
saved every 10th step, five losses a window) rises 2x over three windows by chance.
A run that records several losses and no total (a GAN's `d_loss` and `g_loss`) is not judged.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base, shared, shared_loss
from trainguard.rules.step_view import StepView


class DivergingLoss(base.Rule):
    name = "diverging_loss"
    category = RuleCategory.LOSS
    default_action = Action.NOTIFY
    needs = "training loss"
    training_views_only = True
    summary = (
        "A finite training loss falling without bound below zero, or growing steadily by a large factor."
    )
    hint = "check the loss function (nll_loss takes log-probabilities), the learning-rate schedule and the step size"

    class Params(base.Params):
        window_steps: int = Field(
            default=50, ge=1, description="Training steps per window; the loss is averaged over each."
        )
        growth: float = Field(
            default=2.0,
            gt=1,
            description="How many times the first of the last three windows the last one must be (in magnitude).",
        )
        keep_pace: float = Field(
            default=0.7,
            ge=0,
            description="The last window's change must be at least this share of the one before: a loss "
            "approaching a floor (or a ceiling) slows down; one running away does not.",
        )
        floor_fraction: float = Field(default=0.1, ge=0, le=1, description=shared_loss.LOSS_FLOOR_DOC)
        min_significance: float = Field(
            default=2.0,
            ge=0,
            description="Standard errors (from the spread of the losses within the windows) by which the last "
            "window's mean must differ from the first's. On the calibration seeds of the detection benchmarks a "
            "healthy run with batches of 8 saved every 10th step rose 2x over three windows at 1.7, harmless faults "
            "at 1.2-1.6, runaway losses at 2.6 or more. Windows of one loss each (a save interval as long as the "
            "window) have no spread and are not judged by it.",
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the only scalar named *loss*."
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: DivergingLoss.Params = self.params  # type: ignore[assignment]
        self.read = shared_loss.LossReader(name=p.loss_name, single=True)
        self.sum = 0.0
        self.sq = 0.0
        self.n = 0
        self.shift = 0.0
        """The window's first loss: sums are taken of the losses minus it (no cancellation at 1e5)."""
        self.start: int | None = None
        self.last_step: int | None = None
        self.first: float | None = None
        self.first_step = 0
        self.scale = 0.0
        """The largest distance of a loss from the first one in the run's first window."""
        self.means: list[float] = []
        """Means of the last three complete windows, oldest first."""
        self.errors: list[float] = []
        """The squared standard errors of those means (0 for a window of one loss)."""

    def has_input(self, view: StepView) -> bool:
        return self.read(view) is not None

    def check(self, view: StepView) -> list[base.Finding]:
        p: DivergingLoss.Params = self.params  # type: ignore[assignment]
        loss = self.read(view)
        if loss is None or not math.isfinite(loss):
            return []  # a non-finite loss is exploding_tensor's
        if self.first is None:
            self.first, self.first_step = loss, view.step
        if view.step < self.first_step + p.window_steps:
            self.scale = max(self.scale, abs(loss - self.first))
        if self.start is None:
            self.start, self.shift = view.step, loss
        d = loss - self.shift
        self.sum += d
        self.sq += d * d  # inf beyond float range, where `**` would raise
        self.n += 1
        gap = shared.steps_since(self.last_step, view.step)
        self.last_step = view.step
        if view.step + gap < self.start + p.window_steps:
            return []
        mean = self.sum / self.n
        var = max(self.sq / self.n - mean * mean, 0.0) * self.n / (self.n - 1) if self.n > 1 else 0.0
        if not math.isfinite(var):
            var = 0.0  # losses beyond float range have no usable spread: their growth alone decides
        self.means = [*self.means[-2:], self.shift + mean]
        self.errors = [*self.errors[-2:], var / self.n]
        self.sum, self.sq, self.n, self.start = 0.0, 0.0, 0, None
        if len(self.means) < 3:
            return []
        m1, m2, m3 = self.means
        error = math.sqrt(self.errors[0] + self.errors[-1])
        if error > 0 and abs(m3 - m1) < p.min_significance * error:
            return []  # within the batch noise of the two windows
        first = self.first or 0.0
        went = max(first - m1, self.scale)
        # how far below the first loss it had gone by the first of the three windows, or in the first steps
        falling = (
            m1 > m2 > m3 and m3 < 0 and first - m3 >= p.growth * went and (m2 - m3) >= p.keep_pace * (m1 - m2)
        )
        rising = (
            0 < m1 < m2 < m3
            and m3 >= p.growth * max(m1, p.floor_fraction * abs(first))
            and (m3 - m2) >= p.keep_pace * (m2 - m1)
        )
        if not (falling or rising):
            return []
        span = 3 * p.window_steps
        if falling:
            ratio = (first - m3) / went if went > 0 else math.inf
            how_far = (
                f"{base.fmt(ratio)}x as far below the first loss {base.fmt(first)} as the first window and the run's "
                f"first {p.window_steps} steps went (at least {base.fmt(p.growth)}x)"
                if went > 0
                else f"{base.fmt(first - m3)} below the first loss {base.fmt(first)}, which it had not left before"
            )
            msg = (
                f"loss: falling without bound, {base.fmt(m1)} -> {base.fmt(m2)} -> {base.fmt(m3)} (means over "
                f"{p.window_steps}-step windows, {span} steps), {how_far} and not slowing down {self.where(view)}"
            )
            hint = (
                "a loss with no lower bound: check that nll_loss gets log-probabilities (log_softmax) and that the "
                "loss is minimised with the right sign"
            )
        else:
            ratio = abs(m3 / m1)
            msg = (
                f"loss: growing steadily, {base.fmt(m1)} -> {base.fmt(m2)} -> {base.fmt(m3)} (means over "
                f"{p.window_steps}-step windows, {span} steps), {base.fmt(ratio)}x (at least {base.fmt(p.growth)}x) "
                "and not slowing down "
                f"{self.where(view)}"
            )
            hint = "the steps are too large and growing: check the learning-rate schedule (a warmup that never ends), lower the learning rate, clip gradients"
        return [self.finding(view, msg, tensor="loss", value=ratio, threshold=p.growth, hint=hint)]

    def get_state(self) -> dict[str, Any]:
        return {
            "sum": self.sum,
            "sq": self.sq,
            "shift": self.shift,
            "n": self.n,
            "start": self.start,
            "last": self.last_step,
            "means": self.means,
            "errors": self.errors,
            "first": self.first,
            "first_step": self.first_step,
            "scale": self.scale,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.sum = float(state.get("sum", 0.0))
        self.sq = float(state.get("sq", 0.0))
        self.shift = float(state.get("shift", 0.0))
        self.n = int(state.get("n", 0))
        self.start = state.get("start")
        self.last_step = state.get("last")
        self.means = [float(x) for x in state.get("means", [])]
        self.errors = [float(x) for x in state.get("errors", [0.0] * len(self.means))]
        self.first = None if state.get("first") is None else float(state["first"])
        self.first_step = int(state.get("first_step", 0))
        self.scale = float(state.get("scale", 0.0))
