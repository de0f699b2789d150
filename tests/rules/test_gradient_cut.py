"""`gradient_cut`: every kernel's gradient exactly zero from the start while a bias still gets one.

Through real PyTorch and the hook: an MLP whose weights are fake-quantised without a straight-through estimator
(round's zero derivative) is named; the same MLP with the estimator is not, nor one whose kernels start at zero
(a zero initialisation explains the zeros) or whose hidden layer is dead from the start (a dead layer explains
them). A run without gradient records is not checked, and the state survives a restart.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.rules.hooked import trained_views
from tests.rules.streams import Stream, run
from trainguard.rules.base import Finding
from trainguard.rules.gradient_cut import GradientCut
from trainguard.rules.step_view import StepView


class QuantMLP(nn.Module):
    """20 -> 32 -> 4 with 8-bit fake-quantised weights; `ste=False` is the bug: round's zero gradient flows back."""

    def __init__(self, *, ste: bool = True, dead: bool = False, zero: bool = False) -> None:
        super().__init__()
        self.ste = ste
        self.fc1, self.act, self.fc2 = nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4)
        if dead:
            nn.init.constant_(self.fc1.bias, -100.0)  # every hidden unit off for every input
        if zero:
            nn.init.zeros_(self.fc1.weight)
            nn.init.zeros_(self.fc2.weight)

    def quant(self, w: torch.Tensor) -> torch.Tensor:
        s = w.detach().abs().max() / 127 + 1e-12
        q = torch.round(w / s) * s
        return w + (q - w).detach() if self.ste else q

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(F.linear(x, self.quant(self.fc1.weight), self.fc1.bias))
        return F.linear(h, self.quant(self.fc2.weight), self.fc2.bias)


def cut_views() -> list[StepView]:
    """The views of 40 steps of the MLP quantised without the estimator, saved every 10th (for the tests that run
    every rule on a run that shows its symptom)."""
    torch.manual_seed(0)
    model = QuantMLP(ste=False)
    with tempfile.TemporaryDirectory() as out:
        return trained_views(Path(out), model, torch.optim.AdamW(model.parameters(), lr=1e-3), steps=40)


def trained(tmp_path: Path, **kwargs: bool) -> tuple[list[Finding], bool]:
    torch.manual_seed(0)
    model = QuantMLP(**kwargs)
    rule = GradientCut()
    views = trained_views(tmp_path, model, torch.optim.AdamW(model.parameters(), lr=1e-3), steps=40)
    return run(rule, views), rule.checked


def test_fake_quantisation_without_a_straight_through_estimator_is_named(tmp_path: Path) -> None:
    (f,), checked = trained(tmp_path, ste=False)
    assert checked and f.rule == "gradient_cut" and f.step == 20  # the third saved step: 0, 10, 20
    assert f.message.startswith("every one of the 2 kernels' gradients was zero in all its elements")
    # the biases still get theirs: the cut is on the weights, not on the path to the loss
    assert "while 2 other gradients (grad/fc1.bias: l2" in f.message and "straight-through" in f.hint


@pytest.mark.parametrize(
    "kwargs",
    [{"ste": True}, {"ste": False, "zero": True}, {"ste": True, "dead": True}, {"ste": False, "dead": True}],
    ids=["with-estimator", "zero-init", "dead-layer", "dead-layer-and-cut"],
)
def test_a_trained_model_and_zeros_another_cause_explains_are_not_named(
    tmp_path: Path, kwargs: dict[str, bool]
) -> None:
    assert trained(tmp_path, **kwargs) == ([], True)


def test_a_run_without_gradient_records_is_not_checked() -> None:
    rule = GradientCut()
    views = [v for v in Stream(steps=30) if v.step % 10 == 0]
    no_grads = [
        type(v)(step=v.step, names=v.names[:0], meta=v.meta[:0], stats=v.stats[:0], scalars=v.scalars)
        for v in views
    ]
    assert run(rule, no_grads) == [] and not rule.checked


def test_the_state_survives_a_restart() -> None:
    views = cut_views()
    first = GradientCut()
    run(first, [v for v in views if v.step < 20])
    second = GradientCut()
    second.set_state(first.get_state())
    (f,) = run(second, [v for v in views if v.step >= 20])
    assert f.step == 20
