"""A real, small PyTorch training loop shared by the hook tests: the probe's MLP shape, scaled down."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.store import run_format


def mlp(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


@dataclass
class Trained:
    """What the loop saw, for comparison with what the hook wrote."""

    losses: dict[int, float] = field(default_factory=dict)
    weight_l2: dict[int, float] = field(default_factory=dict)
    """L2 norm of `0.weight` right after each optimizer step."""


def train(
    hook: tg.Hook | None,
    model: nn.Module,
    *,
    steps: int,
    lr: float = 0.05,
    loss_after_step: bool = True,
    eval_every: int = 0,
    on_step: Callable[[int], None] | None = None,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
) -> Trained:
    """Train `model` (moved to `device`) for `steps` optimizer steps, recording the loss (and a validation
    loss) on `hook`."""
    model.to(device)
    g = torch.Generator().manual_seed(1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    if hook is not None:
        hook.register_module(model)
        hook.register_optimizer(opt)
    seen = Trained()
    for step in range(steps):
        model.train()
        x, y = (
            torch.randn(32, 8, generator=g).to(device, dtype),
            torch.randint(0, 3, (32,), generator=g).to(device),
        )
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if hook is not None and not loss_after_step:
            hook.record_scalar("loss", loss)
        opt.step()
        if hook is not None and loss_after_step:
            hook.record_scalar("loss", loss)
        seen.losses[step] = float(loss.detach())
        seen.weight_l2[step] = float(torch.linalg.vector_norm(model[0].weight.detach().float()))  # type: ignore[index]
        if eval_every and step % eval_every == 0:
            model.eval()
            with torch.no_grad():
                val = loss_fn(
                    model(torch.randn(16, 8, generator=g).to(device, dtype)),
                    torch.randint(0, 3, (16,), generator=g).to(device),
                )
            if hook is not None:
                hook.record_scalar("val_loss", val, mode="eval")
        if on_step is not None:
            on_step(step)
    return seen


def tier1_rows(run: trainguard.Run, key: str) -> dict[object, np.ndarray]:
    """Every segment's `units` or `hists` rows of `run`, by key, stacked in step order.

    How a run's steps fall into segments depends on timed flushes (a busy machine cuts them
    differently), so runs are compared on all their rows, never on one segment's."""
    parts: dict[object, list[np.ndarray]] = {}
    for seg in run.segments():
        for k, v in getattr(seg, key).items():
            parts.setdefault(k, []).append(np.atleast_2d(v))
    return {k: np.concatenate(v) for k, v in parts.items()}


def assert_same_steps(a: trainguard.Run, b: trainguard.Run, steps: list[int]) -> None:
    """Both runs saved `steps` with the same statistic rows, and recorded the same train and eval scalars of
    `train(..., eval_every=...)`."""
    assert a.steps().tolist() == b.steps().tolist() == steps
    for name, mode in (("loss", "train"), ("lr", "train"), ("val_loss", "eval")):
        sa, sb = a.scalars(name, mode=mode), b.scalars(name, mode=mode)
        assert sa.steps.tolist() == sb.steps.tolist() and len(sa.steps)
        np.testing.assert_array_equal(sa.values, sb.values)
    for t in a.tensors():
        if not t.is_scalar:
            for col in run_format.STAT_COLUMNS:
                np.testing.assert_array_equal(
                    a.series(t.name, col).values, b.series(t.name, col).values, t.name
                )
