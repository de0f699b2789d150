"""`oscillating_loss`: the loss swings up and down by large amounts instead of settling.

Over the last `window` views: the share of successive loss differences that change sign, and
the median |difference| relative to the median loss (floored at a tenth of the first loss). Both must be high (noise alone flips sign
about two thirds of the time, but by small amounts), and the loss must not be improving
(AUTOTRAINER's oscillating-loss symptom, gated on outcome). 5 of 5 views by default.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.rules import base, signals
from trainguard.rules.view import StepView


class OscillatingLoss(base.Rule):
    name = "oscillating_loss"
    summary = "Loss alternating up and down by large amounts over a window while it does not improve."
    hint = "lower the learning rate or the momentum, or increase the batch size"

    class Params(signals.GatedParams):
        window: int = Field(default=50, ge=5, description="Views in the window.")
        sign_change_ratio: float = Field(
            default=0.85,
            gt=0,
            le=1,
            description="Share of successive differences that flip sign above which the loss oscillates.",
        )
        amplitude_ratio: float = Field(
            default=0.25,
            gt=0,
            description="Median |loss difference| / median loss above which the swings are large.",
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the first *loss*."
        )
        loss_floor_fraction: float = Field(default=0.1, ge=0, le=1, description=signals.LOSS_FLOOR_DOC)
        trigger_k: int = base.trigger_k(5)
        trigger_n: int = base.trigger_n(5)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: OscillatingLoss.Params = self.params  # type: ignore[assignment]
        self.read = signals.LossReader(name=p.loss_name)
        self.gate = signals.LossGate(p)
        self.window = signals.Window(p.window)
        self.floor = signals.LossFloor(p.loss_floor_fraction)

    def check(self, view: StepView) -> list[base.Finding]:
        p: OscillatingLoss.Params = self.params  # type: ignore[assignment]
        self.gate.push(view)
        loss = self.read(view)
        if loss is None or not math.isfinite(loss):
            return []
        self.window.push(loss)
        self.floor(loss)
        if len(self.window) < p.window or not self.gate.open:
            return []
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
            f"loss: {base.fmt(flips * 100)}% of the last {p.window} steps reverse direction with a median swing of "
            f"{base.fmt(amplitude * 100)}% of the loss (thresholds {base.fmt(p.sign_change_ratio * 100)}% and "
            f"{base.fmt(p.amplitude_ratio * 100)}%) {self.where(view)}{self.gate.note}"
        )
        return [self.finding(view, msg, tensor="loss", value=amplitude, threshold=p.amplitude_ratio)]

    def get_state(self) -> dict[str, Any]:
        return {
            "gate": self.gate.get_state(),
            "window": self.window.get_state(),
            "floor": self.floor.get_state(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.gate.set_state(state.get("gate", {}))
        self.window.set_state(state.get("window", []))
        self.floor.set_state(state.get("floor"))
