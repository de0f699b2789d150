"""A rule restored from its JSON state gives the same findings as one that never stopped."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.rules.streams import StepData, Stream
from tests.rules.test_batchnorm_small_batch import point_views
from tests.rules.test_chance_level_readings_and_accuracy_gap import leak_views
from tests.rules.test_collapsed_lookup import lookup_views
from tests.rules.test_gradient_cut import cut_views
from trainguard.rules import registry
from trainguard.rules.base import Rule
from trainguard.rules.step_view import COL, StepView
from trainguard.store import prediction_buckets


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


def _never_updated() -> Callable[[StepData], None]:
    """From step 300 fc1.weight keeps its statistics of step 300 while its gradient goes on: no optimizer owns it."""
    kept: dict[str, np.ndarray] = {}

    def fault(d: StepData) -> None:
        if d.step >= 300:
            d.cols["fc1.weight"] = kept.setdefault("fc1.weight", d.cols["fc1.weight"].copy())
            d.set("fc1.weight", update_l2=0.0)

    return fault


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


def _inputs_wrap_around(d: StepData) -> None:
    d.set("input/x", mean=1.2, std=1.6)  # uint8 pixels wrapping around in an augmentation


def _labels(d: StepData) -> None:
    d.scalars["label_count/a"], d.scalars["label_count/b"] = 50.0, 1.0


def _predictions(*, tied: bool) -> list[StepView]:
    """A binary prediction stream of 600 steps whose scores lose their signal from step 300 (or are all one value)."""
    rng = np.random.default_rng(3)
    views = []
    for step in range(600):
        y = (rng.random(1000) < 0.2).astype(np.float64)
        signal = 2.0 * (2 * y - 1) if step < 300 else 0.0
        s = np.full(1000, 0.3) if tied else 1 / (1 + np.exp(-(rng.normal(0, 1, 1000) + signal)))
        views.append(StepView(step=step, predictions={"pred/p": prediction_buckets.count(s, y)}))
    return views


def _optimizer_stops_stepping() -> list[StepView]:
    """A run whose optimizer stops stepping after step 299 for 62 iterations and after step 449 for good: the
    hook's no-step markers (every 10 iterations, at the last counted step) come between the steps."""
    views: list[StepView] = []
    for v in Stream(steps=450).views():
        views.append(v)
        if v.step in (299, 449):
            views += [
                StepView(step=v.step, no_step=(v.step + 1, n))
                for n in range(2, 63 if v.step == 299 else 203, 10)
            ]
    return views


def _stream(fault: Callable[[StepData], None], **kwargs: Any) -> Callable[[], list[StepView]]:
    return lambda: Stream(steps=600, fault=fault, **kwargs).views()


