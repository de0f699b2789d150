"""`saturated_activation`: sigmoid/tanh layers where most units sit in the flat part, per unit.

Reads the Tier-1 vectors `units[("saturated", act/<module>)]`: the fraction of samples on which
each unit's output was saturated (sigmoid outside [0.01, 0.99], |tanh| above 0.99; the bound is
fixed by capture). A unit is saturated when it is unsaturated on fewer than `threshold_inactivity`
percent of samples; a layer when more than `threshold_layer` percent of its units are.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, RuleCategory
from trainguard.rules import base, shared
from trainguard.rules.step_view import StepView


class SaturatedActivation(base.Rule):
    name = "saturated_activation"
    category = RuleCategory.ACTIVATIONS
    default_action = Action.NOTIFY
    summary = (
        "Sigmoid/tanh layers where more than half the units are saturated on almost every sample (per unit)."
    )
    hint = (
        "scale the inputs (normalise to zero mean, unit variance), use Glorot initialisation or a smaller init "
        "scale, lower the learning rate, or switch to ReLU-family activations"
    )

    class Params(base.Params):
        threshold_inactivity: float = Field(
            default=1.0,
            ge=0,
            le=100,
            description="A unit is saturated when it is unsaturated on fewer than this percent of samples.",
        )
        threshold_layer: float = Field(
            default=50.0,
            ge=0,
            le=100,
            description="A layer is reported when more than this percent of its units are saturated.",
        )
        trigger_k: int = base.trigger_k(3)
        trigger_n: int = base.trigger_n(3)

    def applies(self, view: StepView) -> bool:
        return shared.has_units(view, "saturated")

    def check(self, view: StepView) -> list[base.Finding]:
        p: SaturatedActivation.Params = self.params  # type: ignore[assignment]
        out = []
        for name, saturated in shared.unit_layers(self, view, "saturated"):
            if not saturated.size:
                continue
            n = int(np.count_nonzero((1.0 - saturated) * 100.0 < p.threshold_inactivity))
            stuck = 100.0 * n / saturated.size
            if stuck > p.threshold_layer:
                msg = (
                    f"{name}{shared.per_shard(view, name)}: {n} of {saturated.size} units ({base.fmt(stuck)}%) are saturated on more than "
                    f"{base.fmt(100 - p.threshold_inactivity)}% of samples, above the threshold "
                    f"{base.fmt(p.threshold_layer)}% {self.where(view)}"
                )
                out.append(self.finding(view, msg, tensor=name, value=stuck, threshold=p.threshold_layer))
        return out
