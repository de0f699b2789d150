"""Runs written through the real PyTorch hook, read back as the evaluator's views, for rule tests."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.rules.step_view import StepView
from trainguard.sidecar.view_builder import ViewBuilder


def trained_views(
    out: Path,
    model: nn.Module,
    opt: torch.optim.Optimizer,
    *,
    steps: int,
    features: int = 20,
    classes: int = 4,
) -> list[StepView]:
    """Train `model` with `opt` on random batches of 32 (cross-entropy, the loss recorded at every step,
    statistics saved every 10th step) and return rank 0's views as the evaluator builds them."""
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(steps):
            x, y = torch.randn(32, features), torch.randint(0, classes, (32,))
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
    return stored_views(out)


def stored_views(out: Path) -> list[StepView]:
    """Rank 0's views of the run the hook wrote into `out`, as the evaluator builds them."""
    source = trainguard.open_run(f"file://{out}").source(0)
    return [v for seg in source.poll() for v in ViewBuilder(rank=0).views(seg, source.catalogue())]