FAULTS: dict[str, Callable[[], list[StepView]]] = {
    "nan_activation": _stream(_after(300, lambda d: d.set("act/relu1", nan=1))),
    "vanishing_gradient": _stream(_vanish),
    "exploding_gradient": _stream(_after(300, lambda d: d.scale("grad/fc1.weight", 1e3))),
    # 50 of 64 units dead (78%) is a soft symptom: reported once the loss stalls too (the gate's state round-trips)
    "dead_units_and_flat_loss": _stream(
        _after(300, lambda d: (_units("active", "act/relu0", 0.0)(d), _flat(d)))
    ),
    "saturated_tanh": _stream(_after(300, _units("saturated", "act/tanh1", 1.0)), activation="tanh"),
    "oversized_output_layer": _stream(lambda d: d.scale("fc2.weight", 20)),
    "all_zero_weights": _stream(
        _after(300, lambda d: d.set("fc1.weight", zero=d.cols["fc1.weight"][COL["count"]]))
    ),
    "frozen_weights": _stream(_after(300, _freeze)),
    "weights_never_updated": lambda: Stream(steps=600, fault=_never_updated()).views(),
    "tiny_updates": _stream(_tiny_updates),
    "wide_weights": _stream(_after(300, lambda d: d.set("fc3.weight", std=4.0))),
    "large_weights": _stream(_after(300, lambda d: d.set("fc0.weight", l2=4.0))),
    "flat_loss": _stream(_flat),
    "diverging_loss": _stream(_after(300, lambda d: d.scalars.update(loss=-(1.0 + 0.05 * (d.step - 300))))),
    "overfitting": _stream(_after(300, _overfit)),
    "loss_spikes": _stream(
        lambda d: d.scalars.update(loss=d.scalars["loss"] * (8 if d.step in (300, 420) else 1))
    ),
    "oscillating_loss": _stream(_after(300, _oscillate)),
    "imbalanced_labels": _stream(_labels),
    "inputs_wrap_around": _stream(_after(300, _inputs_wrap_around), inputs=True),
    "stalled_clock": _stream(
        lambda d: setattr(
            d, "wall_time", d.wall_time + (1000 if d.step >= 300 else 0) + (900 if d.step >= 450 else 0)
        )
    ),
    "optimizer_stops_stepping": _optimizer_stops_stepping,
    "warmup_never_stepped": _stream(  # the group records (format 2.5) write the lr once: it never changes
        lambda d: (
            d.scalars.update({"group/0.0/lr": 2e-3 / 30, "group/0.0/initial_lr": 2e-3})
            if d.step == 0
            else None
        )
    ),
    "adam_eps_far_above_the_gradients": _stream(
        lambda d: d.scalars.update({"group/0.0/eps": 1.0, "group/0.0/lr": 1e-3}) if d.step == 0 else None,
        optimizer="Adam",
    ),
    "adagrad_steps_a_sliver_of_its_rate": _stream(  # the stream's SGD-sized steps against Adagrad's lr 0.05
        lambda d: d.scalars.update({"group/0.0/lr": 0.05}) if d.step == 0 else None, optimizer="Adagrad"
    ),
    "kernels_cut_off_from_the_loss": cut_views,
    "batchnorm_on_batches_of_two": lambda: point_views(2, steps=600),
    "accuracy_falls_as_the_loss_falls": _stream(
        lambda d: d.eval_scalars.update(val_acc=0.8 - 0.7 * d.step / 600) if d.step % 25 == 0 else None
    ),
    "held_out_accuracy_far_below_the_training_fit": lambda: leak_views(600),
    "ids_collapse_to_one_embedding_row": lambda: lookup_views(lambda s: 230 if s < 300 else 1, steps=600),
    "predictions_lose_their_signal": lambda: _predictions(tied=False),
    "tied_prediction_scores": lambda: _predictions(tied=True),
}
"""Faulty runs of 600 steps, named by symptom, not by rule. Each registered rule is round-tripped on the first
of them it fires on, with its `example_params`: a new rule needs no entry here unless it detects a symptom
none of these shows."""


@functools.cache
def _views(fault: str) -> list[StepView]:
    return FAULTS[fault]()


def _firing_fault(cls: type[Rule]) -> str | None:
    """The first fault of FAULTS that `cls` (with its example parameters) reports a finding on."""
    for fault in FAULTS:
        rule = cls(dict(cls.example_params))
        if any(rule.update(v) for v in _views(fault)):
            return fault
    return None


def _dicts(findings: list[Any]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in findings]


UNIT_CASES = {
    "unchanged_tensor": ({}, {}, _after(300, _freeze_rows)),
    "oscillating_loss": ({}, {}, _after(300, _overshoot)),
    "diverging_loss": (
        {},
        {},
        _after(
            300, lambda d: d.scalars.update(loss=2.3 * 10.0 ** (d.step - 300) if d.step < 312 else math.nan)
        ),
    ),
}
"""Rules whose second path is round-tripped too: per-unit (Tier-1) state, the weight-norm history, a loss running away
within a window."""


@pytest.mark.parametrize("name", sorted(registry.BUILTINS))
def test_restored_rule_gives_identical_findings(name: str) -> None:
    cls = registry.get(name)
    fault = _firing_fault(cls)
    assert fault is not None, (
        f"{name} fires on none of FAULTS with its example_params {dict(cls.example_params)}: set example_params on "
        "the class to parameters it fires with, or add a fault that shows the symptom it detects"
    )
    _round_trip_views(name, dict(cls.example_params), _views(fault))


@pytest.mark.parametrize("name", sorted(UNIT_CASES))
def test_restored_rule_gives_identical_per_unit_findings(name: str) -> None:
    _round_trip(name, *UNIT_CASES[name])


def _round_trip(
    name: str, params: dict[str, Any], kwargs: dict[str, Any], fault: Callable[[StepData], None]
) -> None:
    _round_trip_views(name, params, Stream(steps=600, fault=fault, **kwargs).views())


def _round_trip_views(name: str, params: dict[str, Any], views: list[StepView]) -> None:
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
