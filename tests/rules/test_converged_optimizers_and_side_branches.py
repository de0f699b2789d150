"""What design explains is no fault: a converged L-BFGS that stops moving (`unchanged_tensor`) and a mixture of
experts' router whose gradient is only its gate's (`vanishing_gradient`), from real PyTorch through the hook.

Their twins with the fault keep their warnings: an L-BFGS closure that never zeroes the gradients (they grow while the
weights stand still), and a deep sigmoid chain behind the same side branch (its first layer starves)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

import trainguard
import trainguard.torch as tg
from trainguard.api.enums import Severity
from trainguard.rules.base import Finding, Rule
from trainguard.rules.step_view import StepView
from trainguard.rules.unchanged_tensor import UnchangedTensor
from trainguard.rules.vanishing_gradient import VanishingGradient
from trainguard.sidecar.view_builder import ViewBuilder


def _views(tmp_path: Path) -> list[StepView]:
    source = trainguard.open_run(f"file://{tmp_path}").source(0)
    builder = ViewBuilder(rank=0, save_interval=10)
    return [v for seg in source.poll() for v in builder.views(seg, source.catalogue())]


def _run(rule: Rule, views: list[StepView]) -> list[Finding]:
    return [f for v in views for f in rule.update(v)]


def _lbfgs(tmp_path: Path, *, zero_grad: bool) -> list[Finding]:
    """Full-batch L-BFGS (strong Wolfe, one iteration a step) on a logistic regression with an L2 penalty, 100 steps
    saved every 10th; `unchanged_tensor`'s findings."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 6, generator=g)
    y = (x @ torch.randn(6, generator=g) + 0.5 * torch.randn(400, generator=g) > 0).float()
    torch.manual_seed(0)
    model = nn.Linear(6, 1)
    opt = torch.optim.LBFGS(
        model.parameters(), lr=1, max_iter=1, history_size=10, line_search_fn="strong_wolfe"
    )

    def closure() -> torch.Tensor:
        if zero_grad:
            opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(x)[:, 0], y) + 1e-3 * (model.weight**2).sum()
        loss.backward()
        return loss

    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(100):
            hook.record_scalar("loss", opt.step(closure))
    return _run(UnchangedTensor(), _views(tmp_path))


def test_a_converged_lbfgs_gets_a_notice_not_a_warning(tmp_path: Path) -> None:
    found = _lbfgs(tmp_path, zero_grad=True)
    assert [f.severity for f in found] == [Severity.INFO]
    assert "LBFGS" in found[0].message and "fixed point" in found[0].message


def test_an_lbfgs_closure_that_never_zeroes_the_gradients_still_warns(tmp_path: Path) -> None:
    found = _lbfgs(tmp_path, zero_grad=False)
    assert [f.severity for f in found] == [Severity.WARNING]
    assert "nothing moves" in found[0].message


class RoutedExperts(nn.Module):
    """A router run first, then four experts (each `depth` Linear+activation layers and a head) on the same input;
    top-1 routing, the chosen expert's output scaled by its gate value. The router's logits are scaled by 1e-4: its
    gradient, which only the gate value passes back, is then as small against the experts' as a top-1 router's with a
    renormalised gate (1e-4 to 1e-3 of the last layer's), whatever the seed."""

    def __init__(self, depth: int, act: type[nn.Module]) -> None:
        super().__init__()
        self.router = nn.Linear(8, 4)

        def expert() -> nn.Sequential:
            layers: list[nn.Module] = []
            for i in range(depth):
                layers += [nn.Linear(8 if i == 0 else 32, 32), act()]
            return nn.Sequential(*layers, nn.Linear(32, 1))

        self.experts = nn.ModuleList([expert() for _ in range(4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        top, idx = F.softmax(1e-4 * self.router(x), 1).topk(1, 1)
        outs = torch.cat([e(x) for e in self.experts], 1)
        return (outs.gather(1, idx) * top).sum(1)


def _moe(tmp_path: Path, depth: int, act: type[nn.Module]) -> list[Finding]:
    """40 Adam steps of `RoutedExperts` on a regression, saved every 10th; `vanishing_gradient`'s findings."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 8, generator=g)
    y = torch.where(x[:, 0] > 0, x @ torch.randn(8, generator=g), torch.sin(x[:, 1] * 2))
    torch.manual_seed(0)
    model = RoutedExperts(depth, act)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(40):
            i = torch.arange(step * 64, step * 64 + 64) % 512
            loss = F.mse_loss(model(x[i]), y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    return _run(VanishingGradient(), _views(tmp_path))


def test_a_top1_router_before_the_experts_is_no_vanishing_first_layer(tmp_path: Path) -> None:
    assert _moe(tmp_path, depth=1, act=nn.ReLU) == []


def test_a_deep_sigmoid_chain_behind_the_router_still_vanishes(tmp_path: Path) -> None:
    found = _moe(tmp_path, depth=10, act=nn.Sigmoid)
    assert found and {f.tensor for f in found} == {"grad/experts.0.0.weight"}
