"""`batchnorm_small_batch`: BatchNorm layers trained on batches too small for their statistics.

In training mode BatchNorm normalises each channel by the mean and variance of the current batch. With a
handful of samples those statistics are noise: every step normalises by different numbers, the running
averages used at evaluation match none of them, and the loss swings instead of falling (with two samples
and no spatial extent each normalised value is exactly -1 or +1). The error of a BatchNorm network rises
steeply below about 8 samples per batch (the Group Normalization paper measured a ResNet-50 on ImageNet
about 10 points of top-1 error worse at 2 samples per batch than at 32), which is why small-batch
training uses GroupNorm, LayerNorm, frozen BatchNorm or synchronised statistics instead.

The evidence is in the catalogue and the statistics: the module classes name trainable BatchNorm layers
(`BatchNorm1d/2d/3d`, `SyncBatchNorm` is left alone: it pools the statistics over ranks), and a recorded
activation or input's element count at a saved step, divided by its catalogue shape past dim 0, gives the
batch (the largest such figure, so a tensor whose first dim is no batch cannot make it look small). A
batch below `min_batch` at `min_views` saved views in a row is reported once, as a hint: a model whose
BatchNorm layers run in eval mode (frozen statistics) is fine, and the message says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base
from trainguard.rules.step_view import COL, StepView

_BATCHNORM = frozenset({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
                        "LazyBatchNorm3d"})  # fmt: skip
"""Module classes that normalise by the statistics of the local batch in training mode."""
_BATCHED = (Collection.ACTIVATIONS.value, Collection.INPUTS.value)


class BatchnormSmallBatch(base.Rule):
    name = "batchnorm_small_batch"
    category = RuleCategory.ACTIVATIONS
    default_action = Action.NOTIFY
    training_views_only = True
    needs = "BatchNorm layers and batched activations or inputs"
    summary = "BatchNorm layers trained on batches of fewer than 8 samples: their batch statistics are noise."
    hint = (
        "use batches of at least 8-16 samples per BatchNorm (accumulating gradients does not help: the statistics "
        "are per forward pass), or replace BatchNorm with GroupNorm or LayerNorm; if the BatchNorm layers are "
        "frozen in eval mode on purpose, ignore this"
    )

    class Params(base.Params):
        min_batch: int = Field(
            default=8,
            ge=2,
            description="A batch below this many samples is too small for BatchNorm's statistics (its error rises "
            "steeply below 8 per batch). The healthy BatchNorm programs of the detection suites train on 16 to 512.",
        )
        min_views: int = Field(
            default=3,
            ge=1,
            description="Saved views in a row with a batch below `min_batch` before the finding (an evaluation "
            "forward pass over a large set recorded at a step reads as a large batch and breaks the run).",
        )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.small = 0
        """Saved views in a row whose batch was below `min_batch`."""
        self.reported = False
        self._layout: tuple[tuple[str, ...] | None, str | None, np.ndarray, np.ndarray] = (
            None,
            None,
            np.zeros(0, dtype=np.intp),
            np.zeros(0),
        )

    def _batched(self, view: StepView) -> tuple[str | None, np.ndarray, np.ndarray]:
        """(the first trainable BatchNorm module, rows of batched tensors, elements per sample of each), cached per
        tensor set."""
        if self._layout[0] is not view.names:
            norm = next(
                (
                    m.module
                    for m in view.meta
                    if m.trainable
                    and m.module_type in _BATCHNORM
                    and m.collection == Collection.WEIGHTS.value
                ),
                None,
            )
            rows = [
                i
                for i, m in enumerate(view.meta)
                if m.collection in _BATCHED and len(m.shape) >= 2 and m.shape[0] > 0
            ]
            per = np.asarray([math.prod(view.meta[i].shape[1:]) for i in rows], dtype=float)
            self._layout = (view.names, norm, np.asarray(rows, dtype=np.intp), per)
        return self._layout[1], self._layout[2], self._layout[3]

    def has_input(self, view: StepView) -> bool:
        norm, rows, _ = self._batched(view)
        return norm is not None and len(rows) > 0

    def check(self, view: StepView) -> list[base.Finding]:
        p: BatchnormSmallBatch.Params = self.params  # type: ignore[assignment]
        norm, rows, per = self._batched(view)
        if self.reported or norm is None or not len(rows):
            return []
        with np.errstate(divide="ignore", invalid="ignore"):
            batches = view.stats[rows, COL["count"]] / per
        batches = batches[np.isfinite(batches) & (batches > 0)]
        if not batches.size:
            return []  # nothing recorded at this view: the streak neither grows nor breaks
        batch = float(batches.max())
        if batch >= p.min_batch:
            self.small = 0
            return []
        self.small += 1
        if self.small < p.min_views:
            return []
        self.reported = True
        msg = (
            f"{norm}: a BatchNorm layer trained on batches of {base.fmt(batch)} samples, below {p.min_batch}, at "
            f"{self.small} saved steps in a row {self.where(view)}: in training mode it normalises by the mean and "
            "variance of those few samples, which are noise, and its running statistics match none of them"
        )
        return [self.finding(view, msg, tensor=norm, value=batch, threshold=float(p.min_batch))]

    def get_state(self) -> dict[str, Any]:
        return {"small": self.small, "reported": self.reported}

    def set_state(self, state: dict[str, Any]) -> None:
        self.small = int(state.get("small", 0))
        self.reported = bool(state.get("reported", False))
