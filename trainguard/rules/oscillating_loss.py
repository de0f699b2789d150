"""`oscillating_loss`: the loss swings up and down by large amounts instead of settling.

Over the last `window` views: the share of successive loss differences that change sign, and
the median |difference| relative to the median loss (floored at a tenth of the first loss).
Both must be high, and the loss must not be improving (AUTOTRAINER's oscillating-loss symptom,
gated on outcome). Independent batch noise flips sign about two thirds of the time (three
standard deviations: 85% over 50 views), and the detection benchmark's healthy runs saved at
every step reached 90%; the default asks for 95%, which a steady up-down swing meets.

A second path needs neither the window nor the gate: the total l2 norm of the watched weights
growing by `rebound_growth` per step or more (against the newest view at least `growth_span`
steps back) while the loss has given back `rebound_share` or more of its best progress. Steps
far too large (a momentum near 1) inflate the weights and throw the loss back up; either sign
alone also describes healthy runs (weights growing towards their scale from a small init; noisy
losses), both at once none seen. 2 of 3 views by default. A loss that went below zero is not judged by this path:
its progress is measured against the first loss's magnitude, which has no meaning for a loss that crosses zero (an
RBM's free-energy difference under contrastive divergence, a policy loss).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, shared, shared_loss
from trainguard.rules.step_view import COL, StepView

_WEIGHTS = (Collection.WEIGHTS.value,)


class NormHistory:
    """The total l2 norm of the watched weights at the last views: (step, norm, number of tensors)."""

    def __init__(self, span: int) -> None:
        self.span = span
        self.entries: deque[tuple[int, float, int]] = deque(maxlen=span + 1)  # views are >= 1 step apart

    def growth(self, step: int, norm: float, tensors: int) -> float | None:
        """Return the growth per step (compounded) against the newest entry at least `span` steps back
        over as many tensors, then remember this one; None when there is no such entry."""
        back = next((e for e in reversed(self.entries) if e[0] <= step - self.span and e[2] == tensors), None)
        self.entries.append((step, norm, tensors))
        if back is None or not back[1] > 0:
            return None
        return math.expm1(math.log(norm / back[1]) / (step - back[0]))

    def get_state(self) -> list[list[float]]:
        return [list(e) for e in self.entries]

    def set_state(self, entries: list[list[float]]) -> None:
        self.entries.clear()
        self.entries.extend((int(e[0]), float(e[1]), int(e[2])) for e in entries)


class OscillatingLoss(base.Rule):
    name = "oscillating_loss"
    category = RuleCategory.LOSS
    default_action = Action.NOTIFY
    needs = "training loss"
    training_views_only = True
    summary = (
        "Loss alternating up and down by large amounts over a window while it does not improve, or thrown back "
        "up while the weights inflate."
    )
    hint = "lower the learning rate or the momentum, or increase the batch size"

    class Params(shared_loss.GatedParams):
        window: int = Field(default=50, ge=5, description="Views in the window.")
        sign_change_ratio: float = Field(
            default=0.95,
            gt=0,
            le=1,
            description="Share of successive differences that flip sign above which the loss oscillates (batch "
            "noise: about 2/3; healthy runs saved at every step: up to 0.9).",
        )
        amplitude_ratio: float = Field(
            default=0.25,
            gt=0,
            description="Median |loss difference| / median loss above which the swings are large.",
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the first *loss*."
        )
        loss_floor_fraction: float = Field(default=0.1, ge=0, le=1, description=shared_loss.LOSS_FLOOR_DOC)
        rebound_growth: float | None = Field(
            default=0.01,
            gt=0,
            description="Growth of the total weight norm per step (compounded; 0.01 = 1%) at or above which, with "
            "the loss given back by `rebound_share`, the steps overshoot; reported without the gate (None: off).",
        )
        rebound_share: float = Field(
            default=0.3,
            gt=0,
            description="Share of its best progress (first loss - lowest loss) the loss has given back.",
        )
        rebound_min_progress: float = Field(
            default=0.2,
            ge=0,
            le=1,
            description="The loss must first have fallen this fraction of its first value.",
        )
        growth_span: int = Field(
            default=5,
            ge=1,
            description="Growth is measured against the newest view at least this many steps back.",
        )
        trigger_k: int = base.trigger_k(2)
        trigger_n: int = base.trigger_n(3)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: OscillatingLoss.Params = self.params  # type: ignore[assignment]
        self.read = shared_loss.LossReader(name=p.loss_name)
        self.gate = shared_loss.LossGate(p)
        self.window = shared.Window(p.window)
        self.floor = shared_loss.LossFloor(p.loss_floor_fraction)
        self.norms = NormHistory(p.growth_span)
        self.range = shared_loss.LossRange()

    def has_input(self, view: StepView) -> bool:
        return self.read(view) is not None

    def check(self, view: StepView) -> list[base.Finding]:
        p: OscillatingLoss.Params = self.params  # type: ignore[assignment]
        self.gate.push(view)
        growth = self._growth(view)
        loss = self.read(view)
        if loss is None or not math.isfinite(loss):
            return []
        self.window.push(loss)
        self.floor(loss)
        rebound = self._rebound(view, loss, growth)
        if rebound or len(self.window) < p.window or not self.gate.open:
            return rebound
        a = self.window.array()
        d = np.diff(a)
        nz = d[d != 0]
        if nz.size < 2:
            return []
        flips = float(np.mean(np.sign(nz[1:]) != np.sign(nz[:-1])))
        level = self.floor(float(np.median(np.abs(a))))
        amplitude = float(np.median(np.abs(d))) / level if level > 0 else 0.0
        if flips < p.sign_change_ratio or amplitude < p.amplitude_ratio:
            return []
        msg = (
            f"loss: {base.fmt(flips * 100)}% of the last {p.window} saved steps reverse direction with a median swing of "
            f"{base.fmt(amplitude * 100)}% of the loss (thresholds {base.fmt(p.sign_change_ratio * 100)}% and "
            f"{base.fmt(p.amplitude_ratio * 100)}%) {self.where(view)}{self.gate.note}"
        )
        return [self.finding(view, msg, tensor="loss", value=amplitude, threshold=p.amplitude_ratio)]

    def _growth(self, view: StepView) -> float | None:
        """Growth per step of the total norm of the watched weights, None where it cannot be measured."""
        p: OscillatingLoss.Params = self.params  # type: ignore[assignment]
        rows = self.rows(view, default_collections=_WEIGHTS, trainable=True)
        if p.rebound_growth is None or not len(rows):
            return None
        norm = shared.total_l2(view.stats[rows, COL["l2"]])
        if not 0 < norm < math.inf:
            return None
        return self.norms.growth(view.step, norm, len(rows))

    def _rebound(self, view: StepView, loss: float, growth: float | None) -> list[base.Finding]:
        """The weights inflate while the loss gives back much of its progress: steps overshoot."""
        p: OscillatingLoss.Params = self.params  # type: ignore[assignment]
        self.range.push(loss)
        first, lowest = self.range.first, self.range.lowest
        assert first is not None and lowest is not None  # the caller passes finite losses only
        progress = first - lowest
        if p.rebound_growth is None or growth is None or growth < p.rebound_growth:
            return []
        if lowest < 0 or not progress > p.rebound_min_progress * abs(first):
            # progress is judged against the first loss's magnitude, which says nothing of a loss that goes below
            # zero (an energy difference of a contrastive-divergence RBM, from -0.04 to -2 and back by half while
            # its weights grow from a small init; a policy loss): as `loss_not_decreasing`, not judged
            return []
        share = (loss - lowest) / progress
        if share < p.rebound_share:
            return []
        msg = (
            f"loss: {base.fmt(loss)} {self.where(view)} gave back {base.fmt(share * 100)}% of its fall from "
            f"{base.fmt(first)} to {base.fmt(lowest)} (threshold {base.fmt(p.rebound_share * 100)}%) while "
            f"the total l2 norm of the weights grew {base.fmt(growth * 100)}% per step (threshold "
            f"{base.fmt(p.rebound_growth * 100)}%): steps this large overshoot, so the loss swings instead of settling"
        )
        return [self.finding(view, msg, tensor="loss", value=growth, threshold=p.rebound_growth)]

    def get_state(self) -> dict[str, Any]:
        return {
            "gate": self.gate.get_state(),
            "window": self.window.get_state(),
            "floor": self.floor.get_state(),
            "norms": self.norms.get_state(),
            **self.range.get_state(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.gate.set_state(state.get("gate", {}))
        self.window.set_state(state.get("window", []))
        self.floor.set_state(state.get("floor"))
        self.norms.set_state(state.get("norms", []))
        self.range.set_state(state)
