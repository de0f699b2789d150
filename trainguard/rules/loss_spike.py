"""`loss_spike`: a sudden jump of the training loss against its own recent history.

Robust z-score of log(loss) against the rolling median and MAD of the last `window` views (the
spike detector of the LLM-training literature). A simultaneous jump of the global gradient norm
(its own robust z above `grad_z_threshold`) is named in the finding: spikes with a gradient
co-spike are the ones that tend to recur and diverge. Non-positive losses are skipped.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from trainguard.api.enums import Collection
from trainguard.rules import base, signals
from trainguard.rules.view import StepView

_GRADIENTS = (Collection.GRADIENTS.value,)


class LossSpike(base.Rule):
    name = "loss_spike"
    summary = (
        "Training loss far above its rolling median (robust z of log loss), noting a gradient-norm co-spike."
    )
    hint = "inspect the batch at this step for corrupt data; if spikes recur, lower the learning rate or clip gradients"
    cospike_hint = (
        "the gradient norm spiked too: if it recurs, restart from a checkpoint before the spike with a lower learning "
        "rate and skip the batches around it, and clip gradients"
    )

    class Params(base.Params):
        window: int = Field(default=200, ge=5, description="Views in the rolling window (median and MAD).")
        z_threshold: float = Field(
            default=6.0, gt=0, description="Robust z of log(loss) above which the loss spiked."
        )
        min_history: int = Field(
            default=20, ge=3, description="Views needed in the window before spikes are judged."
        )
        min_scale: float = Field(
            default=0.02, gt=0, description="Floor of the robust scale of log(loss) (0.02 = 2%)."
        )
        grad_z_threshold: float = Field(
            default=3.0, gt=0, description="Robust z of log(gradient norm) that makes a co-spike."
        )
        grad_norm_scalar: str = Field(
            default="grad_norm", description="Train scalar holding the global gradient norm, if recorded."
        )
        loss_name: str | None = Field(
            default=None, description="Scalar to read; default `loss`, else the first *loss*."
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: LossSpike.Params = self.params  # type: ignore[assignment]
        self.read = signals.LossReader(name=p.loss_name)
        self.loss_window = signals.Window(p.window)
        self.grad_window = signals.Window(p.window)

    def _grad_z(self, view: StepView, p: Params) -> float | None:
        norm = signals.global_norm(view, self.rows(view, default_collections=_GRADIENTS), p.grad_norm_scalar)
        if not (norm > 0 and math.isfinite(norm)):
            return None
        x = math.log(norm)
        z = self.grad_window.robust_z(x, min_scale=0.1)[0] if len(self.grad_window) >= p.min_history else None
        self.grad_window.push(x)
        return z

    def check(self, view: StepView) -> list[base.Finding]:
        p: LossSpike.Params = self.params  # type: ignore[assignment]
        grad_z = self._grad_z(view, p)
        loss = self.read(view)
        if loss is None or not (loss > 0 and math.isfinite(loss)):
            return []
        x = math.log(loss)
        enough = len(self.loss_window) >= p.min_history
        z, med, _ = self.loss_window.robust_z(x, min_scale=p.min_scale) if enough else (0.0, x, 0.0)
        self.loss_window.push(x)
        if z <= p.z_threshold:
            return []
        cospike = grad_z is not None and grad_z > p.grad_z_threshold
        also = f", with a gradient-norm co-spike (z {base.fmt(grad_z)})" if cospike else ""
        msg = (
            f"loss {base.fmt(loss)} is {base.fmt(loss / math.exp(med))}x its rolling median {base.fmt(math.exp(med))} "
            f"(robust z {base.fmt(z)} > {base.fmt(p.z_threshold)}) {self.where(view)}{also}"
        )
        return [
            self.finding(
                view,
                msg,
                tensor="loss",
                value=z,
                threshold=p.z_threshold,
                hint=self.cospike_hint if cospike else None,
            )
        ]

    def get_state(self) -> dict[str, Any]:
        return {"loss": self.loss_window.get_state(), "grad": self.grad_window.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        self.loss_window.set_state(state.get("loss", []))
        self.grad_window.set_state(state.get("grad", []))
