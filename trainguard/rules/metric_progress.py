"""How far the quality metrics a run records at evaluation moved from their first record toward their best score.

The evidence that a model learns where its training loss is no measure of it: a self-distillation loss (DINO,
BYOL) is a cross-entropy against a teacher that moves with the student, so it need not fall while the features
improve. The run's own held-out metric (`hook.record_scalar("val_acc", ..., mode="eval")`) says whether they do.

Which way a metric should move is read from its name (`metric_against_loss.direction`); its best score from its
direction and range: 1 for one that should rise and has stayed within [0, 1] (an accuracy, an AUC, a recall), 0 for
one that should fall and has stayed at or above 0 (an error rate, an MAE). A coefficient of determination (`r2`,
`r_squared`, `explained_variance`) should rise and has 1 for its best score however far below 0 it starts: a
regressor's held-out R^2 begins negative (its untrained outputs are further from the targets than their mean) and
is at most 1. Others (a return, a reward: no best known) are not read. A metric has learned when its latest record closed at least `share` of the gap between its
first record and its best score, by at least `significance` times its record-to-record noise (the standard
deviation of its successive differences: a steady trend has little, a metric that swings between records has
much), with three records at least (two differences).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainguard.rules import shared_loss
from trainguard.rules.chance import ranking_chance_level
from trainguard.rules.metric_against_loss import LOWER, direction
from trainguard.rules.step_view import StepView

_TOKEN = re.compile(r"[a-z0-9]+")


def determination(name: str) -> bool:
    """Whether a metric's name says it is a coefficient of determination (R^2, explained variance): at most 1, with
    no lower bound."""
    tokens = set(_TOKEN.findall(name.lower()))
    return bool(tokens & {"r2", "rsquared", "explained"}) or {"r", "squared"} <= tokens


MIN_RECORDS = 3
"""Records a metric needs before it is read: two successive differences give its noise."""


@dataclass(frozen=True)
class Learned:
    """A metric that moved towards its best score: its name, first and latest records, the share of the gap to the
    best score it closed, and its record-to-record noise."""

    name: str
    first: float
    last: float
    share: float
    noise: float


def sign_of(name: str) -> int:
    """+1 for a metric that should rise, -1 for one that should fall, 0 not known: as `direction` reads its name, and
    +1 for a coefficient of determination whatever spelling it has (`r_squared`)."""
    low = name.lower()
    return direction(name) or int(
        determination(low) and "loss" not in low and not set(_TOKEN.findall(low)) & LOWER
    )


def held_out_error(scalars: Mapping[str, float]) -> str | None:
    """The eval-mode scalar that stands in for an eval loss the run does not record: a held-out error (a name that
    says lower is better: MAE, RMSE, an error rate), else a coefficient of determination, read as 1 - R^2 (the
    held-out squared error over the targets' variance: an MSE on a fixed set, rescaled by a constant)."""
    return min((n for n in scalars if direction(n) < 0), default=None) or min(
        (n for n in scalars if determination(n) and sign_of(n) > 0),
        default=None,
    )


def error_of(name: str, scalars: Mapping[str, float]) -> float | None:
    """The held-out error `name` stands for in these scalars (1 - R^2 for a coefficient of determination), or None
    where they do not record it."""
    x = scalars.get(name)
    if x is None or direction(name) < 0:
        return x
    return 1.0 - x


def error_name(name: str) -> str:
    """How a finding names the held-out error `name` stands for."""
    return f"held-out error {name!r}" if direction(name) < 0 else f"held-out error 1 - {name!r}"


class _Series:
    """One metric's first, previous and extreme records, their count, and the spread of its successive differences."""

    def __init__(self, state: list[Any] | None = None) -> None:
        first, last, lo, hi, n, diffs = (
            state if state and len(state) == 6 else (None, None, math.inf, -math.inf, 0, None)
        )
        self.first: float | None = first
        self.last: float | None = last
        self.lo, self.hi, self.n = float(lo), float(hi), int(n)
        self.diffs = shared_loss.Spread()
        self.diffs.set_state(diffs)

    def push(self, x: float) -> None:
        if self.last is not None:
            self.diffs.push(x - self.last)
        self.first = x if self.first is None else self.first
        self.last, self.lo, self.hi, self.n = x, min(self.lo, x), max(self.hi, x), self.n + 1

    def best(self, sign: int, unbounded_below: bool = False) -> float | None:
        if sign > 0 and (unbounded_below or 0.0 <= self.lo) and self.hi <= 1.0:
            return 1.0
        if sign < 0 and self.lo >= 0.0:
            return 0.0
        return None

    def get_state(self) -> list[Any]:
        return [self.first, self.last, self.lo, self.hi, self.n, self.diffs.get_state()]


class MetricProgress:
    """The eval-mode quality metrics a run records, each as a series of its records."""

    def __init__(self) -> None:
        self.series: dict[str, _Series] = {}

    def push(self, view: StepView) -> None:
        """Read this view's eval-mode scalars whose names say which way they should move."""
        for name, x in view.eval_scalars.items():
            if sign_of(name) and math.isfinite(x):
                self.series.setdefault(name, _Series()).push(float(x))

    def learned(self, share: float, significance: float) -> Learned | None:
        """The first metric whose latest record closed `share` of the gap from its first record to its best score,
        by `significance` times its record-to-record noise; None when none did (or none is recorded)."""
        for name, s in self.series.items():
            sign = sign_of(name)
            best = s.best(sign, determination(name))
            if best is None or s.n < MIN_RECORDS or s.first is None or s.last is None:
                continue
            gap, gain = sign * (best - s.first), sign * (s.last - s.first)
            noise = math.sqrt(s.diffs.var)
            if gap > 0 and gain >= share * gap and gain >= significance * noise:
                return Learned(name, s.first, s.last, gain / gap, noise)
        return None

    def latest(self) -> dict[str, float]:
        """Each metric's latest record (a mark to measure later progress from: `rising_since`)."""
        return {name: s.last for name, s in self.series.items() if s.last is not None}

    def rising_since(self, mark: dict[str, float], significance: float) -> Learned | None:
        """The first metric that moved towards its best score since `mark` (an earlier `latest`) by `significance` times
        its record-to-record noise, with three records at least; None when none did."""
        for name, s in self.series.items():
            sign, before = sign_of(name), mark.get(name)
            if before is None or s.last is None or s.first is None or s.n < MIN_RECORDS:
                continue
            gain = sign * (s.last - before)
            noise = math.sqrt(s.diffs.var)
            if gain > 0 and gain >= significance * noise:
                best = s.best(sign, determination(name))
                share = gain / abs(best - before) if best is not None and best != before else math.nan
                return Learned(name, before, s.last, share, noise)
        return None

    def skilled(self, share: float, significance: float) -> Learned | None:
        """The first metric whose latest record lies `share` of the way from its chance level to its best score and
        `significance` times its record-to-record noise beyond that: a model that scores so has learned something,
        whatever it scored at its first record (a concordance index at 0.77 from the first evaluation on). Only a metric
        whose chance level holds whatever the data (`chance.ranking_chance_level` without the outputs' count: an area
        under the ROC curve, a concordance index read as C, a correlation, an R^2): an accuracy scores the majority class's share
        by predicting it. None when none does."""
        for name, s in self.series.items():
            chance = ranking_chance_level(name, None, concordance=True)
            if chance is None or s.n < MIN_RECORDS or s.first is None or s.last is None or s.hi > 1.0:
                continue
            band = chance + share * (1.0 - chance)
            noise = math.sqrt(s.diffs.var)
            if s.last - band >= significance * noise and s.last > band:
                return Learned(name, s.first, s.last, (s.last - chance) / (1.0 - chance), noise)
        return None

    def get_state(self) -> dict[str, list[Any]]:
        return {name: s.get_state() for name, s in self.series.items()}

    def set_state(self, state: dict[str, list[Any]] | None) -> None:
        self.series = {str(name): _Series(list(v)) for name, v in (state or {}).items()}
