"""A model whose only trainable kernel is one layer (a linear probe on a frozen encoder) is convex in it: its
weights growing while its loss falls are its fit, not steps too large; so are class centres of a module's own, normalised
in the forward pass, growing from a small init while the layers' kernels do not blow up. Trained for real through the
hook."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.rules.weight_update_ratio import WeightUpdateRatio
from trainguard.sidecar.view_builder import ViewBuilder


def probe_findings(tmp_path: Path, *, spread: float, lr: float, fit_loss_ratio: float | None = 0.75) -> list:  # type: ignore[type-arg]
    """Train a default-init head on a frozen random encoder over 5 Gaussian classes (centres `spread` apart in
    units of the noise) for 30 steps, saved every 10th; return weight_update_ratio's findings."""
    torch.manual_seed(0)
    centres = torch.randn(5, 20) * spread
    encoder = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
    for p in encoder.parameters():
        p.requires_grad_(False)
    model = nn.Sequential(encoder, nn.Linear(64, 5))
    opt = torch.optim.SGD(model[1].parameters(), lr=lr, momentum=0.9)
    return _train_and_judge(tmp_path, model, opt, centres, batch=64, fit_loss_ratio=fit_loss_ratio)


def test_a_probe_whose_head_grows_while_its_loss_falls_is_quiet(tmp_path: Path) -> None:
    # the head grows 2.3x in 10 steps (above the 2x blow-up bound) while the loss falls 1.64 -> 0.61
    assert probe_findings(tmp_path / "fit", spread=2.0, lr=0.1) == []
    # judged as any weights, the same run is a blow-up
    found = probe_findings(tmp_path / "as_any", spread=2.0, lr=0.1, fit_loss_ratio=None)
    assert [f.step for f in found] == [10]


def test_a_probe_at_a_learning_rate_far_too_high_is_a_blow_up(tmp_path: Path) -> None:
    # overlapping classes at lr 30: the head grows 20x and the loss rises 1.64 -> 3.0; its first update already
    # multiplies the norm of its initial-weights record (no loss fell in between: no fit)
    found = probe_findings(tmp_path, spread=1.0, lr=30.0)
    assert [f.step for f in found] == [0, 10]
    assert "in 1 step at step 0" in found[0].message
    assert "far too large" in found[0].message


class CosineHead(nn.Module):
    """An ArcFace-style head: an MLP embedding and class centres of the module's own, both normalised in the forward
    pass, so the loss does not depend on the centres' norm."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64))
        self.weight = nn.Parameter(torch.randn(24, 64) * 0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cos = nn.functional.linear(
            nn.functional.normalize(self.body(x), dim=-1), nn.functional.normalize(self.weight, dim=-1)
        )
        return 16.0 * cos


def cosine_head_findings(tmp_path: Path, fit_loss_ratio: float | None = 0.75) -> list:  # type: ignore[type-arg]
    """Train the cosine head on 24 Gaussian identities under SGD with Nesterov momentum (lr 0.1) for 30 steps, saved
    every 10th; return weight_update_ratio's findings."""
    torch.manual_seed(0)
    centres = torch.randn(24, 32) * 2.0
    model = CosineHead()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    return _train_and_judge(tmp_path, model, opt, centres, batch=128, fit_loss_ratio=fit_loss_ratio)


def test_normalised_class_centres_growing_while_the_loss_falls_are_no_blow_up(tmp_path: Path) -> None:
    # the centres (a parameter of the module's own) grow from std 0.01 many times over in 10 steps, taking the
    # weights' total norm past 2x, while the layers' kernels grow far less and the loss falls below 3/4
    assert cosine_head_findings(tmp_path / "fit") == []
    found = cosine_head_findings(
        tmp_path / "as_any", fit_loss_ratio=None
    )  # the loss not consulted: a blow-up
    assert [f.step for f in found] == [10] and "weight:" in found[0].message


def _train_and_judge(
    tmp_path: Path,
    model: nn.Module,
    opt: torch.optim.Optimizer,
    centres: torch.Tensor,
    *,
    batch: int,
    fit_loss_ratio: float | None,
) -> list:  # type: ignore[type-arg]
    """Train `model` 30 steps on Gaussian classes around `centres` (unit noise) through the hook, saved every 10th;
    return weight_update_ratio's findings on the run."""
    classes, dim = centres.shape
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(30):
            y = torch.randint(0, classes, (batch,))
            loss = nn.functional.cross_entropy(model(centres[y] + torch.randn(batch, dim)), y)
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
    source = trainguard.open_run(f"file://{tmp_path}").source(0)
    builder = ViewBuilder(rank=0)
    rule = WeightUpdateRatio({"fit_loss_ratio": fit_loss_ratio})
    return [
        f for seg in source.poll() for v in builder.views(seg, source.catalogue()) for f in rule.update(v)
    ]
