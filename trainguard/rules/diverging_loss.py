"""`diverging_loss`: a finite training loss running away, downwards below zero or steadily upwards.

It reads the loss of every step (`every_step`), where it is recorded (format 2.4), else of saved steps. Each
window of `window_steps` training steps is cut into `parts` parts (10 steps each); a part is read by the median
of its losses and the window by the mean of its parts: a loss sampled at saved steps only (five batches a
window) rises 4x by chance where it is heavy-tailed, and a mean of every step's loss is decided by the
one batch at 5e4 among losses of 3. Where the loss is recorded at saved steps only, a part holds one loss and
the window is the mean of those. Over the last three windows:
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
Either way the last window's level must differ from the first's by `min_significance` standard
errors, estimated from the spread of the parts within the two windows (batch means: neighbouring losses are
not independent, a part's median is nearly so): a noisy loss rises 2x over three windows by chance. And the
last window's change must not be smaller than the one before by as many standard errors of the parts' noise
about their own trend: a likelihood settling at its floor falls by 0.75 as much each window, within
`keep_pace` of running away but steadily slowing, not by chance.
A loss falling without bound beside a held-out metric that learns (`metric_progress`: its latest record closed a fifth
of the gap from its first record to its best score, by `min_significance` times its record-to-record noise) is a
likelihood sharpening on data it fits, not one without a floor, while that metric still rises beyond its noise since
the first of the three windows ended: a Gaussian policy cloned from a deterministic expert shrinks its variance
towards 0, its NLL falling -0.8 -> -2.5 at a steady pace, while the held-out goal progress climbs 0.82 -> 0.98 (0.90 ->
0.97 over the last two windows). A loss with no floor runs away whatever the score does: a CRF whose log-partition sums
over the wrong tags falls 1.7 -> -28 in 150 steps while the tagging accuracy, after rising 0.49 -> 0.61 in the first
50 steps as the emissions learn, stays there; log-likelihoods read off raw logits or a loss maximised with the wrong
sign leave the held-out score where it was, or worse.
A loss that runs away too fast for three windows, from its first value to `runaway` times that value's size or more
within the steps it stayed finite, and then turns non-finite is named as it turns: steps far too large (a rate meant
for another optimizer or batch, targets in raw units) throw the loss up by orders of magnitude before it overflows,
while a log(0), a division by zero or a NaN in the data turns it non-finite from where it was.
A run that records several losses and no total (a GAN's `d_loss` and `g_loss`) is not judged.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from typing import Any

from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base, metric_progress, shared, shared_loss
from trainguard.rules.step_view import StepView

LEARNED_SHARE = 0.2
"""The share of the gap from its first record to its best score a held-out metric must close to say the model fits (a
fifth, as for `loss_not_decreasing`)."""


class DivergingLoss(base.Rule):
    name = "diverging_loss"
    category = RuleCategory.LOSS
    default_action = Action.NOTIFY
    needs = "training loss"
    training_views_only = True
    every_step = True
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
        parts: int = Field(
            default=5,
            ge=1,
            description="Parts of equal length a window is cut into by step: a window mean's standard error is "
            "read from the spread of its parts' means, which holds for a loss recorded at every step (neighbouring "
            "losses are not independent: a trend within the window, momentum) and at every tenth step alike.",
        )
        floor_fraction: float = Field(default=0.1, ge=0, le=1, description=shared_loss.LOSS_FLOOR_DOC)
        min_significance: float = Field(
            default=2.0,
            ge=0,
            description="Standard errors (from the spread of the parts within the windows) by which the last "
            "window must differ from the first's, and by which a slowing change makes the loss settling, not running "
            "away. With one loss a part (saved every 10th step), on the calibration seeds of the detection benchmarks a "
            "healthy run with batches of 8 rose 2x over three windows at 1.7, harmless faults at 1.2-1.6, runaway "
            "losses at 2.6 or more. Windows of one part (a save interval as long as the window) have no spread and "
            "are not judged by it.",
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the only scalar named *loss*."
        )
        runaway: float | None = Field(
            default=100.0,
            gt=1,
            description="A loss that turns non-finite after its finite values, over the `window_steps` before, went "
            "this many times the size of the run's first loss away from it ran away (None: off). Over the detection "
            "benchmarks' stored runs, 93 runs with steps far too large went 384x to 1e33x before their loss overflowed, "
            "while the 22 whose loss turned non-finite from a log(0), a division by zero or a NaN in the data after "
            "finite steps had moved at most 0.72x (207 more were non-finite from their first loss).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: DivergingLoss.Params = self.params  # type: ignore[assignment]
        self.read = shared_loss.LossReader(name=p.loss_name, single=True)
        self.parts: list[list[float]] = [[] for _ in range(p.parts)]
        """Per part of the window: its losses minus `shift` (no cancellation at 1e5)."""
        self.shift = 0.0
        """The window's first loss."""
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
        self.noise: list[float | None] = []
        """The squared standard errors of those means from the parts' spread about their own trend (None for
        fewer than three parts): the noise left when the loss's steady movement within the window is set aside."""
        self.metrics = metric_progress.MetricProgress()
        """The eval-mode quality metrics the run records (the evidence that a likelihood falling steadily fits)."""
        self.marks: list[dict[str, float]] = []
        """Each metric's latest record at the end of the last three windows, oldest first."""
        self.recent: deque[tuple[int, float]] = deque()
        """(step, loss) of the finite losses of the last `window_steps` steps since the last non-finite one."""

    def has_input(self, view: StepView) -> bool:
        return self.read(view) is not None

    def check(self, view: StepView) -> list[base.Finding]:
        p: DivergingLoss.Params = self.params  # type: ignore[assignment]
        if view.eval_scalars:
            self.metrics.push(view)
        loss = self.read(view)
        if loss is None:
            return []
        if self.recent and view.step < self.recent[-1][0]:
            self.recent.clear()  # the run went back (a resume)
        if not math.isfinite(loss):
            return self._ran_away(view)  # the non-finite value itself is exploding_tensor's
        while self.recent and self.recent[0][0] <= view.step - p.window_steps:
            self.recent.popleft()
        self.recent.append((view.step, loss))
        if self.first is None:
            self.first, self.first_step = loss, view.step
        if view.step < self.first_step + p.window_steps:
            self.scale = max(self.scale, abs(loss - self.first))
        if self.start is None or view.step < self.start:  # a first window, or the run went back (a resume)
            self.parts = [[] for _ in range(p.parts)]
            self.start, self.shift = view.step, loss
        part = min((view.step - self.start) * p.parts // p.window_steps, p.parts - 1)
        self.parts[part].append(loss - self.shift)
        gap = shared.steps_since(self.last_step, view.step)
        self.last_step = view.step
        if view.step + gap < self.start + p.window_steps:
            return []
        # batch means: the parts' means are nearly independent where neighbouring losses are not (a trend, momentum)
        parts = [statistics.median(losses) for losses in self.parts if losses]
        mean = math.fsum(parts) / len(parts)
        var = math.fsum((x - mean) ** 2 for x in parts) / (len(parts) - 1) if len(parts) > 1 else 0.0
        if not math.isfinite(var):
            var = 0.0  # losses beyond float range have no usable spread: their growth alone decides
        self.marks = [*self.marks[-2:], self.metrics.latest()]
        self.means = [*self.means[-2:], self.shift + mean]
        self.errors = [*self.errors[-2:], var / len(parts)]
        self.noise = [*self.noise[-2:], _trend_free_error(parts)]
        self.parts, self.start = [[] for _ in range(p.parts)], None
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
        if (
            falling
            and self.metrics.learned(LEARNED_SHARE, p.min_significance) is not None
            and self.metrics.rising_since(self.marks[0], p.min_significance) is not None
        ):
            return []  # a likelihood sharpening while the held-out metric says the model fits better and better
        if self._slowing(m1, m2, m3, p.min_significance):
            return []
        span = 3 * p.window_steps
        per_part = f"means of {base.fmt(p.window_steps / p.parts)}-step medians" if p.parts > 1 else "medians"
        if falling:
            ratio = (first - m3) / went if went > 0 else math.inf
            how_far = (
                f"{base.fmt(ratio)}x as far below the first loss {base.fmt(first)} as the first window and the run's "
                f"first {p.window_steps} steps went (at least {base.fmt(p.growth)}x)"
                if went > 0
                else f"{base.fmt(first - m3)} below the first loss {base.fmt(first)}, which it had not left before"
            )
            msg = (
                f"loss: falling without bound, {base.fmt(m1)} -> {base.fmt(m2)} -> {base.fmt(m3)} ({per_part} "
                f"over {p.window_steps}-step windows, {span} steps), {how_far} and not slowing down {self.where(view)}"
            )
            hint = (
                "a loss with no lower bound: check that nll_loss gets log-probabilities (log_softmax) and that the "
                "loss is minimised with the right sign"
            )
        else:
            ratio = abs(m3 / m1)
            msg = (
                f"loss: growing steadily, {base.fmt(m1)} -> {base.fmt(m2)} -> {base.fmt(m3)} ({per_part} "
                f"over {p.window_steps}-step windows, {span} steps), {base.fmt(ratio)}x (at least {base.fmt(p.growth)}x) "
                "and not slowing down "
                f"{self.where(view)}"
            )
            hint = "the steps are too large and growing: check the learning-rate schedule (a warmup that never ends), lower the learning rate, clip gradients"
        return [self.finding(view, msg, tensor="loss", value=ratio, threshold=p.growth, hint=hint)]

    def _ran_away(self, view: StepView) -> list[base.Finding]:
        """The first non-finite loss after finite ones that went `runaway` times the first loss's size away from it
        within the last window: steps far too large, named as the loss overflows. Later non-finite losses, and one
        that turns non-finite from near where it was, are exploding_tensor's alone."""
        p: DivergingLoss.Params = self.params  # type: ignore[assignment]
        recent, self.recent = self.recent, deque()
        if p.runaway is None or not recent or not self.first:
            return []
        first = self.first
        at, peak = max(recent, key=lambda r: abs(r[1] - first))
        ratio = abs(peak - first) / abs(first)
        if ratio < p.runaway:
            return []
        since = recent[0][0]
        msg = (
            f"loss: ran away from its first value {base.fmt(first)} to {base.fmt(peak)} at step {at}, "
            f"{base.fmt(ratio)}x its size (at least {base.fmt(p.runaway)}x) within steps {since}-{recent[-1][0]}, "
            f"then turned non-finite {self.where(view)}: steps far too large overflowed it, not a log(0) or a NaN in "
            "the data"
        )
        hint = (
            "lower the learning rate (a rate meant for another optimizer or batch size, a schedule's peak), check the "
            "loss reduction (mean, not sum) and the scale of inputs and targets, clip gradients"
        )
        return [self.finding(view, msg, tensor="loss", value=ratio, threshold=p.runaway, hint=hint)]

    def _slowing(self, m1: float, m2: float, m3: float, significance: float) -> bool:
        """Whether the last window's change is smaller than the one before by `significance` standard errors of
        the parts' noise about their trend: a loss settling at a floor (a Gaussian likelihood under Adam) whose
        drops shrink steadily, not by chance. Windows of fewer than three parts, or parts on a straight line,
        have no such noise and are not judged by it."""
        if any(e is None for e in self.noise):
            return False
        e1, e2, e3 = (e or 0.0 for e in self.noise)
        slowdown = abs(m2 - m1) - abs(m3 - m2)  # both changes run the same way here
        return slowdown >= significance * math.sqrt(e1 + 4 * e2 + e3)  # the error of m1 - 2 m2 + m3

    def get_state(self) -> dict[str, Any]:
        return {
            "parts": self.parts,
            "shift": self.shift,
            "start": self.start,
            "last": self.last_step,
            "means": self.means,
            "errors": self.errors,
            "noise": self.noise,
            "first": self.first,
            "first_step": self.first_step,
            "scale": self.scale,
            "metrics": self.metrics.get_state(),
            "marks": self.marks,
            "recent": [list(r) for r in self.recent],
        }

    def set_state(self, state: dict[str, Any]) -> None:
        p: DivergingLoss.Params = self.params  # type: ignore[assignment]
        self.parts = [[float(x) for x in part] for part in state.get("parts", [])]
        if len(self.parts) != p.parts:  # a state of another cut: the window starts again
            self.parts, state = [[] for _ in range(p.parts)], {**state, "start": None}
        self.shift = float(state.get("shift", 0.0))
        self.start = state.get("start")
        self.last_step = state.get("last")
        self.means = [float(x) for x in state.get("means", [])]
        self.errors = [float(x) for x in state.get("errors", [0.0] * len(self.means))]
        self.noise = [None if x is None else float(x) for x in state.get("noise", [None] * len(self.means))]
        self.first = None if state.get("first") is None else float(state["first"])
        self.first_step = int(state.get("first_step", 0))
        self.scale = float(state.get("scale", 0.0))
        self.metrics.set_state(state.get("metrics"))
        self.marks = [{str(k): float(v) for k, v in m.items()} for m in state.get("marks", [])]
        self.recent = deque((int(s), float(x)) for s, x in state.get("recent", []))


def _trend_free_error(parts: list[float]) -> float | None:
    """The squared standard error of the mean of `parts` (a window's part medians, in order) from their residuals
    about a straight line through them; None for fewer than three parts (no residual left) or parts on a line."""
    k = len(parts)
    if k < 3:
        return None
    x0 = (k - 1) / 2
    mean = math.fsum(parts) / k
    sxx = math.fsum((i - x0) ** 2 for i in range(k))
    slope = math.fsum((i - x0) * (y - mean) for i, y in enumerate(parts)) / sxx
    resid = math.fsum((y - mean - slope * (i - x0)) ** 2 for i, y in enumerate(parts)) / (k - 2)
    if not math.isfinite(resid) or resid <= (1e-9 * max(abs(y) for y in parts)) ** 2:
        return None  # parts on a straight line but for float rounding: no noise to judge by
    return resid / k
