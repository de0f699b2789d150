"""Helpers several rules share, about the model and its tensors: the output layer, kernel pairs and
lookup tables of the catalogue, norms (`total_l2`, `global_norm`), per-unit vectors, a bounded window with O(1)
medians (`Window`), a value per tensor kept across catalogue changes (`RowState`), the recorded
learning rate against its peak (`PeakLearningRate`) and the weights' norm blowing up (`WeightBlowUp`).
Helpers about the loss are in `shared_loss.py`.

Each helper holds its own small state and saves it as JSON-able values, so the rule that owns it
stays restorable. Everything is bounded: a window keeps at most `size` values, so a rule does
O(size) work per step, never O(steps).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Collection
from trainguard.rules import base, parameter_use
from trainguard.rules.step_view import COL, StepView

_ACTIVATIONS = (Collection.ACTIVATIONS.value,)

MAD_TO_SIGMA = 1.4826
"""Scale factor that makes the median absolute deviation estimate sigma for normal data."""


LOOKUP_TABLES = frozenset({"Embedding", "EmbeddingBag"})
"""Module classes whose weights are lookup tables, not kernels: only the rows a batch looked up get a gradient."""

BOUNDED = {"tanh": 1.0, "sigmoid": 1.0, "hardtanh": 1.0, "softsign": 1.0}
"""Activations with outputs bounded by this magnitude: one whose every output sits at the bound (mean |output| equal
to it, as float32 rounds a tanh of an input above 9) is saturated in every element and passes back no gradient."""
HALF_RANGE = {"tanh": 1.0, "sigmoid": 0.5, "hardtanh": 1.0, "softsign": 1.0}
"""Half the width of a bounded activation's output range: the std of outputs pinned half at each end, the largest std
such an activation can have (outputs spread evenly over the range have 0.58 of it)."""
UNBOUNDED = frozenset({"relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "prelu", "selu"})
"""Activation kinds whose outputs grow with their inputs (the scale checks read these)."""


def output_classes(view: StepView) -> int | None:
    """K for chance level ln K: the outputs of the last dense or convolution kernel in forward order (PyTorch
    keeps them in dim 0), when the catalogue names module classes; None for fewer than two outputs (a binary
    logit or a regression: ln 2 would be a coincidence for a squared error) or when unknown."""
    layer = output_layer(view)
    return layer[1] if layer is not None and layer[1] >= 2 else None


_last_output_layer: tuple[object, tuple[int, int] | None] = ((), None)
"""The metadata tuple `output_layer` last read and its answer: views of one layout share that tuple, and several
rules ask about every view."""


def output_layer(view: StepView) -> tuple[int, int] | None:
    """(forward order, outputs) of the last dense or convolution kernel, when the catalogue names module classes."""
    global _last_output_layer
    meta, answer = _last_output_layer
    if meta is view.meta:
        return answer
    last: tuple[int, int] | None = None
    for m in view.meta:
        if m.collection != Collection.WEIGHTS.value or not m.trainable or len(m.shape) < 2 or m.order is None:
            continue
        if m.module_type is None or m.module_type in LOOKUP_TABLES:
            continue
        if last is None or m.order > last[0]:
            last = (m.order, int(m.shape[0]))
    _last_output_layer = (view.meta, last)
    return last


class KernelPair:
    """Rows of the first and last kernel gradients (2-D or more, with an execution order) among
    the given rows, cached until the view's tensor names change; None with fewer than two.
    Lookup tables (the catalogue's module class of the parameter, `LOOKUP_TABLES`) are no kernels:
    a table's gradient is as small as the share of rows a batch uses, whatever the depth; nor are tokens
    shaped to broadcast over the batch (`parameter_use.broadcast_token`: a learned query [1, 1, d], whose
    gradient is a handful of elements, first in forward order), nor other parameters a module of the user's own
    declares (`parameter_use.own_parameter`: a positional table [n, d] added to the activations, first in forward
    order, whose gradient is the batch's sum over positions, no layer's)."""

    def __init__(self) -> None:
        self._names: tuple[str, ...] | None = None
        self._pair: tuple[int, int] | None = None
        self.ordered: list[tuple[int, int]] = []
        """(forward order, row) of every kernel the pair was chosen from, in forward order (as of the last call)."""

    def __call__(self, view: StepView, rows: np.ndarray) -> tuple[int, int] | None:
        if self._names is not view.names and self._names != view.names:
            self._names = view.names
            tables = {
                m.name
                for m in view.meta
                if m.module_type in LOOKUP_TABLES
                or (m.trainable and (parameter_use.broadcast_token(m) or parameter_use.own_parameter(m)))
            }
            self.ordered = kernels = sorted(
                (view.meta[i].order, int(i))
                for i in rows
                if len(view.meta[i].shape) >= 2
                and view.meta[i].order is not None
                and view.names[i].removeprefix("grad/") not in tables
            )
            self._pair = (kernels[0][1], kernels[-1][1]) if len(kernels) >= 2 else None
        return self._pair


class LookupTables:
    """Which of the given rows are lookup tables or their gradients (the catalogue's module class of the
    parameter, `LOOKUP_TABLES`), as a boolean mask cached for the rows array given (`Rule.rows` returns
    the same array until the view's tensor names change). A table's gradient is zero in every row a
    batch did not look up."""

    def __init__(self) -> None:
        self._rows: np.ndarray | None = None
        self._mask = np.zeros(0, bool)

    def __call__(self, view: StepView, rows: np.ndarray) -> np.ndarray:
        if rows is not self._rows:
            self._rows = rows
            tables = {m.name for m in view.meta if m.module_type in LOOKUP_TABLES}
            self._mask = np.asarray([view.names[int(i)].removeprefix("grad/") in tables for i in rows], bool)
        return self._mask


def steps_since(last_step: int | None, step: int) -> int:
    """Training steps from the previous view to this one (the save interval, as the views show it):
    at least 1, and 1 for the first view."""
    return 1 if last_step is None else max(step - last_step, 1)


def total_l2(l2: np.ndarray) -> float:
    """sqrt(sum of the squares) of per-tensor l2 norms: the norm of all of them together, NaN for none.
    `math.hypot` scales, so huge norms do not overflow."""
    return math.hypot(*l2.tolist()) if len(l2) else math.nan


def global_norm(view: StepView, l2: np.ndarray, scalar: str) -> float:
    """The global gradient norm: the recorded scalar if there is one, else the `total_l2` of the l2 given."""
    v = view.scalars.get(scalar)
    if v is not None:
        return float(v)
    return total_l2(l2)


def unit_layers(rule: base.Rule, view: StepView, kind: str) -> list[tuple[str, np.ndarray]]:
    """The per-unit vectors of `kind` ("active", "saturated") of the activations `rule` watches."""
    return [
        (name, vec)
        for (k, name), vec in view.units.items()
        if k == kind and rule.watches(name, Collection.ACTIVATIONS.value, default_collections=_ACTIVATIONS)
    ]


def per_shard(view: StepView, name: str) -> str:
    """The note put after a tensor's name in a finding read from its per-unit vectors or histogram, " (per shard:
    why)", where those are one part of a sharded tensor, not the whole's (`StepView.per_shard`); else ""."""
    why = view.per_shard.get(name)
    return f" (per shard: {why})" if why else ""


def has_units(view: StepView, kind: str) -> bool:
    """Whether the view carries any per-unit vector of `kind` (Tier-1 steps only)."""
    return any(k == kind for k, _ in view.units)


class RowState:
    """A float per watched tensor, kept aligned with the view's rows and carried over by name when
    the catalogue changes; saved as {name: value} (non-finite values are dropped)."""

    def __init__(self, fill: float) -> None:
        self.fill = fill
        self.values = np.zeros(0)
        self._rows: np.ndarray | None = None
        self._names: tuple[str, ...] = ()
        self._saved: dict[str, float] = {}

    def align(self, view: StepView, rows: np.ndarray) -> np.ndarray:
        """Return float64[len(rows)] for `rows` (a cached array from `Rule.rows`), realigned if it changed."""
        if rows is not self._rows:
            old = self.as_dict() or self._saved
            self._rows = rows
            self._names = tuple(view.names[i] for i in rows)
            self.values = np.asarray([old.get(n, self.fill) for n in self._names], dtype=np.float64)
            self._saved = {}
        return self.values

    def as_dict(self) -> dict[str, float]:
        return {n: v for n, v in zip(self._names, self.values.tolist()) if math.isfinite(v)}

    def get_state(self) -> dict[str, float]:
        return {**self._saved, **self.as_dict()}

    def set_state(self, state: dict[str, float]) -> None:
        self._saved = {k: float(v) for k, v in state.items()}
        self._rows, self._names, self.values = None, (), np.zeros(0)


class Window:
    """The last `size` values of a series, kept in order and sorted, for O(1) medians.

    Pushing costs O(log size) plus a short memmove; the MAD (O(size)) is computed only when a
    value is far enough above the median that it could exceed a z threshold at all.
    """

    def __init__(self, size: int) -> None:
        self.values: deque[float] = deque(maxlen=size)
        self._sorted: list[float] = []

    def __len__(self) -> int:
        return len(self.values)

    def push(self, x: float) -> None:
        x = float(x)
        if len(self.values) == self.values.maxlen:
            del self._sorted[bisect.bisect_left(self._sorted, self.values[0])]
        self.values.append(x)
        bisect.insort(self._sorted, x)

    def array(self) -> np.ndarray:
        return np.fromiter(self.values, dtype=np.float64, count=len(self.values))

    def median(self) -> float:
        s, n = self._sorted, len(self._sorted)
        return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])

    def spike(self, x: float, *, threshold: float, min_scale: float) -> tuple[float, float] | None:
        """Return (z, median) when x's robust z, (x - median) / max(1.4826 MAD, min_scale), exceeds
        `threshold`; else None. Cheap when x is near the median: the scale is never below min_scale."""
        med = self.median()
        if x - med <= threshold * min_scale:
            return None
        a = np.asarray(self._sorted)
        scale = max(MAD_TO_SIGMA * float(np.median(np.abs(a - med))), min_scale)
        z = (x - med) / scale
        return (z, med) if z > threshold else None

    def get_state(self) -> list[float]:
        return list(self.values)

    def set_state(self, values: Sequence[float]) -> None:
        self.values.clear()
        self.values.extend(float(v) for v in values)
        self._sorted = sorted(self.values)


