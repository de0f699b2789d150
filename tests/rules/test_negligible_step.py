"""`negligible_step`: a normalising optimizer's movement per step compared with its learning rate.

Through real PyTorch and the hook: Adagrad given a huge initial accumulator, and a sign optimizer whose sign was
dropped, are named with the fraction of the learning rate their parameters moved; the same scripts with
Adagrad's default accumulator, with the sign kept, and Adam, RMSprop and SGD are not. On synthetic streams: the
evidence must hold at each of the group's first saved steps (steps that shrink later are not its reading), a
group that does not move at all or runs at lr 0 is not judged, and RAdam and LAMB are not judged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.rules.hooked import trained_views
from tests.rules.streams import StepData, Stream, run
from trainguard.rules.base import Finding
from trainguard.rules.negligible_step import NegligibleStep, normalised
from trainguard.rules.step_view import COL, GROUP_PREFIX


class Lion(torch.optim.Optimizer):
    """Lion (the sign of an interpolation of momentum and gradient); `sign=False` is the bug that drops the sign."""

    def __init__(self, params: Iterable[nn.Parameter], lr: float = 3e-4, *, sign: bool = True) -> None:
        super().__init__(params, {"lr": lr})
        self.sign = sign

    @torch.no_grad()
    def step(self, closure: None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                m = self.state[p].setdefault("exp_avg", torch.zeros_like(p))
                update = m * 0.9 + p.grad * 0.1
                p.add_(update.sign() if self.sign else update, alpha=-group["lr"])
                m.mul_(0.99).add_(p.grad, alpha=0.01)


def trained(tmp_path: Path, make_optimizer) -> tuple[list[Finding], bool]:  # type: ignore[no-untyped-def]
    """A 2-layer classifier trained 60 steps through the hook, saved every 10th: the rule's findings, and
    whether it found a learning rate to judge against."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
    rule = NegligibleStep()
    found = run(rule, trained_views(tmp_path, model, make_optimizer(model.parameters()), steps=60))
    return found, rule.checked


def test_adagrad_with_a_huge_initial_accumulator_is_named_with_the_fraction_of_its_rate(
    tmp_path: Path,
) -> None:
    (f,), checked = trained(
        tmp_path, lambda ps: torch.optim.Adagrad(ps, lr=0.05, initial_accumulator_value=1e4)
    )
    assert checked
    assert f.rule == "negligible_step" and f.step == 30  # the third saved step with movement
    assert "parameter group 0.0 (Adagrad): its parameters moved at most" in f.message
    assert f.value is not None and f.value < 0.01  # the step divides by sqrt(1e4): a hundredth of lr at most
    assert f.tensor is not None and f.tensor.split(".")[-1] in ("weight", "bias")


def test_a_sign_optimizer_whose_sign_was_dropped_is_named(tmp_path: Path) -> None:
    (f,), _ = trained(tmp_path, lambda ps: Lion(ps, lr=3e-4, sign=False))
    assert "(Lion)" in f.message and f.step == 30


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: torch.optim.Adagrad(ps, lr=0.05),
        lambda ps: Lion(ps, lr=3e-4),
        lambda ps: torch.optim.Adam(ps, lr=1e-3),
        lambda ps: torch.optim.RMSprop(ps, lr=1e-3),
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    ],
    ids=["adagrad-default", "lion-with-sign", "adam", "rmsprop", "sgd"],
)
def test_normalising_optimizers_that_step_by_their_rate_and_sgd_are_not_named(
    tmp_path: Path, make: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
) -> None:
    # checked and fine: every one records its learning rate; SGD's step is not normalised: not judged
    assert trained(tmp_path, make) == ([], True)


def test_optimizers_whose_first_steps_are_small_by_design_are_not_judged() -> None:
    assert normalised("Adam") and normalised("FusedAdam") and normalised("Lion") and normalised("Adagrad")
    assert (
        not normalised("RAdam") and not normalised("LAMB") and not normalised("SGD") and not normalised(None)
    )


def settings(lr: float, *, shrink_from: int | None = None, still: bool = False) -> Callable[[StepData], None]:
    """The group's learning rate written once at step 0 (the stream's own steps are SGD's, lr x gradient: a few
    thousandths of `lr` per element per step at lr 0.05); with `shrink_from`, movement a ten-thousandfold smaller from
    that step on; with `still`, no movement at all."""

    def fault(d: StepData) -> None:
        if d.step == 0:
            d.scalars[f"{GROUP_PREFIX}0.0/lr"] = lr
        for name in [n for n in d.cols if n.startswith("fc") and (still or shrink_from is not None)]:
            if still or d.step >= shrink_from:  # type: ignore[operator]
                d.set(name, update_l2=0.0 if still else d.cols[name][COL["update_l2"]] * 1e-4)

    return fault


def findings(fault: Callable[[StepData], None], optimizer: str = "Adagrad") -> list[Finding]:
    saved = [v for v in Stream(steps=200, optimizer=optimizer, fault=fault) if v.step % 10 == 0]
    return run(NegligibleStep(), saved)


def test_the_evidence_must_hold_from_the_groups_first_saved_steps() -> None:
    (f,) = findings(settings(0.05))
    assert f.step == 30 and f.value is not None and f.value < 0.03
    # a group that stepped by its rate at first, as Adam does here at lr 1e-4, is not judged on later small steps
    assert findings(settings(1e-4), optimizer="Adam") == []
    assert findings(settings(1e-4, shrink_from=100), optimizer="Adam") == []


def test_a_group_that_does_not_move_or_runs_at_lr_zero_is_not_judged() -> None:
    assert findings(settings(0.05, still=True)) == []
    assert findings(settings(0.0)) == []


def test_a_run_without_group_records_is_not_checked() -> None:
    rule = NegligibleStep()
    assert run(rule, [v for v in Stream(steps=60, optimizer="Adagrad") if v.step % 10 == 0]) == []
    assert not rule.checked


def test_the_state_survives_a_restart() -> None:
    views = [v for v in Stream(steps=60, optimizer="Adagrad", fault=settings(0.05)) if v.step % 10 == 0]
    first = NegligibleStep()
    run(first, views[:3])
    second = NegligibleStep()
    second.set_state(first.get_state())
    (f,) = run(second, views[3:])
    assert f.step == 30
