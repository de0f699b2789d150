"""`threshold`: a generic watchpoint, one statistic compared with one value.

Covers MindInsight's conditions: a statistic of every watched tensor (a column of the run format,
or one derived from them: var, range, abs_max, zero_percentage, nonfinite, update_ratio) compared
with `value` by >, >=, <, <=, == or !=. With `scalar` set it compares the scalars whose names match
that regex instead (train and eval). NaN compares false, except with !=.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from trainguard.api.enums import RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import COL, COLUMNS, StepView


def _derived(name: str) -> Callable[[np.ndarray], np.ndarray]:
    c = COL
    table: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "var": lambda s: np.square(s[:, c["std"]]),
        "range": lambda s: s[:, c["max"]] - s[:, c["min"]],
        "abs_max": lambda s: np.maximum(np.abs(s[:, c["min"]]), np.abs(s[:, c["max"]])),
        "zero_percentage": lambda s: 100.0 * s[:, c["zero"]] / np.maximum(s[:, c["count"]], 1),
        "nonfinite": lambda s: s[:, c["nan"]] + s[:, c["inf"]],
        "update_ratio": lambda s: s[:, c["update_l2"]] / (s[:, c["l2"]] + 1e-9),
    }
    if name in table:
        return table[name]
    return lambda s: s[:, c[name]]


DERIVED = ("var", "range", "abs_max", "zero_percentage", "nonfinite", "update_ratio")
STATISTICS = COLUMNS + DERIVED
_OPS: dict[str, Callable[[Any, float], Any]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}


class Threshold(base.Rule):
    name = "threshold"
    example_params: ClassVar[Mapping[str, Any]] = {"statistic": "l2", "comparison": ">", "value": 3.0}
    """For the state round-trip test: a watchpoint must be told what to watch."""
    category = RuleCategory.WATCHPOINT
    summary = "Watchpoint: a statistic of the watched tensors (or a scalar) compared with a value."
    hint = "inspect the named tensor around this step"

    class Params(base.Params):
        statistic: str = Field(default="abs_max", description=f"One of {', '.join(STATISTICS)}.")
        comparison: Literal[">", ">=", "<", "<=", "==", "!="] = Field(
            default=">", description="How the statistic is compared with `value`."
        )
        value: float = Field(description="The value the statistic is compared with.")
        scalar: str | None = Field(
            default=None, description="Regex of scalar names to compare instead of tensor statistics."
        )

        @field_validator("statistic")
        @classmethod
        def _known(cls, v: str) -> str:
            if v not in STATISTICS:
                raise ValueError(f"unknown statistic {v!r}; expected one of {', '.join(STATISTICS)}")
            return v

        @field_validator("scalar")
        @classmethod
        def _regex(cls, v: str | None) -> str | None:
            if v is not None:
                try:
                    re.compile(v)
                except re.error as err:
                    raise ValueError(f"scalar {v!r} is not a valid regular expression: {err}") from err
            return v

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: Threshold.Params = self.params  # type: ignore[assignment]
        self.compute = _derived(p.statistic)
        self.compare = _OPS[p.comparison]
        self.scalar = re.compile(p.scalar) if p.scalar else None

    def check(self, view: StepView) -> list[base.Finding]:
        p: Threshold.Params = self.params  # type: ignore[assignment]
        if self.scalar is not None:
            return self._check_scalars(view, p, self.scalar)
        rows = self.rows(view)
        if not len(rows):
            return []
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            values = self.compute(view.stats[rows])
            hit = np.flatnonzero(self.compare(values, p.value))
        if not hit.size:
            return []
        name = view.names[int(rows[hit[0]])]
        msg = (
            f"{name}: {p.statistic} {base.fmt(values[hit[0]])} {p.comparison} {base.fmt(p.value)} {self.where(view)} "
            f"({hit.size} of {len(rows)} tensors)"
        )
        return [self.finding(view, msg, tensor=name, value=float(values[hit[0]]), threshold=p.value)]

    def _check_scalars(self, view: StepView, p: Params, scalar: re.Pattern[str]) -> list[base.Finding]:
        for mode, scalars in (("train", view.scalars), ("eval", view.eval_scalars)):
            for key, raw in scalars.items():
                v = float(raw)
                if scalar.search(key) and self.compare(v, p.value):
                    msg = (
                        f"{key} ({mode}): {base.fmt(v)} {p.comparison} {base.fmt(p.value)} {self.where(view)}"
                    )
                    return [self.finding(view, msg, tensor=key, value=v, threshold=p.value)]
        return []