def lowered_lr_fraction(default: float, effect: str, *, why: str, otherwise: str) -> Any:
    """A rule's `lowered_lr_fraction` parameter: `effect` while the recorded learning rate is below that fraction of
    its peak (`PeakLearningRate.lowered`), for the reason `why`; None: `otherwise`."""
    return Field(
        default=default,
        gt=0,
        le=1,
        description=f"{effect} while the recorded learning rate (scalar `lr`; the PyTorch hook records it) is below "
        f"this fraction of its highest recorded value: {why}. None: {otherwise}.",
    )


class PeakLearningRate:
    """The learning rate a view records (scalar `lr`, which the PyTorch hook records for the first
    parameter group) against the highest one recorded so far."""

    def __init__(self, name: str = "lr") -> None:
        self.name = name
        self.peak: float | None = None
        self.current: float | None = None

    def push(self, view: StepView) -> None:
        x = view.scalars.get(self.name)
        if x is None or not math.isfinite(x):
            return
        self.current = float(x)
        self.peak = self.current if self.peak is None else max(self.peak, self.current)

    def lowered(self, fraction: float) -> bool:
        """True when the latest recorded learning rate is below `fraction` of the peak (a schedule lowered it)."""
        return self.current is not None and self.peak is not None and self.current < fraction * self.peak

    def get_state(self) -> dict[str, Any]:
        return {"lr_peak": self.peak, "lr": self.current}

    def set_state(self, state: dict[str, Any]) -> None:
        self.peak = None if state.get("lr_peak") is None else float(state["lr_peak"])
        self.current = None if state.get("lr") is None else float(state["lr"])


