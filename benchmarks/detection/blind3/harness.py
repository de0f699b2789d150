"""The end of a training step as every third-split script writes it: the loss recorded through the hook, the
script's own validation figure every `blind.harness.VAL_EVERY` steps (an eval scalar), and the oracle's
bookkeeping (`Run.end_step`). The rest of each loop is the script's own, as in the earlier splits.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from benchmarks.detection.blind.harness import Run


def close_step(
    run: Run, step: int, loss: torch.Tensor, model: nn.Module, metric: str, measure: Callable[[], float]
) -> bool:
    """Record `loss`, and `metric` (= `measure()` without gradients) when the script validates; False when the run
    should end (its loss non-finite for long)."""
    run.hook.record_scalar("loss", loss.detach())
    if run.validating(step):
        with torch.no_grad():
            run.hook.record_scalar(metric, measure(), mode="eval")
    return run.end_step(step, loss.detach(), model, measure)
