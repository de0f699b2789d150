"""`all_zero`: tensors whose values are (almost) all exactly zero.

SageMaker Debugger's AllZero: the percentage of elements equal to zero is at least `threshold`.
Watches weights, gradients and activations unless told otherwise (SageMaker needs the collections
named; here they default). Biases start at zero by design and are not watched by default.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from trainguard.api.enums import Collection, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import COL, StepView

_DEFAULT = (Collection.WEIGHTS.value, Collection.GRADIENTS.value, Collection.ACTIVATIONS.value)


class AllZero(base.Rule):
    name = "all_zero"
    category = RuleCategory.WEIGHTS
    training_views_only = True
    summary = "Tensors whose elements are all (or at least `threshold` percent) exactly zero."
    hint = (
        "check the initialisation (weights), the data pipeline and masks (activations), and whether the tensor "
        "is connected to the loss (gradients)"
    )

    class Params(base.Params):
        threshold: float = Field(
            default=100.0,
            gt=0,
            le=100,
            description="Percent of elements equal to zero at or above which a tensor is reported.",
        )

    def check(self, view: StepView) -> list[base.Finding]:
        p: AllZero.Params = self.params  # type: ignore[assignment]
        rows = self.rows(view, default_collections=_DEFAULT)
        if not len(rows):
            return []
        count = view.stats[rows, COL["count"]]
        with np.errstate(divide="ignore", invalid="ignore"):
            pct = 100.0 * view.stats[rows, COL["zero"]] / count
        hit = np.flatnonzero((count > 0) & (pct >= p.threshold))
        if not hit.size:
            return []
        i = int(rows[hit[0]])
        name = view.names[i]
        msg = (
            f"{name}: {base.fmt(pct[hit[0]])}% of {base.fmt(count[hit[0]])} values are zero, at or above the threshold "
            f"{base.fmt(p.threshold)}% {self.where(view)} ({hit.size} of {len(rows)} tensors)"
        )
        return [self.finding(view, msg, tensor=name, value=float(pct[hit[0]]), threshold=p.threshold)]
