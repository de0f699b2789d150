"""`exploding_gradient`: gradient norms that blow up without (yet) being non-finite.

Five conditions: the global gradient norm jumps far above its own recent history (robust z of
its log against a rolling median/MAD); it ran away from where it started, `runaway_growth` times
its first recorded value at a view whose loss is no lower than the first (two independent signals
that need no history: gradients that are never zeroed add up step after step, a loss summed over
the batch explodes within a few views, and under Adam neither moves the weights much); it grows
steadily instead, its mean over each of the last
`growth_windows` windows of `growth_window_steps` training steps above the one before and
`steady_growth` times the first of them (a loss without a lower bound, `nll_loss` on raw logits,
multiplies the last layer's gradient 100x over 200 steps; healthy runs grow at most 4x that way),
corroborated by the weights growing `growth_weight_growth` times over the same windows (growth that
feeds on itself moves the weights; a Gaussian likelihood's gradients grow as its variance shrinks
while Adam keeps the weights in place) and not while a held-out metric shows the fit improving
(`learned_share`: a classifier sharpening its fit grows both);
any gradient's l2 above an absolute `threshold` (off by default); AUTOTRAINER's first/last kernel
gradient ratio above `ratio_threshold`, gated on the loss not improving. The finding names the layer
whose norm rose most above its own running average. A jump is not reported while the loss falls steeply towards
its floor (`descent_fraction`): a network that leaves a plateau steepens its loss and its gradients together.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, metric_progress, shared, shared_loss
from trainguard.rules.step_view import COL, StepView

_GRADIENTS = (Collection.GRADIENTS.value,)


class ExplodingGradient(base.Rule):
    name = "exploding_gradient"
    category = RuleCategory.GRADIENTS
    default_action = Action.NOTIFY
    training_views_only = True
    summary = "Gradient norms far above their own recent history, above an absolute bound, or growing towards the input."
    hint = "lower the learning rate, clip gradients (e.g. max norm 1.0), or add normalisation layers"

    class Params(shared_loss.GatedParams):
        threshold: float | None = Field(
            default=None, gt=0, description="Absolute bound on any gradient's l2 norm (off by default)."
        )
        z_threshold: float = Field(
            default=6.0,
            gt=0,
            description="Robust z of log(global gradient norm) against the rolling median/MAD above which it exploded.",
        )
        window: int = Field(default=200, ge=5, description="Views in the rolling window of the global norm.")
        min_history: int = Field(
            default=20, ge=3, description="Views needed in the window before the z condition counts."
        )
        min_scale: float = Field(
            default=0.1,
            gt=0,
            description="Floor of the robust scale of log(norm), so a very steady norm does not alarm on x1.1.",
        )
        ratio_threshold: float = Field(
            default=70.0,
            gt=0,
            description="AUTOTRAINER's beta3: first/last kernel gradient l2 ratio above which gradients explode.",
        )
        steady_growth: float | None = Field(
            default=10.0,
            gt=1,
            description="Growth of the global gradient norm (window means) over `growth_windows` windows in a row, each "
            "above the one before, that is reported. None: off.",
        )
        growth_windows: int = Field(default=4, ge=2, description="Windows the steady growth spans.")
        growth_window_steps: int = Field(
            default=50,
            ge=1,
            description="Training steps per window; the log of the norm is averaged over each.",
        )
        growth_weight_growth: float = Field(
            default=2.0,
            ge=1,
            description="Steady growth counts only when the trainable weights' total l2 norm grew at least this "
            "much over the same windows (runs that record no weights are judged on the gradients alone). Growth "
            "that feeds on itself moves the weights: on the realistic suite's calibration seeds they grew 4.7x "
            "(a warmup never capped), 7x (nll_loss on raw logits) and 100x or more (gradients accumulated without "
            "zero_grad) while the gradients grew 10x; a Gaussian NLL whose gradients grow as its variance shrinks "
            "1.3x, with Adam's bounded steps. 1: off.",
        )
        runaway_growth: float | None = Field(
            default=100.0,
            gt=1,
            description="Growth of the global gradient norm over its first recorded value, at a view whose training "
            "loss is at or above the first one, that is reported at once (the loss corroborates: growing gradients "
            "on a loss that improves are a likelihood sharpening or a warmup). On the five detection suites' "
            "stored runs the healthy ones reached at most 21x that way (a CNN under Adam, its first gradients "
            "small), all others 8x; gradients never zeroed reached 100-240x within 150 steps under AdamW, whose "
            "bounded steps leave the weights in place so that `steady_growth` never holds, and 130-22000x under "
            "SGD; a loss summed over a batch of 256 190x to 1e15 at the last view before the first NaN. None: off.",
        )
        grad_norm_scalar: str = Field(
            default="grad_norm",
            description="Train scalar holding the global gradient norm, when the script records one.",
        )
        descent_fraction: float | None = Field(
            default=0.75,
            gt=0,
            lt=1,
            description="A spike of the global norm is not reported while the loss falls steeply towards its floor: "
            "positive, its median over the views of the last `descent_steps` steps at most this fraction of its "
            "median over the views `descent_gap` steps before. A network leaving a plateau (a transformer that finds "
            "how to reverse its digit strings after 200 steps near 1.4) steepens its loss and its gradients "
            "together, 10-27x the rolling median while the loss falls 1.4 -> 0.1; gradients that explode leave the "
            "loss flat, rising or falling without a floor. None: every spike is judged.",
        )
        learned_share: float | None = Field(
            default=0.2,
            gt=0,
            le=1,
            description="Steady growth is not reported while the model fits better and better: the loss, positive, "
            "below its first value and still improving, and a held-out (eval-mode) metric that closed this share of "
            "the gap from its first record to its best score, by twice its noise. A classifier that sharpens its fit "
            "grows its weights and gradients together (a class-weighted wafer-defect CNN: gradients 52x and weights "
            "2.1x over 200 steps while its loss fell 1.8 -> 0.7 and its held-out balanced accuracy rose 0.17 -> 0.83); "
            "the faults growth is for leave the loss below zero (a loss without a floor), rising, or the held-out "
            "metric where it was. None: every growth is judged.",
        )
        descent_steps: int = Field(default=30, ge=1, description="Training steps of the recent loss median.")
        descent_gap: int = Field(
            default=50, ge=1, description="How many training steps before now the earlier loss median ends."
        )
        trigger_k: int = base.trigger_k(3)
        trigger_n: int = base.trigger_n(5)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: ExplodingGradient.Params = self.params  # type: ignore[assignment]
        self.gate = shared_loss.LossGate(p)
        self.kernels = shared.KernelPair()
        self.window = shared.Window(p.window)
        self.layer_ema = shared.RowState(math.nan)
        self.growth_sum = 0.0
        self.growth_n = 0
        self.growth_start: int | None = None
        self.growth_last: int | None = None
        self.growth_means: list[float] = []
        """Means of log(global norm) over the last `growth_windows` complete windows, oldest first."""
        self.first_norm: float | None = None
        """The global gradient norm at the first view that had a finite, positive one."""
        self.metrics = metric_progress.MetricProgress()
        """The eval-mode quality metrics the run records (the evidence that growing gradients come with a fit)."""
        self.recent_losses: list[tuple[int, float]] = []
        """(step, loss) of the views of the last `descent_steps` + `descent_gap` training steps."""
        self.growth_weights: list[float] = []
        """The trainable weights' total l2 norm at the first view of each of the last `growth_windows` windows, the
        one under way included (NaN: none recorded)."""

    def _update_ema(self, log_l2: np.ndarray, ema: np.ndarray) -> None:
        """Move each gradient's EMA of log l2 towards this view (a NaN on either side: take the other)."""
        new = ema + 0.1 * (log_l2 - ema)
        if np.isnan(new).any():
            new = np.where(np.isnan(ema), log_l2, new)
            new = np.where(np.isnan(log_l2), ema, new)
        self.layer_ema.values = new

    def check(self, view: StepView) -> list[base.Finding]:
        p: ExplodingGradient.Params = self.params  # type: ignore[assignment]
        if view.eval_scalars:  # an eval point on a saved step (eval-only views come through `observe_eval`)
            self.metrics.push(view)
        loss = self.gate.push(view)
        self._push_loss(view.step, loss, p)
        rows = self.rows(view, default_collections=_GRADIENTS)
        l2 = view.stats[rows, COL["l2"]] if len(rows) else np.zeros(0)
        norm = shared.global_norm(view, l2, p.grad_norm_scalar)
        out: list[base.Finding] = []
        log_l2 = np.log(l2, out=np.full(len(l2), np.nan), where=(l2 > 0) & (l2 < np.inf))
        ema = self.layer_ema.align(view, rows) if len(rows) else np.zeros(0)
        if norm > 0 and math.isfinite(norm):
            x = math.log(norm)
            runaway = self._runaway(view, norm, p)
            growing = self._steady_growth(view, rows, x, p)  # every view feeds its windows
            trend = runaway or growing
            if trend is not None:
                out.append(self.at_once(trend))  # a trend since the start or over windows: no k-of-n on top
            spike = (
                self.window.spike(x, threshold=p.z_threshold, min_scale=p.min_scale)
                if len(self.window) >= p.min_history
                else None
            )
            if spike is not None and not self._descending(view.step, p):
                out.append(self._spike_finding(view, rows, log_l2 - ema, norm, spike, p))
            self.window.push(x)
        if len(rows):
            self._update_ema(log_l2, ema)
        if out or not len(rows):
            return out
        if p.threshold is not None:
            above = np.flatnonzero(l2 > p.threshold)
            if above.size:
                i = int(rows[above[np.argmax(l2[above])]])
                msg = (
                    f"{view.names[i]}: l2 norm {base.fmt(view.stats[i, COL['l2']])} is above the threshold "
                    f"{base.fmt(p.threshold)} {self.where(view)} ({above.size} of {len(rows)} gradients)"
                )
                return [
                    self.finding(
                        view,
                        msg,
                        tensor=view.names[i],
                        value=float(view.stats[i, COL["l2"]]),
                        threshold=p.threshold,
                    )
                ]
        fl = self.kernels(view, rows)
        if fl is not None and self.gate.open:
            first, last = float(view.stats[fl[0], COL["l2"]]), float(view.stats[fl[1], COL["l2"]])
            if 0 < last < math.inf and first / last > p.ratio_threshold:
                name = view.names[fl[0]]
                msg = (
                    f"{name}: gradient l2 {base.fmt(first)} is {base.fmt(first / last)}x the last layer's "
                    f"({view.names[fl[1]]}, {base.fmt(last)}), above the ratio {base.fmt(p.ratio_threshold)} "
                    f"{self.where(view)}{self.gate.note}"
                )
                return [
                    self.finding(
                        view, msg, tensor=name, value=float(first / last), threshold=p.ratio_threshold
                    )
                ]
        return []

    def _runaway(self, view: StepView, norm: float, p: Params) -> base.Finding | None:
        """The finding when the global norm is `runaway_growth` times its first value and the loss no lower than its
        first (both read at this view; a run that records no loss is not judged)."""
        if self.first_norm is None:
            self.first_norm = norm
            return None
        first_loss, loss = self.gate.range.first, self.gate.read(view)
        if p.runaway_growth is None or first_loss is None or loss is None or not math.isfinite(loss):
            return None
        growth = norm / self.first_norm
        if growth < p.runaway_growth or loss < first_loss:
            return None
        msg = (
            f"gradients: the global gradient norm grew {base.fmt(growth)}x from its first value "
            f"{base.fmt(self.first_norm)} to {base.fmt(norm)} {self.where(view)}, above {base.fmt(p.runaway_growth)}x, "
            f"while the loss "
            f"{base.fmt(loss)} is no lower than its first {base.fmt(first_loss)}: the gradients ran away instead of "
            "training the model"
        )
        hint = (
            "gradients that add up across steps (zero_grad missing or called only once), a loss summed over the batch "
            "under a rate tuned for the mean, or a learning rate far too high: check the training loop, the loss "
            "reduction and the rate"
        )
        return self.finding(
            view, msg, tensor="gradients", value=growth, threshold=p.runaway_growth, hint=hint
        )

    def _steady_growth(
        self, view: StepView, rows: np.ndarray, log_norm: float, p: Params
    ) -> base.Finding | None:
        """Add this view's log norm to its window; at a window's end, the finding when the last windows kept growing."""
        if p.steady_growth is None:
            return None
        if self.growth_start is None:
            self.growth_start = view.step
            self.growth_weights = [*self.growth_weights[-(p.growth_windows - 1) :], _weight_norm(view)]
        self.growth_sum += log_norm
        self.growth_n += 1
        gap = shared.steps_since(self.growth_last, view.step)
        self.growth_last = view.step
        if view.step + gap < self.growth_start + p.growth_window_steps:
            return None
        self.growth_means = [*self.growth_means[-(p.growth_windows - 1) :], self.growth_sum / self.growth_n]
        self.growth_sum, self.growth_n, self.growth_start = 0.0, 0, None
        means = self.growth_means
        if len(means) < p.growth_windows or not all(b > a for a, b in itertools.pairwise(means)):
            return None
        growth = math.exp(means[-1] - means[0])
        if growth < p.steady_growth or self._fitting(p):
            return None
        weights = ""
        before, now = self.growth_weights[0], _weight_norm(view)
        if (
            len(self.growth_weights) == p.growth_windows
            and math.isfinite(before)
            and before > 0
            and math.isfinite(now)
        ):
            if p.growth_weight_growth > 1 and now < p.growth_weight_growth * before:
                return None  # the gradients grow, the weights do not: nothing feeds on itself (a likelihood sharpening)
            weights = f" while the weights' total l2 norm grew {base.fmt(now / before)}x"
        span = p.growth_windows * p.growth_window_steps
        msg = (
            f"gradients: the global gradient norm grew {base.fmt(growth)}x steadily over {span} steps (its mean over "
            f"each {p.growth_window_steps}-step window above the one before) {self.where(view)}, to "
            f"{base.fmt(math.exp(log_norm))}{weights}: something feeds on itself"
        )
        hint = (
            "a loss without a lower bound (nll_loss needs log_softmax first), a learning rate that keeps growing, or "
            "gradients that accumulate (zero_grad missing): check the loss, the schedule and the training loop"
        )
        return self.finding(view, msg, tensor="gradients", value=growth, threshold=p.steady_growth, hint=hint)

    def observe_eval(self, view: StepView) -> None:
        self.metrics.push(view)

    def _fitting(self, p: Params) -> bool:
        """Whether the model fits better and better: the loss, positive, below its first value and still improving,
        and a held-out metric that closed `learned_share` of its gap to its best score (by twice its noise)."""
        if p.learned_share is None:
            return False
        ema, first = self.gate.progress.ema, self.gate.range.first
        return (
            ema is not None
            and first is not None
            and 0 < ema < first
            and self.gate.progress.improving
            and self.metrics.learned(p.learned_share, 2.0) is not None
        )

    def _push_loss(self, step: int, loss: float | None, p: Params) -> None:
        """Keep the losses of the last `descent_steps` + `descent_gap` steps' views."""
        if loss is not None and math.isfinite(loss):
            self.recent_losses.append((step, loss))
        horizon = step - (p.descent_steps + p.descent_gap)
        while self.recent_losses and self.recent_losses[0][0] <= horizon:
            self.recent_losses.pop(0)

    def _descending(self, step: int, p: Params) -> bool:
        """Whether the loss is falling towards its floor now: positive, the median of the views' losses of the last
        `descent_steps` steps at most `descent_fraction` of the median of those `descent_gap` steps earlier."""
        if p.descent_fraction is None:
            return False
        recent = [x for s, x in self.recent_losses if s > step - p.descent_steps]
        earlier = [x for s, x in self.recent_losses if s <= step - p.descent_gap]
        if not recent or not earlier or min(recent + earlier) <= 0:
            return False
        return float(np.median(recent)) <= p.descent_fraction * float(np.median(earlier))

    def _spike_finding(
        self,
        view: StepView,
        rows: np.ndarray,
        jump: np.ndarray,
        norm: float,
        spike: tuple[float, float],
        p: Params,
    ) -> base.Finding:
        """The finding for a global-norm spike, naming the gradient that rose most above its own EMA."""
        z, med = spike
        valid = np.isfinite(jump)
        where, rose = "gradients", ""
        if valid.any():
            k = int(np.argmax(np.where(valid, jump, -np.inf)))
            where = view.names[int(rows[k])]
            rose = f", where {where} rose x{base.fmt(float(np.exp(jump[k])))} over its average"
        msg = (
            f"{where}: global gradient norm {base.fmt(norm)} is {base.fmt(norm / math.exp(med))}x its rolling "
            f"median {base.fmt(math.exp(med))} (robust z {base.fmt(z)} > {base.fmt(p.z_threshold)}) "
            f"{self.where(view)}{rose}"
        )
        return self.finding(
            view, msg, tensor=where if valid.any() else None, value=z, threshold=p.z_threshold
        )

    def get_state(self) -> dict[str, Any]:
        return {
            "gate": self.gate.get_state(),
            "window": self.window.get_state(),
            "layer_ema": self.layer_ema.get_state(),
            "first_norm": self.first_norm,
            "recent_losses": [list(x) for x in self.recent_losses],
            "metrics": self.metrics.get_state(),
            "growth": [
                self.growth_sum,
                self.growth_n,
                self.growth_start,
                self.growth_last,
                self.growth_means,
                self.growth_weights,
            ],
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.gate.set_state(state.get("gate", {}))
        self.window.set_state(state.get("window", []))
        self.layer_ema.set_state(state.get("layer_ema", {}))
        self.first_norm = state.get("first_norm")
        self.recent_losses = [(int(s), float(x)) for s, x in state.get("recent_losses", [])]
        self.metrics.set_state(state.get("metrics"))
        growth = state.get("growth") or [0.0, 0, None, None, []]
        self.growth_sum, self.growth_n, self.growth_start, self.growth_last = growth[:4]
        self.growth_means = [float(x) for x in growth[4]]
        self.growth_weights = [float(x) for x in growth[5]] if len(growth) > 5 else []


def _weight_norm(view: StepView) -> float:
    """The total l2 norm of the trainable weights a view records (NaN when it records none)."""
    rows = view.rows(collections=(Collection.WEIGHTS.value,), trainable=True)
    return shared.total_l2(view.stats[rows, COL["l2"]]) if len(rows) else math.nan
