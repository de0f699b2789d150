"""`dead_relu`: layers where most ReLU units never fire, judged per unit, not per element.

Reads the Tier-1 vectors `units[("active", act/<module>)]`: the fraction of samples on which each
unit's output was positive. A unit is dead when that is below `threshold_inactivity` percent; a
layer when more than `threshold_layer` percent of its units are (SageMaker Debugger's parameters).
Naturally sparse layers (most elements zero, every unit alive somewhere) stay quiet.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from trainguard.rules import base, signals
from trainguard.rules.view import StepView


class DeadRelu(base.Rule):
    name = "dead_relu"
    summary = (
        "Layers where more than half the ReLU-family units are inactive on almost every sample (per unit)."
    )
    hint = (
        "lower the learning rate, check the biases and use He initialisation, add normalisation before the "
        "activation, or use LeakyReLU/GELU"
    )

    class Params(base.Params):
        threshold_inactivity: float = Field(
            default=1.0,
            ge=0,
            le=100,
            description="A unit is dead when it is active on fewer than this percent of samples.",
        )
        threshold_layer: float = Field(
            default=50.0,
            ge=0,
            le=100,
            description="A layer is reported when more than this percent of its units are dead.",
        )
        trigger_k: int = base.trigger_k(2)
        trigger_n: int = base.trigger_n(2)

    def applies(self, view: StepView) -> bool:
        return signals.has_units(view, "active")

    def check(self, view: StepView) -> list[base.Finding]:
        p: DeadRelu.Params = self.params  # type: ignore[assignment]
        out = []
        for name, active in signals.unit_layers(self, view, "active"):
            if not active.size:
                continue
            n = int(np.count_nonzero(active * 100.0 < p.threshold_inactivity))
            dead = 100.0 * n / active.size
            if dead > p.threshold_layer:
                msg = (
                    f"{name}: {n} of {active.size} units ({base.fmt(dead)}%) are active on fewer than "
                    f"{base.fmt(p.threshold_inactivity)}% of samples, above the threshold {base.fmt(p.threshold_layer)}% "
                    f"{self.where(view)}"
                )
                out.append(self.finding(view, msg, tensor=name, value=dead, threshold=p.threshold_layer))
        return out
