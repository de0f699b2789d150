"""`exploding_tensor`: NaN or Inf in any watched tensor or in the loss; critical, reported at once.

Names the first tensor, in execution order (`execution_key`), where a non-finite value appeared,
so the finding points at the layer where the problem started, not at every tensor it spread to.
Statistics are stored as float32, so a float64 tensor with values beyond float32's range (about
3.4e38) arrives with an infinite min or max and no Inf counted: that counts too (on a float64
numpy run with a learning rate 3000x too high, 43 steps before the first Inf).
SageMaker Debugger's `only_nan` is supported.

Missing values are often written as NaN in the data a model is fed (a time series with gaps, a table with
empty cells) and filled or masked inside the model. A NaN in an input or label that reaches nothing else of
the step (no activation, gradient or parameter, nor the loss, is non-finite) is that encoding, not a
divergence: it is noted once per tensor at info level (`inputs_carry_nan`), and the rule stays quiet until
something downstream turns non-finite, which it then reports naming the input first. On the detection
benchmarks (2-core x86-64 VM) a GRU-D model fed series with 50% of values missing as NaN read 730-4,800 NaN
in `input/values` at every saved step with every other tensor and the loss finite; the same program with the
NaN left unfilled turns its activations and loss NaN at step 0.

It reads the train scalars of every step (`every_step`), not only of saved steps: a non-finite loss is found
the step it is recorded. A saved step need not come after it: when the gradients are non-finite a loss scaler
skips the optimizer step, and the hook's step count stops where the optimizer stopped, so a run whose
gradients are never unscaled records its NaN losses between saved steps until it ends (a hand-written loss
scale of 1024 left on the gradients, SGD at lr 0.05: the loss is 1.7 at step 0, 8-36 at step 1, NaN from
then on, and no saved step after step 0).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory, Severity
from trainguard.rules import base
from trainguard.rules.step_view import COL, StepView, TensorMeta

_PARAMS = (Collection.WEIGHTS.value, Collection.BIASES.value)
_DATA = (Collection.INPUTS.value, Collection.LABELS.value)
_NO_ORDER = 1 << 30
_NAN, _INF = COL["nan"], COL["inf"]
_MIN, _MAX = COL["min"], COL["max"]
_NO_HIT = np.zeros(0, np.int64)


def _all_finite(view: StepView) -> bool:
    """True when every train and eval scalar is finite (one sum; anything odd means: look closer)."""
    total = sum(view.scalars.values()) + sum(view.eval_scalars.values())
    return math.isfinite(total)


def execution_key(meta: TensorMeta, row: int) -> tuple[int, int, int]:
    """Sort key of a tensor in the order a training step computes it.

    Forward (inputs and labels, then module outputs by `order`), the loss, backward (gradients from
    the last module to the first), then the optimizer step: the hook records parameters after it,
    so a parameter turns non-finite only after its gradient did.
    """
    order = _NO_ORDER if meta.order is None else meta.order
    c = meta.collection
    if c in (Collection.INPUTS.value, Collection.LABELS.value):
        return (0, -1, row)
    if c == Collection.ACTIVATIONS.value:
        return (0, order, row)
    if c in (Collection.PREDICTIONS.value, Collection.LOSSES.value):
        return (1, 0, row)
    if c == Collection.GRADIENTS.value:
        return (2, -order if meta.order is not None else _NO_ORDER, row)
    if c in (*_PARAMS, Collection.OPTIMIZER.value):
        return (3, order, row)
    return (4, order, row)


class ExplodingTensor(base.Rule):
    name = "exploding_tensor"
    category = RuleCategory.NON_FINITE
    default_action = Action.STOP
    summary = (
        "NaN or infinite values in any tensor or in the loss; names the first tensor in execution order."
    )
    default_severity = Severity.CRITICAL
    every_step = True
    hint = (
        "lower the learning rate or clip gradients, check the inputs and labels for NaN, and guard log(0), "
        "division by zero and overflow in float16 (use bfloat16 or a loss scaler)"
    )

    class Params(base.Params):
        only_nan: bool = Field(
            default=False, description="SageMaker's only_nan: report NaN only, ignore +/-Inf."
        )
        inputs_carry_nan: bool = Field(
            default=True,
            description="NaN or Inf in an input or label that nothing downstream shares (every activation, "
            "gradient, parameter and the loss finite) is missing values encoded as NaN: noted once per tensor "
            "at info level, not reported. False: reported as any other non-finite tensor.",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._order_names: tuple[str, ...] | None = None
        self._ordered = np.zeros(0, np.int64)
        self._forward = np.zeros(0, bool)
        self._data = np.zeros(0, bool)
        self._noted: set[str] = set()
        """Inputs and labels noted as carrying NaN that nothing downstream shares."""

    def _rows_in_execution_order(self, view: StepView) -> tuple[np.ndarray, np.ndarray]:
        """Return the watched rows sorted by `execution_key`, and which of them belong to the forward pass."""
        if self._order_names is not view.names and self._order_names != view.names:
            self._order_names = view.names
            rows = self.rows(view)
            keys = sorted((execution_key(view.meta[i], int(i)), int(i)) for i in rows)
            self._ordered = np.asarray([i for _, i in keys], dtype=np.int64)
            self._forward = np.asarray([k[0] == 0 for k, _ in keys], dtype=bool)
            self._data = np.asarray([view.meta[i].collection in _DATA for _, i in keys], dtype=bool)
        return self._ordered, self._forward

    def _scalar_hit(self, view: StepView, only_nan: bool) -> tuple[str, str, float] | None:
        if self.collections is not None and not {Collection.LOSSES.value, Collection.METRICS.value} & set(
            self.collections
        ):
            return None
        for mode, scalars in (("train", view.scalars), ("eval", view.eval_scalars)):
            for key, value in scalars.items():
                v = float(value)
                if (math.isnan(v) or (not only_nan and math.isinf(v))) and (
                    self.pattern is None or self.pattern.search(key)
                ):
                    return key, mode, v
        return None

    def check(self, view: StepView) -> list[base.Finding]:
        p: ExplodingTensor.Params = self.params  # type: ignore[assignment]
        only_nan = p.only_nan
        hit = _NO_HIT
        stats = view.stats
        # fast path: nothing non-finite anywhere in the block (the nan and inf columns are adjacent, so are
        # min and max: an infinite min or max with no Inf counted is a float64 value beyond float32's range)
        if view.names and (
            stats[:, _NAN : _INF + 1].any() or (not only_nan and np.isinf(stats[:, _MIN : _MAX + 1]).any())
        ):
            rows, forward = self._rows_in_execution_order(view)
            bad = stats[rows, _NAN]
            if not only_nan:
                bad = bad + stats[rows, _INF] + np.isinf(stats[rows, _MIN : _MAX + 1]).any(axis=1)
            hit = np.flatnonzero(bad > 0)
        scalar = self._scalar_hit(view, only_nan) if not _all_finite(view) else None
        # The loss is computed after the forward pass and before the backward pass.
        if scalar is not None and not (hit.size and forward[hit[0]]):
            key, mode, v = scalar
            extra = f" ({hit.size} tensors non-finite as well)" if hit.size else ""
            msg = f"{key} ({mode} scalar) is {v} {self.where(view)}{extra}"
            return [self.finding(view, msg, tensor=key, value=v, threshold=0.0)]
        if not hit.size:
            return []
        if scalar is None and p.inputs_carry_nan and self._data[hit].all():
            return self._note_data(view, rows[hit])
        first = int(rows[hit[0]])
        name = view.names[first]
        n_nan, n_inf = stats[first, _NAN], stats[first, _INF]
        if only_nan:
            what = f"{base.fmt(n_nan)} NaN"
        elif n_nan + n_inf == 0:  # only its min or max overflowed: a wider float beyond float32's range
            what = (
                f"values beyond float32's range (stored min {base.fmt(stats[first, _MIN])}, max "
                f"{base.fmt(stats[first, _MAX])}) in some"
            )
        else:
            what = f"{base.fmt(n_nan)} NaN and {base.fmt(n_inf)} Inf values"
        others = f", {hit.size - 1} more tensors after it" if hit.size > 1 else ""
        msg = (
            f"{name}: {what} of {base.fmt(view.stats[first, COL['count']])} {self.where(view)} "
            f"(the first non-finite tensor in execution order{others})"
        )
        value = float(n_nan if only_nan else (n_nan + n_inf) or math.inf)
        return [self.finding(view, msg, tensor=name, value=value, threshold=0.0)]

    def _note_data(self, view: StepView, rows: np.ndarray) -> list[base.Finding]:
        """Inputs or labels non-finite while nothing downstream is: missing values encoded as NaN. An info finding
        the first time a tensor shows it, nothing after."""
        out = []
        for i in rows:
            name = view.names[int(i)]
            if name in self._noted:
                continue
            self._noted.add(name)
            stats = view.stats[int(i)]
            msg = (
                f"{name}: {base.fmt(stats[_NAN])} NaN and {base.fmt(stats[_INF])} Inf values of "
                f"{base.fmt(stats[COL['count']])} {self.where(view)}, while every activation, gradient and "
                "parameter and the loss are finite: missing values written as NaN that the model fills or masks "
                "(noted once; reported if anything downstream turns non-finite)"
            )
            hint = "if the data should have no missing values, check how it is read and cleaned"
            found = self.finding(view, msg, tensor=name, hint=hint, value=float(stats[_NAN] + stats[_INF]))
            out.append(replace(found, severity=Severity.INFO))
        return out

    def get_state(self) -> dict[str, Any]:
        return {"noted": sorted(self._noted)}

    def set_state(self, state: dict[str, Any]) -> None:
        self._noted = set(state.get("noted", []))
