"""What every blind script shares: the run context, and small helpers a script author would write anyway.

`Run` is the realistic suite's `loop.Ctx` (seed, steps, knobs, bug, hook, random generator, the oracle's
view: the loss at every step, a clean validation score in [0, 1] every 10 steps) plus `effect_step`, the
step at which a bug that switches on during the run (an overflow, a late unfreeze) took effect, set by the
script when it happens. The scripts call the hook as a user would: register the model and optimizer, record
the loss every step and a validation figure now and then. Each script writes its own training loop, as
users do, and a bug changes lines of it: the loops are not folded into a shared one on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from benchmarks.detection.torch_real import loop

VAL_EVERY = 25
"""Steps between the scripts' own validation passes (recorded as eval scalars)."""


@dataclass
class Run(loop.Ctx):
    """One run of a blind script: `loop.Ctx` plus the step at which its bug took effect, once it did."""

    effect_step: int | None = None

    def took_effect(self, step: int) -> None:
        """Note that the bug acted at `step` (the first call wins)."""
        if self.effect_step is None:
            self.effect_step = step

    def indices(self, n: int, batch: int) -> torch.Tensor:
        """A random mini-batch of row indices into `n` rows (a shuffling loader)."""
        return torch.randint(0, n, (batch,), generator=self.gen)

    def validating(self, step: int) -> bool:
        """Whether the script runs its own validation pass after `step`."""
        return step % VAL_EVERY == VAL_EVERY - 1

    def end_step(
        self, step: int, loss: float | torch.Tensor, model: nn.Module, measure: Callable[[], float]
    ) -> bool:
        """The oracle's bookkeeping at the end of a step (its score: `measure` with `model` in eval mode); False
        when the run should end (loss non-finite for long)."""
        self.oracle(step, lambda: in_eval(model, measure))
        return self.note_loss(step, float(loss))


def in_eval(model: nn.Module, measure: Callable[[], float]) -> float:
    """`measure()` with `model` in eval mode, its mode restored after: the oracle's forward passes are never
    training forwards, so the hook does not see them."""
    was = model.training
    model.eval()
    try:
        return measure()
    finally:
        model.train(was)


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy of logits over the last dimension."""
    return float((logits.argmax(-1) == y).float().mean())


def auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """ROC AUC by the rank statistic (0.5 for constant or non-finite scores)."""
    if not torch.isfinite(scores).all():
        return 0.5
    order = scores.argsort()
    ranks = torch.empty_like(scores)
    ranks[order] = torch.arange(1, len(scores) + 1, dtype=scores.dtype)
    pos = labels > 0.5
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return 0.5
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def r2(pred: torch.Tensor, y: torch.Tensor) -> float:
    """Coefficient of determination, clipped to [0, 1]."""
    if not torch.isfinite(pred).all():
        return 0.0
    return max(0.0, 1.0 - float(((pred - y) ** 2).mean() / y.var()))
