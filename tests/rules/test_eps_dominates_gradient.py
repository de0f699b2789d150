"""`eps_dominates_gradient`: an adaptive optimizer's eps compared with its parameters' gradient scale.

Through real PyTorch and the hook: Adam with eps=1 on a small classifier is named, with its effective SGD
learning rate; the same script with Adam's default eps, and with SGD, is not. On synthetic streams: the
evidence must hold at each of the group's first saved steps, a group at lr 0 and a run without group
records are not judged, and the state survives a restart.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tests.rules.hooked import trained_views
from tests.rules.streams import StepData, Stream, run
from trainguard.rules.base import Finding
from trainguard.rules.eps_dominates_gradient import EpsDominatesGradient, adaptive
from trainguard.rules.step_view import GROUP_PREFIX


def trained(tmp_path: Path, make_optimizer) -> tuple[list[Finding], bool]:  # type: ignore[no-untyped-def]
    """A 2-layer classifier trained 80 steps through the hook, saved every 10th: the rule's findings, and
    whether it found an eps to judge."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
    rule = EpsDominatesGradient()
    found = run(rule, trained_views(tmp_path, model, make_optimizer(model.parameters()), steps=80))
    return found, rule.checked


def test_adam_with_eps_one_is_named_with_its_effective_learning_rate(tmp_path: Path) -> None:
    (f,), checked = trained(tmp_path, lambda ps: torch.optim.Adam(ps, lr=1e-3, eps=1.0))
    assert checked
    assert f.rule == "eps_dominates_gradient" and f.tensor == f"{GROUP_PREFIX}0.0/eps"
    assert "parameter group 0.0 (Adam): eps 1 is" in f.message
    assert "lr/eps = 0.001" in f.message
    assert f.step == 40  # the fifth saved step with gradients


@pytest.mark.parametrize(
    ("make", "has_eps"),
    [
        (lambda ps: torch.optim.Adam(ps, lr=1e-3), True),
        (lambda ps: torch.optim.AdamW(ps, lr=1e-3, eps=1e-6), True),
        (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), False),
    ],
    ids=["adam-default", "adamw-1e-6", "sgd"],
)
def test_adaptive_optimizers_with_small_eps_and_sgd_are_not_named(
    tmp_path: Path, make, has_eps: bool
) -> None:  # type: ignore[no-untyped-def]
    # checked and fine where an eps was recorded; SGD has none: "not checked", not "no issues"
    assert trained(tmp_path, make) == ([], has_eps)


def eps(value: float, lr: float = 1e-3, shrink_from: int | None = None):  # type: ignore[no-untyped-def]
    """The group's settings written once at step 0; with `shrink_from`, gradients a thousandfold smaller from
    that step on."""

    def fault(d: StepData) -> None:
        if d.step == 0:
            d.scalars[f"{GROUP_PREFIX}0.0/eps"] = value
            d.scalars[f"{GROUP_PREFIX}0.0/lr"] = lr
        if shrink_from is not None and d.step >= shrink_from:
            for name in [n for n in d.cols if n.startswith("grad/")]:
                d.scale(name, 1e-3)

    return fault


def saved(stream: Stream) -> list:  # type: ignore[type-arg]
    return [v for v in stream if v.step % 10 == 0]


def findings(fault, steps: int = 80, optimizer: str | None = "Adam") -> list[Finding]:  # type: ignore[no-untyped-def]
    return run(EpsDominatesGradient(), saved(Stream(steps=steps, optimizer=optimizer, fault=fault)))


def test_the_evidence_must_hold_at_each_of_the_first_saved_steps() -> None:
    # the stream's gradient RMS over the group's elements is 0.014-0.018 at the start: eps 1 is ~60x, eps 0.1 ~6x
    assert len(findings(eps(1.0))) == 1
    assert findings(eps(0.1)) == []
    # gradients that shrink a thousandfold after the first saved steps (a run converging, or vanishing) are not
    # this rule's evidence: only the first saved steps are judged
    assert findings(eps(1e-3, shrink_from=60), steps=200) == []
    assert len(findings(eps(1e-3, shrink_from=0), steps=200)) == 1  # the same from the start: named


def scaled(factors: dict[str, float], value: float):  # type: ignore[no-untyped-def]
    """The group's eps `value`, and the gradients of the named parameters scaled by their factors at every step."""
    settings = eps(value)

    def fault(d: StepData) -> None:
        settings(d)
        for name, factor in factors.items():
            d.scale(f"grad/{name}", factor)

    return fault


def test_a_few_large_gradients_do_not_hide_a_group_that_steps_as_sgd() -> None:
    # the head's 640 of 10,880 elements at 5x their gradients (RMS 0.12-0.23: eps 1 only 4-8x of it) beside the
    # rest at 0.01-0.02: the group's RMS, 0.03-0.06, is under eps / 17, and nearly every element steps as SGD
    (f,) = findings(scaled({"fc3.weight": 5.0}, 1.0))
    assert "the RMS of its 4 parameters' gradients over all their elements" in f.message
    # a group whose elements mostly get no gradient (dead units) beside a head that does is no eps at fault
    assert findings(scaled({"fc0.weight": 0.0, "fc1.weight": 0.0, "fc2.weight": 0.0}, 1e-8)) == []


def test_other_optimizers_a_group_at_lr_0_and_runs_without_group_records_are_not_judged() -> None:
    assert findings(eps(1.0), optimizer="SGD") == []
    assert findings(eps(1.0, lr=0.0)) == []
    rule = EpsDominatesGradient()
    assert run(rule, saved(Stream(steps=80))) == [] and not rule.checked


def test_the_state_survives_a_restart() -> None:
    stream = Stream(steps=80, optimizer="Adam", fault=eps(1.0))
    views = saved(stream)
    first = EpsDominatesGradient()
    assert [f for v in views[:3] for f in first.update(v)] == []
    again = EpsDominatesGradient()
    again.load_state_dict(first.state_dict())
    assert len([f for v in views[3:] for f in again.update(v)]) == 1


@pytest.mark.parametrize(
    ("cls", "judged"),
    [("Adam", True), ("AdamW", True), ("RMSprop", True), ("FusedAdam", True), ("Lamb", True), ("SGD", False),
     ("Adadelta", False), (None, False)],
)  # fmt: skip
def test_which_optimizers_divide_by_eps(cls: str | None, judged: bool) -> None:
    assert adaptive(cls) is judged
