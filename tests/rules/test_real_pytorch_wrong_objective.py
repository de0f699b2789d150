"""A classifier trained on labels shifted by one (the loader's labels 1-based, the evaluation's 0-based) through the
real PyTorch hook, beside its twin trained on the right labels. The shifted run's loss falls as fast as the twin's
and every tensor statistic stays healthy; its validation accuracy, recorded with `mode="eval"`, falls to zero while
the twin's rises. `metric_against_loss` reports the first, not the second."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import trainguard.torch as tg
from tests.rules.test_real_pytorch_architectures import default_rule_findings
from trainguard.rules.base import Finding

pytestmark = pytest.mark.slow


def data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """16 features, 5 classes set by a fixed random projection (a linear model separates them)."""
    x = torch.randn(n, 16, generator=torch.Generator().manual_seed(seed))
    w = torch.randn(16, 5, generator=torch.Generator().manual_seed(7))
    return x, (x @ w).argmax(1)


def train(out: Path, *, shift: int) -> list[Finding]:
    """300 steps of Adam on batches of 64, the loss recorded at every step, the validation accuracy every 20."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 5))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = data(4000, 1)
    vx, vy = data(500, 2)
    gen = torch.Generator().manual_seed(0)
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(300):
            i = torch.randint(0, len(x), (64,), generator=gen)
            loss = nn.functional.cross_entropy(model(x[i]), (y[i] + shift) % 5)
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
            if step % 20 == 19:
                with torch.no_grad():
                    acc = (model(vx).argmax(1) == vy).float().mean()
                hook.record_scalar("val_acc", acc, mode="eval")
        assert not hook.errors
    return default_rule_findings(out)


def test_labels_shifted_by_one_are_reported_and_the_twin_is_not(tmp_path: Path) -> None:
    found = [f for f in train(tmp_path / "shifted", shift=1) if f.rule == "metric_against_loss"]
    assert len(found) == 1 and found[0].tensor == "val_acc"
    assert "'val_acc', which by its name should rise, fell" in found[0].message
    assert [f for f in train(tmp_path / "twin", shift=0) if f.rule == "metric_against_loss"] == []
