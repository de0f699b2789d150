"""Stale gradients: a parameter's gradient that no backward of this training loop writes.

A parameter left out of the loss being trained (a pretraining head kept on a model fine-tuned
through another head) and held by no optimizer keeps the gradient of the last backward that
reached it: nothing zeroes it (`optimizer.zero_grad()` clears only the optimizer's parameters)
and nothing writes a new one. At most a global-norm clip over `model.parameters()` rescales it
in place, every element by the same factor. Such a gradient is no evidence that the loss reaches
the parameter: `gradient_not_applied` would read "gets a gradient, not applied" and
`unchanged_tensor` "a trainable layer left behind", where the parameter is simply unused.

The evidence is read from the gradient's recorded statistics: at two views in a row its shape
(mean, std, min and max, each over its l2 norm) is the same to `SHAPE_RTOL` of its largest element
and its norm did not grow. A gradient of a new mini-batch has a different shape (four statistics agreeing to 1e-4
relative is not a coincidence of sampling); a full-batch gradient of weights that do not move
is the same gradient, and the parameter is unused for this loss either way.
"""

from __future__ import annotations

import math
from typing import Any

from trainguard.api.enums import Collection
from trainguard.rules.step_view import COL, StepView

GRAD_PREFIX = "grad/"
_SHAPE = tuple(COL[c] for c in ("mean", "std", "min", "max"))
SHAPE_RTOL = 1e-4
"""Relative agreement of each shape statistic (to the gradient's norm) between two views that marks the same
gradient rescaled: far above float32 rounding of one rescale, far below the change of a new mini-batch."""
_GROWTH_RTOL = 1e-6
"""A rescaled stale gradient never grows (a clip only shrinks it); rounding may add this much."""


class StaleGradients:
    """Per parameter, the latest view's gradient shape; `update` names the parameters whose gradient is stale."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[float, ...]] = {}
        """By parameter name: the gradient's l2 norm, then its shape statistics over that norm."""

    def update(self, view: StepView) -> set[str]:
        """Read this view's gradient rows; return the parameters whose gradient is the previous view's, rescaled."""
        stale: set[str] = set()
        grads = Collection.GRADIENTS.value
        for i, name in enumerate(view.names):
            if not name.startswith(GRAD_PREFIX) or view.meta[i].collection != grads:
                continue
            l2 = float(view.stats[i, COL["l2"]])
            if not (math.isfinite(l2) and l2 > 0):
                self.last.pop(name, None)
                continue
            now = (l2, *(float(view.stats[i, c]) / l2 for c in _SHAPE))
            before = self.last.get(name)
            self.last[name] = now
            if before is not None and _same_gradient(before, now):
                stale.add(name.removeprefix(GRAD_PREFIX))
        return stale

    def get_state(self) -> dict[str, Any]:
        return {"stale_gradient": {n: list(v) for n, v in self.last.items()}}

    def set_state(self, state: dict[str, Any]) -> None:
        self.last = {n: tuple(float(x) for x in v) for n, v in state.get("stale_gradient", {}).items()}


def _same_gradient(before: tuple[float, ...], now: tuple[float, ...]) -> bool:
    if now[0] > before[0] * (1 + _GROWTH_RTOL):
        return False
    shape_a, shape_b = before[1:], now[1:]
    if not all(math.isfinite(x) for x in (*shape_a, *shape_b)):
        return False
    # on the scale of the largest element (at least 1/sqrt(n) of the norm): a mean that is zero up to rounding
    # (a softmax head's gradient rows sum to 0) is compared on that scale, not relative to itself
    scale = max(abs(shape_a[2]), abs(shape_a[3]), abs(shape_b[2]), abs(shape_b[3]))
    return all(abs(a - b) <= SHAPE_RTOL * scale for a, b in zip(shape_a, shape_b, strict=True))
