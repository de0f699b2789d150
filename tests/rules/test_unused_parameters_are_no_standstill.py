"""Parameters the loss never reaches are unused, not left behind: `gradient_not_applied` and `unchanged_tensor`.

From real PyTorch through the hook: a pretraining head kept on a model fine-tuned through another head (its
gradient is the pretraining's last, rescaled in place by a global-norm clip; no optimizer holds it) and a bare
parameter of the model that no loss uses. Their twins with the fault: the head's loss still added while no
optimizer holds it, and a trunk whose output is detached."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

import trainguard
import trainguard.torch as tg
from trainguard.rules.base import Finding, Rule
from trainguard.rules.gradient_not_applied import GradientNotApplied
from trainguard.rules.unchanged_tensor import UnchangedTensor
from trainguard.sidecar.view_builder import ViewBuilder


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 32), nn.Tanh())
        self.pretext = nn.Linear(32, 16)
        self.task = nn.Linear(32, 3)
        self.weights = nn.Parameter(torch.zeros(2))  # learned task weights, for a loss variant not used here


def _findings(tmp_path: Path, *, fault: str | None) -> dict[str, list[Finding]]:
    """Pretrain trunk and pretext head (before the hook), then train trunk and task head 60 steps with a clip
    over every parameter, saved every 10th; return each rule's findings."""
    torch.manual_seed(0)
    model = TwoHeads()
    pre = torch.optim.SGD([*model.trunk.parameters(), *model.pretext.parameters()], lr=0.1)
    for _ in range(5):
        x = torch.randn(64, 16)
        F.mse_loss(model.pretext(model.trunk(x)), x).backward()
        pre.step()  # the last gradient is left on the parameters, as a pretraining script leaves it
    opt = torch.optim.Adam([*model.trunk.parameters(), *model.task.parameters()], lr=1e-2)
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(60):
            x, y = torch.randn(64, 16), torch.randint(0, 3, (64,))
            h = model.trunk(x)
            loss = F.cross_entropy(model.task(h.detach() if fault == "detached" else h), y)
            if fault == "pretext_not_optimised":
                loss = loss + F.mse_loss(model.pretext(h), x)  # a loss on a head no optimizer holds
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            hook.record_scalar("loss", loss)
    source = trainguard.open_run(f"file://{tmp_path}").source(0)
    builder = ViewBuilder(rank=0)
    views = [v for seg in source.poll() for v in builder.views(seg, source.catalogue())]
    rules: dict[str, Rule] = {
        "gradient_not_applied": GradientNotApplied(),
        "unchanged_tensor": UnchangedTensor(),
    }
    return {name: [f for v in views for f in rule.update(v)] for name, rule in rules.items()}


def test_a_pretraining_head_and_an_unused_parameter_are_quiet(tmp_path: Path) -> None:
    assert _findings(tmp_path, fault=None) == {"gradient_not_applied": [], "unchanged_tensor": []}


def test_a_head_whose_loss_no_optimizer_applies_is_named(tmp_path: Path) -> None:
    found = _findings(tmp_path, fault="pretext_not_optimised")
    assert [f.tensor for f in found["gradient_not_applied"]] == ["pretext.weight"]


def test_a_detached_trunk_is_still_left_behind(tmp_path: Path) -> None:
    found = _findings(tmp_path, fault="detached")
    assert [f.tensor for f in found["unchanged_tensor"]][:1] == ["trunk.0.weight"]
