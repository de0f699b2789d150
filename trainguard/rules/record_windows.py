"""A series of records read in two windows: its first records (kept once complete) and its latest ones.

Rules that compare how a quantity stands now with how it stood at the start of a run (a held-out metric against the
training loss, a held-out metric against its own first records) keep each series so: the first window holds the
first records until there are at least `records` of them spanning at least `steps` steps; the latest window slides,
trimmed to the fewest latest records that still hold `records` spanning `steps`. `tail` is the latest window of the
records after the very first one, and `after` the running count, mean and squared deviations of those records (the
noise of one record, for a comparison with the first record alone). Pure; state round-trips through `get_state`.
"""

from __future__ import annotations

import math
from typing import Any


class Windows:
    """A series' first window (kept once complete) and its latest one (trimmed as records come)."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state or {}
        self.first: list[tuple[int, float]] = [(int(s), float(x)) for s, x in state.get("first", [])]
        self.done = bool(state.get("done", False))
        self.latest: list[tuple[int, float]] = [(int(s), float(x)) for s, x in state.get("latest", [])]
        self.tail: list[tuple[int, float]] = [(int(s), float(x)) for s, x in state.get("tail", [])]
        """The latest records after the very first one (the first-record reading's window)."""
        self.after: list[float] = [float(v) for v in state.get("after", [0.0, 0.0, 0.0])]
        """Count, mean and sum of squared deviations of every record after the first (Welford's running form)."""

    def add(self, step: int, x: float, records: int, steps: int) -> None:
        if self.first:
            self.tail.append((step, x))
            trim(self.tail, records, steps)
            n, mean, m2 = self.after
            n += 1
            d = x - mean
            mean += d / n
            self.after = [n, mean, m2 + d * (x - mean)]
        if not self.done:
            self.first.append((step, x))
            self.done = complete(self.first, records, steps)
            return
        self.latest.append((step, x))
        trim(self.latest, records, steps)

    def ready(self, records: int, steps: int) -> bool:
        return self.done and complete(self.latest, records, steps)

    def apart(self, records: int, steps: int) -> bool:
        """Both windows complete, the latest starting after the first ends."""
        return self.ready(records, steps) and self.latest[0][0] > self.first[-1][0]

    def compare(self) -> tuple[float, float, float]:
        """The first window's mean, the latest's, and how many standard errors (the spread within each) the latest
        lies above the first (`z_of`). Both windows must hold records."""
        m1, e1 = mean_err(self.first)
        m2, e2 = mean_err(self.latest)
        return m1, m2, z_of(m1, e1, m2, e2)

    def get_state(self) -> dict[str, Any]:
        return {
            "first": [list(r) for r in self.first],
            "done": self.done,
            "latest": [list(r) for r in self.latest],
            "tail": [list(r) for r in self.tail],
            "after": list(self.after),
        }


def trim(rows: list[tuple[int, float]], records: int, steps: int) -> None:
    while len(rows) > records and rows[-1][0] - rows[1][0] + 1 >= steps:
        del rows[0]  # the window without its oldest record still holds `records` spanning `steps`


def t_bound(z: float, dof: float) -> float:
    """The bound a t statistic of `dof` degrees of freedom must pass to be as unlikely as `z` standard errors of a
    normal one (Cornish-Fisher, to the second order): a spread estimated from a few records is itself noisy."""
    return z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)


def complete(rows: list[tuple[int, float]], records: int, steps: int) -> bool:
    return len(rows) >= records and rows[-1][0] - rows[0][0] + 1 >= steps


def mean_err(rows: list[tuple[int, float]]) -> tuple[float, float]:
    """The mean of a window's values and its squared standard error (0 for one value)."""
    xs = [x for _, x in rows]
    n = len(xs)
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return mean, var / n


def z_of(first: float, e1: float, latest: float, e2: float) -> float:
    """How many standard errors `latest` lies above `first` (±inf for a change without noise)."""
    d = latest - first
    if e1 + e2 > 0:
        return d / math.sqrt(e1 + e2)
    return math.copysign(math.inf, d) if d else 0.0
