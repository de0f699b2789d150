"""A held-out metric that has only got worse since its first records, beside a training loss that did not rise.

`overfit` reads this: a model that learns something of use is at least once better on held-out data than at its first
evaluations. One whose held-out score has stood below its first window's best at every record since, and whose
latest window is worse than its first by `significance` standard errors of its own noise and by `worsening` of the
first window's magnitude, while the training loss's latest window is not above its first, fits what the held-out
data does not share: too few distinct training examples (rows deduplicated on the wrong key), a feature the
training rows carry and held-out rows lack, codes that name one thing in training and another in held-out data.

Each eval-mode metric whose name says which way is better (`metric_against_loss.direction`) is kept in two windows
(`record_windows.Windows`): its first `RECORDS` records spanning at least `STEPS` steps, and its latest ones; the
training loss (every step's) likewise. The two windows of each are apart (the latest starts after the first ends), so
the earliest verdict comes at the eighth record. A verdict must hold at `confirm` records in a row: the latest window
slides one record at a time, and a noisy metric tested again at each one crosses a bound by chance. Pure; state
round-trips through `get_state`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainguard.rules import shared_loss
from trainguard.rules.metric_against_loss import direction
from trainguard.rules.record_windows import Windows
from trainguard.rules.step_view import StepView

RECORDS = 4
"""Records a window holds at least."""
STEPS = 50
"""Steps a window spans at least."""


@dataclass(frozen=True)
class Worsened:
    """The evidence of a verdict: the metric, its windows' means and steps, and the training loss's."""

    name: str
    sign: int
    """+1: the metric should rise; -1: it should fall."""
    first: float
    latest: float
    first_steps: tuple[int, int]
    latest_steps: tuple[int, int]
    best: float
    """The first window's best record."""
    share: float
    """How much worse the latest window is, as a share of the first window's magnitude."""
    z: float
    """How many standard errors of the metric's own noise worse."""
    loss_first: float
    loss_latest: float


class WorseFromStart:
    """Judges every directed held-out metric of a run at each record (see the module docstring)."""

    def __init__(self, worsening: float, significance: float, confirm: int) -> None:
        self.worsening = worsening
        self.significance = significance
        self.confirm = confirm
        self.read = shared_loss.LossReader(single=True)
        self.loss = Windows()
        self.metrics: dict[str, Windows] = {}
        self.best: dict[str, float] = {}
        """Per metric, its best record since its first window was complete (signed: higher is better)."""
        self.streak: dict[str, int] = {}

    def __call__(self, view: StepView) -> Worsened | None:
        loss = self.read(view)
        if loss is not None and math.isfinite(loss):
            self.loss.add(view.step, loss, RECORDS, STEPS)
        for name, x in view.eval_scalars.items():
            sign = direction(name)
            if not sign or not math.isfinite(x):
                continue
            w = self.metrics.setdefault(name, Windows())
            if w.done:
                self.best[name] = max(self.best.get(name, -math.inf), sign * x)
            w.add(view.step, float(x), RECORDS, STEPS)
            found = self._judge(name, sign, w)
            self.streak[name] = self.streak.get(name, 0) + 1 if found else 0
            if found and self.streak[name] >= self.confirm:
                return found
        return None

    def _judge(self, name: str, sign: int, w: Windows) -> Worsened | None:
        if not w.apart(RECORDS, STEPS) or not self.loss.apart(RECORDS, STEPS):
            return None
        l1, l2, _ = self.loss.compare()
        best = max(sign * x for _, x in w.first)
        # the training loss rose (not fitting), or the metric was once better than at its start
        if l2 > l1 or self.best.get(name, -math.inf) > best:
            return None
        m1, m2, shift = w.compare()
        z = -sign * shift
        share = sign * (m1 - m2) / abs(m1) if m1 else 0.0
        if z < self.significance or share < self.worsening:
            return None
        return Worsened(
            name=name, sign=sign, first=m1, latest=m2, first_steps=(w.first[0][0], w.first[-1][0]),
            latest_steps=(w.latest[0][0], w.latest[-1][0]), best=sign * best, share=share, z=z,
            loss_first=l1, loss_latest=l2,
        )  # fmt: skip

    def get_state(self) -> dict[str, Any]:
        return {
            "loss": self.loss.get_state(),
            "metrics": {k: w.get_state() for k, w in self.metrics.items()},
            "best": dict(self.best),
            "streak": dict(self.streak),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.loss = Windows(state.get("loss"))
        self.metrics = {k: Windows(v) for k, v in state.get("metrics", {}).items()}
        self.best = {k: float(v) for k, v in state.get("best", {}).items()}
        self.streak = {k: int(v) for k, v in state.get("streak", {}).items()}