def init_norm(view: StepView, rows: np.ndarray) -> float:
    """The total l2 norm PyTorch's default initialisation gives the kernels among `rows` (2-D or more; uniform
    within +-1/sqrt(fan_in), so a kernel of d outputs has norm sqrt(d / 3) whatever its fan-in). Biases and
    1-D tensors add nothing: the floor stays below what the weights start from."""
    outputs = sum(view.meta[int(i)].shape[0] for i in rows if len(view.meta[int(i)].shape) >= 2)
    return math.sqrt(outputs / 3)


class WeightBlowUp:
    """The weights' total l2 norm multiplying between two views: a step far too large.

    A view is a blow-up when the norm grew `growth`x since the previous view, or `per_step`x per
    training step when the views are so close that `growth` would need more (at every step: 2x),
    and in any case at least `rate`x per training step between them (views far apart leave
    healthy weights time to grow from a small init).
    The LR x100, unnormalised-input and loss-scale x512 runs of the detection benchmark grow 35x to
    1e18x in 5 steps and 4x or more in one; healthy runs at most 3% in 5 steps and 0.6% in one.
    `seen` keeps the first blow-up: small updates after it are its aftermath (dead units pass no
    gradient), not a learning rate too low.

    Weights far below `init_norm` (under half the norm PyTorch's default initialisation gives their
    shapes: a linear probe's head initialised at std 0.01 or 0.001) grow towards a working scale in
    their first steps, 7-9x in 10 steps on the realistic suite's probes, to at most 1.9x that norm; their
    growth is measured from `init_norm` instead (`floored`). Weights that start near it or above are
    measured from their previous norm.

    The first view with the weights is compared with their initial-weights record (`init/<name>`) in the same
    view, where every weight has one: the hook reads it in the optimizer's pre-hook of the step whose post-hook
    reads the weights, so the two are one update apart and the first update is judged as any step is (at 2x).
    Gradients left multiplied by a loss scale of 1024 (SGD at lr 0.05) take the weights to 2.1-3.4x that norm in
    the first step, a learning rate 100x too high 3.7x; the healthy runs of the detection suites that record it
    (377 of them) at most 1.52x (SGD with Nesterov momentum on an ArcFace head)."""

    def __init__(self, growth: float, per_step: float, rate: float = 1.0) -> None:
        self.growth, self.per_step, self.rate = growth, per_step, rate
        self.norm: float | None = None
        self.step: int | None = None
        self.names: tuple[str, ...] = ()
        self.rows = np.zeros(0, np.int64)
        """The rows given with the last view (of `names`): views with other tensor sets compare the same weights."""
        self.steps = 0
        """Training steps between the last two views compared."""
        self.l2 = np.zeros(0)
        self.fastest = -1
        """Of the rows given, the one whose norm grew most at the latest blow-up."""
        self.seen: tuple[int, float] | None = None
        self.floored = False
        """Whether the latest growth was measured from `init_norm` (the previous norm was far below it)."""

    def push(self, view: StepView, rows: np.ndarray) -> float | None:
        """The growth factor if this view is a blow-up, else None."""
        if not len(rows):
            return None
        l2 = view.stats[rows, COL["l2"]]
        if np.isnan(l2).any():
            return None
        norm = total_l2(l2)
        # the same weights, also when the views' tensor sets differ (step 0's holds the initial-weights record)
        same = len(rows) == len(self.l2) and (
            view.names == self.names or [view.names[i] for i in rows] == [self.names[i] for i in self.rows]
        )
        prev, prev_l2 = self.norm, self.l2
        floor = init_norm(view, rows)
        steps = self.steps = steps_since(self.step, view.step)
        if prev is None and (initial := self._initial_l2(view, rows)) is not None:
            # the first view with these weights: its initial-weights record is one optimizer step before them
            same, prev, prev_l2, steps = True, total_l2(initial), initial, 1
            self.steps = 1
        self.norm, self.step, self.names, self.rows, self.l2 = norm, view.step, view.names, rows, l2
        if not same or prev is None or not 0 < prev < math.inf:
            return None
        self.floored = prev < 0.5 * floor
        growth = norm / (floor if self.floored else prev)
        span = min(steps, 64)  # capped: no float overflow
        if growth < max(min(self.growth, self.per_step**span), self.rate**span):
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            self.fastest = int(np.nanargmax(np.where(prev_l2 > 0, l2 / prev_l2, 0.0)))
        if self.seen is None:
            self.seen = (view.step, growth)
        return growth

    @staticmethod
    def _initial_l2(view: StepView, rows: np.ndarray) -> np.ndarray | None:
        """The l2 norms of the initial-weights records (`init/<name>`) of `rows` in this view, None unless every
        row has a finite one (the hook reads them in the optimizer's pre-hook of the step whose post-hook reads
        the weights: one update apart)."""
        initial = [view.initial(view.names[int(i)]) for i in rows]
        if any(j is None for j in initial):
            return None
        l2 = view.stats[np.asarray(initial, np.int64), COL["l2"]]
        return l2 if np.isfinite(l2).all() else None

    def get_state(self) -> dict[str, Any]:
        return {
            "weight_norm": self.norm,
            "weight_norm_step": self.step,
            "blow_up": None if self.seen is None else list(self.seen),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        norm, step, seen = state.get("weight_norm"), state.get("weight_norm_step"), state.get("blow_up")
        self.norm = None if norm is None else float(norm)
        self.step = None if step is None else int(step)
        self.names = ()  # the catalogue is not saved: the first view after a restart only sets the norm
        self.seen = None if seen is None else (int(seen[0]), float(seen[1]))
