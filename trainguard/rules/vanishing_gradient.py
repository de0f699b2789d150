"""`vanishing_gradient`: gradients too small to train, per layer and from the last layer to the first.

Two conditions (either fires): SageMaker Debugger's, a gradient whose mean |g| is below
`threshold`; and AUTOTRAINER's, the first kernel's gradient norm below `first_layer_threshold`
while the first/last kernel gradient-norm ratio is below `ratio_threshold`. All-zero gradients are
left to `all_zero`/`unchanged_tensor`. A soft symptom: gated on the loss not improving (no new
best for 20 views, or no progress at all since the start after 10: a deep sigmoid net at chance
level), 3 of 5. While the loss improves it stays quiet, however small a gradient is.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from trainguard.api.enums import Collection
from trainguard.rules import base, signals
from trainguard.rules.view import COL, StepView

_GRADIENTS = (Collection.GRADIENTS.value,)


class VanishingGradient(base.Rule):
    name = "vanishing_gradient"
    summary = "Gradients too small to train: mean |g| of a layer below a threshold, or first/last layer norm ratio collapsed."
    hint = (
        "use ReLU-family activations, He/Glorot initialisation, normalisation layers or residual connections, "
        "or raise the learning rate"
    )

    class Params(signals.GatedParams):
        threshold: float = Field(
            default=1e-7,
            gt=0,
            description="SageMaker's threshold: a gradient whose mean |g| is below it vanished.",
        )
        ratio_threshold: float = Field(
            default=1e-3,
            gt=0,
            description="AUTOTRAINER's beta1: first/last kernel gradient l2 ratio below which gradients vanish.",
        )
        first_layer_threshold: float = Field(
            default=1e-4,
            gt=0,
            description="AUTOTRAINER's beta2: the ratio condition also needs the first kernel's gradient l2 below this.",
        )
        trigger_k: int = base.trigger_k(3)
        trigger_n: int = base.trigger_n(5)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.gate = signals.LossGate(self.params)  # type: ignore[arg-type]
        self.kernels = signals.KernelPair()

    def check(self, view: StepView) -> list[base.Finding]:
        p: VanishingGradient.Params = self.params  # type: ignore[assignment]
        self.gate.push(view)
        rows = self.rows(view, default_collections=_GRADIENTS)
        if not len(rows) or not self.gate.open:
            return []
        abs_mean = view.stats[rows, COL["abs_mean"]]
        alive = view.stats[rows, COL["zero"]] < view.stats[rows, COL["count"]]
        low = np.flatnonzero((abs_mean < p.threshold) & alive)
        if low.size:
            i = int(rows[low[0]])
            name = view.names[i]
            msg = (
                f"{name}: mean |gradient| {base.fmt(abs_mean[low[0]])} is below the threshold {base.fmt(p.threshold)} "
                f"{self.where(view)}{self.gate.note} ({low.size} of {len(rows)} gradients)"
            )
            return [
                self.finding(view, msg, tensor=name, value=float(abs_mean[low[0]]), threshold=p.threshold)
            ]
        fl = self.kernels(view, rows)
        if fl is None:
            return []
        first, last = float(view.stats[fl[0], COL["l2"]]), float(view.stats[fl[1], COL["l2"]])
        if 0 < last < math.inf and first < p.first_layer_threshold and first / last < p.ratio_threshold:
            name = view.names[fl[0]]
            msg = (
                f"{name}: gradient l2 {base.fmt(first)} is {base.fmt(first / last)} of the last layer's "
                f"({view.names[fl[1]]}, {base.fmt(last)}), below the ratio {base.fmt(p.ratio_threshold)} {self.where(view)}{self.gate.note}"
            )
            return [
                self.finding(view, msg, tensor=name, value=float(first / last), threshold=p.ratio_threshold)
            ]
        return []

    def get_state(self) -> dict[str, object]:
        return {"gate": self.gate.get_state()}

    def set_state(self, state: dict[str, object]) -> None:
        self.gate.set_state(state.get("gate", {}))  # type: ignore[arg-type]
