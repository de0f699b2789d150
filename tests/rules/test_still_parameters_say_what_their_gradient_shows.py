"""`unchanged_tensor` says what the gradient record shows about the parameters it names, from real PyTorch.

Four ways a parameter stands still, each with its own evidence: a trunk whose output is detached (no gradient
recorded for it, while the head's is), a tanh whose every output sits at 1 (the layer before it gets an exactly zero
gradient), a ReLU on the output whose inputs are all below zero (every gradient exactly zero, the output layer's
too: the whole model stands still) and a layer the optimizer does not hold (its gradient is not zero)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

import trainguard.torch as tg
from tests.rules.hooked import stored_views
from tests.rules.streams import run
from trainguard.rules.base import Finding
from trainguard.rules.unchanged_tensor import UnchangedTensor


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
        self.head = nn.Linear(16, 1)


def _findings(tmp_path: Path, fault: str) -> list[Finding]:
    """Train `Net` on a regression for 60 steps with `fault`, saved every 10th; `unchanged_tensor`'s findings."""
    torch.manual_seed(0)
    model = Net()
    if fault == "saturated":
        with torch.no_grad():
            model.trunk[0].bias.fill_(50.0)  # every tanh input near 50: each output rounds to exactly 1
    if fault == "dead_output":
        with torch.no_grad():
            model.head.bias.fill_(-100.0)  # the ReLU on the output is off for every sample
    held = model.head.parameters() if fault == "not_held" else model.parameters()
    opt = torch.optim.Adam(held, lr=1e-2)
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(60):
            x = torch.randn(64, 8)
            h = model.trunk(x)
            out = model.head(h.detach() if fault == "detached" else h)
            if fault == "dead_output":
                out = F.relu(out)
            loss = F.mse_loss(out[:, 0], x[:, 0] + 2.0)
            model.zero_grad()
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    return run(UnchangedTensor(), stored_views(tmp_path))


def test_a_detached_trunk_gets_no_gradient_and_the_hint_says_where_to_look(tmp_path: Path) -> None:
    first = _findings(tmp_path, "detached")[0]
    assert first.tensor == "trunk.0.weight"
    assert "no gradient is recorded for it while head.weight has one" in first.message
    assert ".detach()" in first.hint


def test_a_layer_behind_a_saturated_tanh_has_an_exactly_zero_gradient(tmp_path: Path) -> None:
    first = _findings(tmp_path, "saturated")[0]
    assert first.tensor == "trunk.0.weight"
    assert "its gradient is exactly zero in every element, with act/trunk.1 (tanh) saturated" in first.message
    assert "inputs of the saturated activation" in first.hint


def test_a_dead_relu_on_the_output_zeroes_every_gradient_and_stops_the_model(tmp_path: Path) -> None:
    found = _findings(tmp_path, "dead_output")
    assert len(found) == 1  # the standstill, once
    assert "none of the 2 trainable tensors changed" in found[0].message
    assert "as is every recorded gradient, the output layer's included" in found[0].message
    assert "a ReLU or clamp on the output" in found[0].hint


def test_a_layer_the_optimizer_does_not_hold_has_a_gradient(tmp_path: Path) -> None:
    first = _findings(tmp_path, "not_held")[0]
    assert first.tensor == "trunk.0.weight"
    assert "its gradient is not zero" in first.message
    assert "the optimizer does not apply it" in first.message


class Shift(nn.Module):
    """A learned scalar added to every logit (as a GE2E speaker loss's similarity bias)."""

    def __init__(self) -> None:
        super().__init__()
        self.b = nn.Parameter(torch.tensor(5.0))

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits + self.b


def test_a_bias_the_softmax_cancels_is_noted_not_reported(tmp_path: Path) -> None:
    # the cross-entropy does not depend on a scalar added to every logit: its gradient is a rounding residue
    # (exactly zero but for float32 rounding) and plain SGD cannot move it
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 10), Shift())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with tg.Hook(f"file://{tmp_path}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(60):
            x = torch.randn(100, 8) * 2
            loss = F.cross_entropy(model(x), (x[:, :3] > 0).long().sum(1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    found = run(UnchangedTensor(), stored_views(tmp_path))
    assert [(f.tensor, f.severity.value) for f in found] == [("1.b", "info")], found
    assert "is a rounding residue" in found[0].message
    assert "the loss does not depend on it" in found[0].message
    # with the reading off, the same record is a parameter the optimizer does not apply
    off = run(UnchangedTensor({"residue_ratio": 0.0}), stored_views(tmp_path))
    assert off and off[0].severity.value == "warning" and "the optimizer does not apply it" in off[0].message
