"""Signals and small state holders that several rules share: the loss of a view (`LossReader`),
the global gradient norm, per-unit vectors, a bounded window with O(1) medians (`Window`), a value
per tensor kept across catalogue changes (`RowState`), whether the loss still improves or never
did (`Progress`, `LossGate`: outcome gating of soft symptoms), a floor under losses near zero
(`LossFloor`), and the recorded learning rate against its peak (`PeakLearningRate`).

Each helper holds its own small state and saves it as JSON-able values, so the rule that owns it
stays restorable. Everything is bounded: a window keeps at most `size` values, so a rule does
O(size) work per step, never O(steps).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Collection
from trainguard.rules import base
from trainguard.rules.view import COL, StepView

_ACTIVATIONS = (Collection.ACTIVATIONS.value,)

EVAL_PREFIXES = ("val", "eval", "test", "valid")
"""A train-mode scalar named like these (val_loss) is a validation loss, never the training loss."""

MAD_TO_SIGMA = 1.4826
"""Scale factor that makes the median absolute deviation estimate sigma for normal data."""


class LossReader:
    """Reads the loss of a view.

    Train mode: the scalar `name`, else `loss`, else the first train scalar whose name contains
    "loss" and does not start like a validation loss (val_loss), else the mean of the first tensor
    in the `losses` collection. Eval mode: the same among eval scalars, else a train-mode scalar
    named like a validation loss (val_loss recorded without mode="eval").

    With `single`, a run that records several losses and no total (`d_loss` and `g_loss` of a GAN,
    each task's loss without their sum) has no loss to read: which of them should go down is not
    known, and an adversarial loss need not go down at all. Once a second such loss has been seen,
    none is read again (a view may carry only one of them: the one recorded after an optimizer step
    can land on an unsaved step).
    """

    def __init__(
        self,
        *,
        mode: str = "train",
        name: str | None = None,
        use_losses_collection: bool = True,
        single: bool = False,
    ) -> None:
        self.mode = mode
        self.name = name
        self.use_losses_collection = use_losses_collection
        self.single = single
        self._losses_seen: set[str] = set()
        self._names: tuple[str, ...] | None = None
        self._row: int | None = None
        self._picked: dict[tuple[bool, frozenset[str]], str | None] = {}

    def __call__(self, view: StepView) -> float | None:
        if self.mode == "eval":
            found = self._scalar(view.eval_scalars, validation_only=False)
            return (
                found
                if found is not None or not view.scalars
                else self._scalar(view.scalars, validation_only=True)
            )
        found = self._scalar(view.scalars, validation_only=False)
        if found is not None or not self.use_losses_collection or not view.names:
            return found
        if self._names is not view.names and self._names != view.names:
            self._names = view.names
            rows = view.rows(collections=[Collection.LOSSES.value])
            self._row = int(rows[0]) if len(rows) else None
        return None if self._row is None else float(view.stats[self._row, COL["mean"]])

    def _scalar(self, scalars: Mapping[str, float], *, validation_only: bool) -> float | None:
        if not scalars:
            return None
        if self.name is not None:
            value = scalars.get(self.name)
            return None if value is None else float(value)
        if not validation_only and "loss" in scalars:
            return float(scalars["loss"])
        key = (validation_only, frozenset(scalars))
        if key not in self._picked:
            if len(self._picked) > 64:
                self._picked.clear()  # bounded: scalar sets vary little within a run
            want_validation = True if validation_only else (False if self.mode == "train" else None)
            candidates = [
                k
                for k in sorted(scalars)
                if "loss" in k.lower()
                and (want_validation is None or k.lower().startswith(EVAL_PREFIXES) == want_validation)
            ]
            self._picked[key] = (
                candidates[0] if candidates and not (self.single and len(candidates) > 1) else None
            )
            if not validation_only and len(self._losses_seen) < 2:
                self._losses_seen.update(candidates)
        if self.single and len(self._losses_seen) > 1:
            return None
        picked = self._picked[key]
        return None if picked is None else float(scalars[picked])


LOOKUP_TABLES = frozenset({"Embedding", "EmbeddingBag"})
"""Module classes whose weights are lookup tables, not kernels: only the rows a batch looked up get a gradient."""


def output_classes(view: StepView) -> int | None:
    """K for chance level ln K: the outputs of the last dense or convolution kernel in forward order (PyTorch
    keeps them in dim 0), when the catalogue names module classes; None for fewer than two outputs (a binary
    logit or a regression: ln 2 would be a coincidence for a squared error) or when unknown."""
    layer = output_layer(view)
    return layer[1] if layer is not None and layer[1] >= 2 else None


def output_layer(view: StepView) -> tuple[int, int] | None:
    """(forward order, outputs) of the last dense or convolution kernel, when the catalogue names module classes."""
    last: tuple[int, int] | None = None
    for m in view.meta:
        if m.collection != Collection.WEIGHTS.value or not m.trainable or len(m.shape) < 2 or m.order is None:
            continue
        if m.module_type is None or m.module_type in LOOKUP_TABLES:
            continue
        if last is None or m.order > last[0]:
            last = (m.order, int(m.shape[0]))
    return last


class KernelPair:
    """Rows of the first and last kernel gradients (2-D or more, with an execution order) among
    the given rows, cached until the view's tensor names change; None with fewer than two.
    Lookup tables (the catalogue's module class of the parameter, `LOOKUP_TABLES`) are no kernels:
    a table's gradient is as small as the share of rows a batch uses, whatever the depth."""

    def __init__(self) -> None:
        self._names: tuple[str, ...] | None = None
        self._pair: tuple[int, int] | None = None

    def __call__(self, view: StepView, rows: np.ndarray) -> tuple[int, int] | None:
        if self._names is not view.names and self._names != view.names:
            self._names = view.names
            tables = {m.name for m in view.meta if m.module_type in LOOKUP_TABLES}
            kernels = sorted(
                (view.meta[i].order, int(i))
                for i in rows
                if len(view.meta[i].shape) >= 2
                and view.meta[i].order is not None
                and view.names[i].removeprefix("grad/") not in tables
            )
            self._pair = (kernels[0][1], kernels[-1][1]) if len(kernels) >= 2 else None
        return self._pair


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


class Progress:
    """Whether a series (usually the loss) still improves: an EMA, its best value, and the
    training step at which the EMA last beat the best by `min_delta` (relative).

    Both time scales are in training steps, not in views, so the verdict does not depend on the
    save interval: the EMA forgets with time constant `ema_steps` (each view weighs
    1 - exp(-gap / ema_steps), gap = steps since the previous view), and the series counts as
    improving while the best is less than `patience` steps old.
    """

    def __init__(self, *, ema_steps: float, min_delta: float, patience: int) -> None:
        self.ema_steps = ema_steps
        self.min_delta = min_delta
        self.patience = patience
        self.ema: float | None = None
        self.best: float | None = None
        self.best_step: int | None = None
        self.last_step: int | None = None

    def push(self, x: float | None, step: int) -> None:
        if x is None or not math.isfinite(x):
            return
        gap = steps_since(self.last_step, step)
        self.last_step = step
        alpha = 1.0 - math.exp(-gap / self.ema_steps)
        self.ema = x if self.ema is None else self.ema + alpha * (x - self.ema)
        if self.best is None or self.ema < self.best - self.min_delta * abs(self.best):
            self.best = self.ema
            self.best_step = step
        elif self.best_step is None:  # restored from a state without it: count from here
            self.best_step = step

    @property
    def improving(self) -> bool:
        """True while the best value is recent. False when no value was ever seen."""
        if self.ema is None or self.best_step is None or self.last_step is None:
            return self.ema is not None
        return self.last_step - self.best_step < self.patience

    def get_state(self) -> dict[str, Any]:
        return {"ema": self.ema, "best": self.best, "best_step": self.best_step, "ema_step": self.last_step}

    def set_state(self, state: dict[str, Any]) -> None:
        self.ema = state.get("ema")
        self.best = state.get("best")
        self.best_step = state.get("best_step")
        self.last_step = state.get("ema_step")


class TrainMean:
    """Mean of the training loss since the last eval point (the last value if none came since)."""

    def __init__(self) -> None:
        self.read = LossReader(mode="train")
        self.total = 0.0
        self.n = 0
        self.last: float | None = None

    def push(self, view: StepView) -> None:
        x = self.read(view)
        if x is not None and math.isfinite(x):
            self.total += x
            self.n += 1
            self.last = x

    def take(self) -> float | None:
        """Return the mean since the last call and start a new interval."""
        mean = self.total / self.n if self.n else self.last
        self.total, self.n = 0.0, 0
        return mean

    def get_state(self) -> dict[str, Any]:
        return {"total": self.total, "n": self.n, "last": self.last}

    def set_state(self, state: dict[str, Any]) -> None:
        self.total = float(state.get("total", 0.0))
        self.n = int(state.get("n", 0))
        self.last = state.get("last")


class LossFloor:
    """A floor under the loss, `fraction` of the first positive loss seen. Ratios of a loss that
    approaches zero (an easy task) blow up without meaning; measured against this floor, a swing of
    0.001 -> 0.04 on a run that started at 2.3 stays a small one."""

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction
        self.first: float | None = None

    def __call__(self, loss: float) -> float:
        """Return max(loss, fraction * first loss), remembering the first loss on the way."""
        if self.first is None and loss > 0 and math.isfinite(loss):
            self.first = loss
        return max(loss, self.fraction * self.first) if self.first is not None else loss

    def get_state(self) -> float | None:
        return self.first

    def set_state(self, first: float | None) -> None:
        self.first = None if first is None else float(first)


LOSS_FLOOR_DOC = (
    "Losses are floored at this fraction of the first training loss before ratios are taken, so a "
    "loss approaching zero (an easy task) does not turn tiny differences into large ratios."
)


class LossRange:
    """The first and the lowest finite loss seen so far, how many finite losses there were, and
    the training steps of the first and the latest (when pushed with a step)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.lowest: float | None = None
        self.count = 0
        self.first_step: int | None = None
        self.last_step: int | None = None

    def push(self, x: float | None, step: int | None = None) -> None:
        if x is None or not math.isfinite(x):
            return
        self.first = x if self.first is None else self.first
        self.lowest = x if self.lowest is None else min(self.lowest, x)
        self.count += 1
        if step is not None:
            self.first_step = step if self.first_step is None else self.first_step
            self.last_step = step

    @property
    def span(self) -> int:
        """Training steps from the first loss to the latest (0 without steps)."""
        return 0 if self.first_step is None or self.last_step is None else self.last_step - self.first_step

    def get_state(self) -> dict[str, Any]:
        return {"first": self.first, "lowest": self.lowest, "views": self.count, "first_step": self.first_step,
                "last_step": self.last_step}  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self.first = None if state.get("first") is None else float(state["first"])
        self.lowest = None if state.get("lowest") is None else float(state["lowest"])
        self.count = int(state.get("views", 0))
        self.first_step = state.get("first_step")
        self.last_step = state.get("last_step")


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


class WeightBlowUp:
    """The weights' total l2 norm multiplying between two views: a step far too large.

    A view is a blow-up when the norm grew `growth`x since the previous view, or `per_step`x per
    training step when the views are so close that `growth` would need more (at every step: 2x),
    and in any case at least `rate`x per training step between them (views far apart leave
    healthy weights time to grow from a small init).
    The LR x100, unnormalised-input and loss-scale x512 runs of the detection benchmark grow 35x to
    1e18x in 5 steps and 4x or more in one; healthy runs at most 3% in 5 steps and 0.6% in one.
    `seen` keeps the first blow-up: small updates after it are its aftermath (dead units pass no
    gradient), not a learning rate too low."""

    def __init__(self, growth: float, per_step: float, rate: float = 1.0) -> None:
        self.growth, self.per_step, self.rate = growth, per_step, rate
        self.norm: float | None = None
        self.step: int | None = None
        self.names: tuple[str, ...] = ()
        self.steps = 0
        """Training steps between the last two views compared."""
        self.l2 = np.zeros(0)
        self.fastest = -1
        """Of the rows given, the one whose norm grew most at the latest blow-up."""
        self.seen: tuple[int, float] | None = None

    def push(self, view: StepView, rows: np.ndarray) -> float | None:
        """The growth factor if this view is a blow-up, else None."""
        if not len(rows):
            return None
        l2 = view.stats[rows, COL["l2"]]
        if np.isnan(l2).any():
            return None
        norm = total_l2(l2)
        prev, prev_l2, same = self.norm, self.l2, view.names == self.names and len(rows) == len(self.l2)
        steps = self.steps = steps_since(self.step, view.step)
        self.norm, self.step, self.names, self.l2 = norm, view.step, view.names, l2
        if not same or prev is None or not 0 < prev < math.inf:
            return None
        growth = norm / prev
        span = min(steps, 64)  # capped: no float overflow
        if growth < max(min(self.growth, self.per_step**span), self.rate**span):
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            self.fastest = int(np.nanargmax(np.where(prev_l2 > 0, l2 / prev_l2, 0.0)))
        if self.seen is None:
            self.seen = (view.step, growth)
        return growth

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


class GatedParams(base.Params):
    """Parameters of a soft symptom that only counts while the training loss is not improving."""

    gate_on_loss: bool = Field(
        default=True,
        description="Report only while the training loss has stopped improving (outcome gating, as AUTOTRAINER "
        "does): the symptom alone is common in healthy runs. Without any loss in the run the gate stays open.",
    )
    gate_patience: int = Field(
        default=100,
        ge=1,
        description="The loss counts as improving while its EMA (time constant 50 training steps) set a new best "
        "within this many training steps. In steps, not views, so the gate does not depend on the save interval.",
    )
    gate_min_delta: float = Field(
        default=0.01, ge=0, description="Relative drop of the loss EMA that counts as a new best (0.01 = 1%)."
    )
    gate_stuck_steps: int = Field(
        default=50,
        ge=0,
        description="The gate also opens once the loss has stayed within `gate_stuck_drop` of its first value for "
        "this many training steps: a run stuck from the start (a deep sigmoid net at chance level) shows no progress "
        "to wait out. On the detection benchmark's calibration seeds every healthy run, slow starters included, is "
        "7% or more below its first loss within 50 steps, and runs stuck from the start stay within 2%. 0 turns "
        "this off.",
    )
    gate_stuck_drop: float = Field(
        default=0.05,
        ge=0,
        description="Relative fall below the first loss (0.05 = 5%) that counts as progress since the start.",
    )


class LossGate:
    """Outcome gate: tracks the training loss and says whether a soft symptom may be reported.

    Open when the loss EMA set no new best for `gate_patience` training steps, or at once after
    `gate_stuck_steps` steps in which no loss fell `gate_stuck_drop` below the first one (no
    progress since the start). Closed again as soon as the loss makes progress.
    """

    EMA_STEPS = 50.0
    """Time constant of the loss EMA in training steps (a weight of ~0.1 per view at save_interval 5)."""

    def __init__(self, params: GatedParams) -> None:
        self.enabled = params.gate_on_loss
        self.read = LossReader()
        self.progress = Progress(
            ema_steps=self.EMA_STEPS, min_delta=params.gate_min_delta, patience=params.gate_patience
        )
        self.stuck_steps = params.gate_stuck_steps
        self.stuck_drop = params.gate_stuck_drop
        self.range = LossRange()

    def push(self, view: StepView) -> None:
        x = self.read(view)
        self.progress.push(x, view.step)
        self.range.push(x, view.step)

    @property
    def stuck(self) -> bool:
        """True when the loss has made no progress since the start: `stuck_steps` steps, no loss in
        them `stuck_drop` below the first."""
        first, lowest = self.range.first, self.range.lowest
        return (
            self.stuck_steps > 0
            and self.range.span >= self.stuck_steps
            and first is not None
            and lowest is not None
            and lowest > first - self.stuck_drop * abs(first)
        )

    @property
    def open(self) -> bool:
        """True when the symptom may be reported: gating is off, or the loss has stopped improving."""
        return not self.enabled or not self.progress.improving or self.stuck

    @property
    def note(self) -> str:
        """The clause a gated finding ends with."""
        if not self.enabled:
            return ""
        if self.stuck and self.range.first is not None:
            return (
                f" while the loss has stayed within {base.fmt(self.stuck_drop * 100)}% of its first value "
                f"{base.fmt(self.range.first)} for {self.range.span} steps"
            )
        return " while the loss is not improving"

    def get_state(self) -> dict[str, Any]:
        return {**self.progress.get_state(), **self.range.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        self.progress.set_state(state)
        self.range.set_state(state)
