"""`class_imbalance`: the labels seen so far are dominated by some classes (SageMaker's ClassImbalance).

Counts are accumulated from two sources, whichever the run has:
- train scalars named `label_count/<class>` (matched by `count_scalar_regex`): the number of
  samples of that class in the step's batch, any number of classes;
- tensors in the `labels` collection or matching `labels_regex` holding 0/1 labels (binary tasks):
  their `zero` column counts negatives, count - zero positives. Other label tensors are skipped.
After `samples` labels, reports when the largest class count is more than `threshold_imbalance`
times the smallest. Informational: imbalance is a property of the data, not a failure.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Collection, Severity
from trainguard.rules import base
from trainguard.rules.view import COL, StepView

LABEL_COUNT_PREFIX = "label_count/"


class ClassImbalance(base.Rule):
    name = "class_imbalance"
    summary = "Largest/smallest class count above `threshold_imbalance` (from label_count/<class> scalars or 0/1 label tensors)."
    default_severity = Severity.INFO
    hint = "resample or reweight the classes (class weights, focal loss), and judge the model by per-class metrics or AUC"

    class Params(base.Params):
        threshold_imbalance: float = Field(
            default=10.0, gt=1, description="Largest/smallest class count above which data are imbalanced."
        )
        samples: int = Field(default=500, ge=1, description="Labels to accumulate before judging.")
        labels_regex: str = Field(
            default=".*labels", description="Tensors (besides the labels collection) holding 0/1 labels."
        )
        count_scalar_regex: str = Field(
            default=f"^{LABEL_COUNT_PREFIX}(.+)$",
            description="Train scalars holding per-class counts; group 1 is the class.",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        p: ClassImbalance.Params = self.params  # type: ignore[assignment]
        self.labels_re = re.compile(p.labels_regex)
        self.count_re = re.compile(p.count_scalar_regex)
        self.counts: dict[str, float] = {}
        self._names: tuple[str, ...] | None = None
        self._label_rows = np.zeros(0, np.int64)

    def _rows(self, view: StepView) -> np.ndarray:
        if self._names is not view.names and self._names != view.names:
            self._names = view.names
            self._label_rows = np.asarray(
                [
                    i
                    for i, m in enumerate(view.meta)
                    if m.collection == Collection.LABELS.value or self.labels_re.fullmatch(m.name)
                ],
                dtype=np.int64,
            )
        return self._label_rows

    def applies(self, view: StepView) -> bool:
        return bool(view.scalars) or bool(view.names)

    def check(self, view: StepView) -> list[base.Finding]:
        p: ClassImbalance.Params = self.params  # type: ignore[assignment]
        for key, value in view.scalars.items():
            m = self.count_re.match(key)
            if m and math.isfinite(float(value)):
                self.counts[m.group(1)] = self.counts.get(m.group(1), 0.0) + float(value)
        for i in self._rows(view) if view.names else ():
            s = view.stats[i]
            n, zero = s[COL["count"]], s[COL["zero"]]
            ones = s[COL["mean"]] * n  # the sum of 0/1 labels is the number of positives
            if n > 0 and s[COL["min"]] >= 0 and s[COL["max"]] <= 1 and abs(ones - (n - zero)) < 0.5:
                self.counts["0"] = self.counts.get("0", 0.0) + float(zero)
                self.counts["1"] = self.counts.get("1", 0.0) + float(n - zero)
        total = sum(self.counts.values())
        if total < p.samples or len(self.counts) < 2:
            return []
        big = max(self.counts, key=self.counts.__getitem__)
        small = min(self.counts, key=self.counts.__getitem__)
        ratio = self.counts[big] / self.counts[small] if self.counts[small] > 0 else math.inf
        if ratio <= p.threshold_imbalance:
            return []
        msg = (
            f"labels: class {big} has {base.fmt(ratio)}x the samples of class {small} ({base.fmt(self.counts[big])} vs "
            f"{base.fmt(self.counts[small])} of {base.fmt(total)}), above the threshold {base.fmt(p.threshold_imbalance)} "
            f"{self.where(view)}"
        )
        return [self.finding(view, msg, tensor="labels", value=ratio, threshold=p.threshold_imbalance)]

    def get_state(self) -> dict[str, Any]:
        return {"counts": dict(self.counts)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.counts = {str(k): float(v) for k, v in state.get("counts", {}).items()}
