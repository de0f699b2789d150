"""Running AUC of each prediction stream one rank writes, for the evaluator's metrics.

Fed every StepView; keeps, per (mode, stream), the cumulative bucket counts and decayed counts
(half-life `half_life_steps`). `summary()` picks one stream per mode — `pred/predictions` if
present, else the first by name — so the metric labels stay bounded (mode only). The rules
`auc_drop`/`auc_resolution` keep their own state; this is only what dashboards show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainguard.rules import auc
from trainguard.rules.step_view import StepView

PRIMARY_STREAM = "pred/predictions"


@dataclass(frozen=True)
class StreamSummary:
    stream: str
    decayed_auc: float
    decayed_se: float
    cumulative_auc: float
    positive_rate: float


class PredictionTracker:
    """Cumulative and decayed counts per (mode, stream)."""

    def __init__(self, *, half_life_steps: float = 200.0) -> None:
        self.half_life_steps = half_life_steps
        self._decayed: dict[tuple[str, str], auc.DecayedCounts] = {}
        self._total: dict[tuple[str, str], np.ndarray] = {}

    def update(self, view: StepView) -> None:
        for mode, streams in (("train", view.predictions), ("eval", view.eval_predictions)):
            for name, counts in streams.items():
                key = (mode, name)
                c = np.asarray(counts[:2], np.float64)
                self._total[key] = c if key not in self._total else self._total[key] + c
                self._decayed.setdefault(key, auc.DecayedCounts(self.half_life_steps)).update(view.step, c)

    def summary(self) -> dict[str, StreamSummary]:
        """Return the primary stream's figures by mode (train, eval)."""
        out: dict[str, StreamSummary] = {}
        for mode in ("train", "eval"):
            names = sorted(n for m, n in self._total if m == mode)
            if not names:
                continue
            name = PRIMARY_STREAM if PRIMARY_STREAM in names else names[0]
            total = self._total[(mode, name)]
            decayed = self._decayed[(mode, name)].estimate()
            cumulative = auc.auc_from_counts(total)
            n = total.sum()
            out[mode] = StreamSummary(
                stream=name,
                decayed_auc=decayed.auc,
                decayed_se=decayed.se,
                cumulative_auc=cumulative.auc,
                positive_rate=float(total[0].sum() / n) if n else math.nan,
            )
        return out
