"""A rule restored from its JSON state gives the same findings as one that never stopped."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from tests.rules.streams import StepData, Stream
from trainguard.rules import registry
from trainguard.rules.base import Rule
from trainguard.rules.step_view import COL, StepView


def _after(step: int, edit: Callable[[StepData], None]) -> Callable[[StepData], None]:
    def fault(d: StepData) -> None:
        if d.step >= step:
            edit(d)

    return fault


def _flat(d: StepData) -> None:
    d.scalars["loss"] = 2.3 * (1 + 0.05 * math.sin(d.step * 1.7))


def _units(kind: str, name: str, value: float) -> Callable[[StepData], None]:
    def edit(d: StepData) -> None:
        if (kind, name) in d.units:
            d.units[(kind, name)][:50] = value

    return edit


def _overfit(d: StepData) -> None:
    if d.eval_scalars:
        d.eval_scalars["loss"] = 1.0 + d.step / 100


def _oscillate(d: StepData) -> None:
    d.scalars["loss"] = 1.6 if d.step % 2 else 0.6


def _vanish(d: StepData) -> None:
    _flat(d)
    d.scale("grad/fc0.weight", 1e-9)


def _freeze(d: StepData) -> None:
    d.set("fc2.weight", update_l2=0.0)


def _freeze_rows(d: StepData) -> None:
    if ("moved", "fc1.weight") in d.units:
        d.units[("moved", "fc1.weight")][:20] = (
            0.0  # rows with a gradient that do not move (a row-wise learning rate of 0)
        )


def _overshoot(d: StepData) -> None:
    for i in range(4):  # weights growing 3% per step while the loss climbs back up: steps that overshoot
        d.cols[f"fc{i}.weight"][COL["l2"]] *= 1.03 ** (d.step - 300)
    d.scalars["loss"] = 2.0


def _tiny_updates(d: StepData) -> None:
    _flat(d)
    for i in range(4):
        d.cols[f"fc{i}.weight"][COL["update_l2"]] *= 1e-6


def _labels(d: StepData) -> None:
    d.scalars["label_count/a"], d.scalars["label_count/b"] = 50.0, 1.0


# rule name -> (params, stream keyword arguments, fault)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], Callable[[StepData], None]]] = {
    "exploding_tensor": ({}, {}, _after(300, lambda d: d.set("act/relu1", nan=1))),
    "vanishing_gradient": ({}, {}, _vanish),
    "exploding_gradient": ({}, {}, _after(300, lambda d: d.scale("grad/fc1.weight", 1e3))),
    # 50 of 64 units dead (78%) is a soft symptom: reported once the loss stalls too (the gate's state round-trips)
    "dead_relu": ({}, {}, _after(300, lambda d: (_units("active", "act/relu0", 0.0)(d), _flat(d)))),
    "saturated_activation": ({}, {"activation": "tanh"}, _after(300, _units("saturated", "act/tanh1", 1.0))),
    "poor_weight_initialization": ({"num_classes": 100}, {}, lambda d: d.scale("fc2.weight", 20)),
    "all_zero": ({}, {}, _after(300, lambda d: d.set("fc1.weight", zero=d.cols["fc1.weight"][COL["count"]]))),
    "unchanged_tensor": ({}, {}, _after(300, _freeze)),
    "weight_update_ratio": ({}, {}, _tiny_updates),
    "tensor_variance": ({}, {}, _after(300, lambda d: d.set("fc3.weight", std=4.0))),
    "loss_not_decreasing": ({"num_steps": 30}, {}, _flat),
    "diverging_loss": ({}, {}, _after(300, lambda d: d.scalars.update(loss=-(1.0 + 0.05 * (d.step - 300))))),
    "overfit": ({}, {}, _after(300, _overfit)),
    "overtraining": ({"strip_length": 2}, {}, _after(300, _overfit)),
    "loss_spike": (
        {},
        {},
        lambda d: d.scalars.update(loss=d.scalars["loss"] * (8 if d.step in (300, 420) else 1)),
    ),
    "oscillating_loss": ({}, {}, _after(300, _oscillate)),
    "class_imbalance": ({"samples": 5000}, {}, _labels),
    "stalled_training": (
        {"threshold": 600},
        {},
        lambda d: setattr(
            d, "wall_time", d.wall_time + (1000 if d.step >= 300 else 0) + (900 if d.step >= 450 else 0)
        ),
    ),
    "threshold": (
        {"statistic": "l2", "comparison": ">", "value": 3.0},
        {},
        _after(300, lambda d: d.set("fc0.weight", l2=4.0)),
    ),
}


def _dicts(findings: list[Any]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in findings]


def test_every_builtin_rule_has_a_round_trip_case() -> None:
    # the AUC rules read prediction streams; tests/rules/test_auc_counts.py round-trips them
    assert set(CASES) == set(registry.BUILTINS) - {"auc_drop", "auc_resolution"}


UNIT_CASES = {
    "unchanged_tensor": ({}, {}, _after(300, _freeze_rows)),
    "oscillating_loss": ({}, {}, _after(300, _overshoot)),
}
"""Rules whose second path is round-tripped too: per-unit (Tier-1) state, the weight-norm history."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_restored_rule_gives_identical_findings(name: str) -> None:
    _round_trip(name, *CASES[name])


@pytest.mark.parametrize("name", sorted(UNIT_CASES))
def test_restored_rule_gives_identical_per_unit_findings(name: str) -> None:
    _round_trip(name, *UNIT_CASES[name])


def _round_trip(
    name: str, params: dict[str, Any], kwargs: dict[str, Any], fault: Callable[[StepData], None]
) -> None:
    views: list[StepView] = Stream(steps=600, fault=fault, **kwargs).views()
    cls = registry.get(name)
    whole: list[Any] = []
    reference = cls(params)
    for v in views:
        whole += reference.update(v)
    assert whole, f"{name} never fired, so the round trip proves nothing"
    # stop one view before the first finding (mid-debounce for k-of-n rules) and again later on
    cuts = sorted({max(whole[0].step - 1, 1), (whole[0].step + len(views)) // 2})
    rule: Rule = cls(params)
    resumed: list[Any] = []
    start = 0
    for cut in [*cuts, len(views)]:
        for v in views[start:cut]:
            resumed += rule.update(v)
        state = json.loads(json.dumps(rule.state_dict(), allow_nan=False))  # strict JSON, as checkpoints are
        rule = cls(params)
        rule.load_state_dict(state)
        start = cut
    assert _dicts(resumed) == _dicts(whole)


def test_a_gate_state_saved_before_it_counted_steps_restores_and_still_opens() -> None:
    # an evaluator checkpoint from before the loss gate counted training steps has no step keys:
    # the restored gate counts from the first view after the restart instead of failing or never opening
    views = Stream(steps=300, fault=_vanish).views()
    name, params = "vanishing_gradient", {"severe_ratio_threshold": 0}
    rule = registry.get(name)(params)
    for v in views[:30]:
        rule.update(v)
    state = rule.state_dict()
    gate = state["own"]["gate"]
    for key in ("best_step", "ema_step", "first_step", "last_step"):
        del gate[key]
    gate["since_best"] = 5  # the old count of views, which the restored gate ignores
    restored = registry.get(name)(params)
    restored.load_state_dict(json.loads(json.dumps(state)))
    found = [f for v in views[30:] for f in restored.update(v)]
    assert found and 80 <= found[0].step <= 84  # stuck for 50 steps counted from step 30, then 3 of 5
