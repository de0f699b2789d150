"""`tensor_variance`: tensors whose variance leaves a band (SageMaker's TensorVariance).

Variance is the square of the `std` column. Watches weights unless told otherwise; the upper
bound defaults to 10 (a weight std above 3 is far outside any standard initialisation and a sign
of divergence), the lower bound is off, since all-ones norm gains have variance 0 by design.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, model_validator

from trainguard.api.enums import Collection, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import COL, StepView

_WEIGHTS = (Collection.WEIGHTS.value,)


class TensorVariance(base.Rule):
    name = "tensor_variance"
    category = RuleCategory.WEIGHTS
    training_views_only = True
    summary = "Tensors whose variance is above `max_threshold` or below `min_threshold`."
    hint = "check the initialisation scale and the learning rate; add weight decay or normalisation if the weights drift"

    class Params(base.Params):
        max_threshold: float | None = Field(
            default=10.0, gt=0, description="Variance above which a tensor is reported (None: off)."
        )
        min_threshold: float | None = Field(
            default=None, ge=0, description="Variance below which a tensor is reported (None: off)."
        )
        trigger_k: int = base.trigger_k(3)
        trigger_n: int = base.trigger_n(5)

        @model_validator(mode="after")
        def _some_bound(self) -> TensorVariance.Params:
            if self.max_threshold is None and self.min_threshold is None:
                raise ValueError("set max_threshold, min_threshold or both")
            if (
                self.max_threshold is not None
                and self.min_threshold is not None
                and self.min_threshold >= self.max_threshold
            ):
                raise ValueError(
                    f"min_threshold {self.min_threshold} must be below max_threshold {self.max_threshold}"
                )
            return self

    def check(self, view: StepView) -> list[base.Finding]:
        p: TensorVariance.Params = self.params  # type: ignore[assignment]
        rows = self.rows(view, default_collections=_WEIGHTS)
        if not len(rows):
            return []
        std = view.stats[rows, COL["std"]]  # compared as std against sqrt(bound): squaring could overflow
        high = std > math.sqrt(p.max_threshold) if p.max_threshold is not None else np.zeros(len(rows), bool)
        low = std < math.sqrt(p.min_threshold) if p.min_threshold is not None else np.zeros(len(rows), bool)
        hit = np.flatnonzero(high | low)
        if not hit.size:
            return []
        j = int(hit[0])
        var = float(std[j]) * float(std[j])
        name = view.names[int(rows[j])]
        side, bound = ("above", p.max_threshold) if high[j] else ("below", p.min_threshold)
        msg = (
            f"{name}: variance {base.fmt(var)} is {side} the threshold {base.fmt(bound)} {self.where(view)} "
            f"({hit.size} of {len(rows)} tensors)"
        )
        return [self.finding(view, msg, tensor=name, value=var, threshold=bound)]
