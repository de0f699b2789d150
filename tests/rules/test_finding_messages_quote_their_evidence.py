"""Every default rule's finding says what its numbers say.

Each rule of the default set is driven into firing on the synthetic MLP stream (`streams.py`), with
the faults the rules' own tests use. For every finding, the evidence it carries (`value`,
`threshold`) must be the numbers its sentence quotes, and the sentence's claims about them must
hold: "within P% of V" is within, "above the threshold T" is above, "below" is below. A message
that says a loss is "within 2% of its first value" while the evidence says it quadrupled fails here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

import pytest

from tests.rules.streams import StepData, Stream, run
from tests.rules.test_auc_counts import _stream as auc_stream
from tests.rules.test_batchnorm_small_batch import point_views
from tests.rules.test_chance_level_readings_and_accuracy_gap import leak_views
from tests.rules.test_collapsed_lookup import lookup_views
from tests.rules.test_gradient_cut import cut_views
from tests.rules.test_runaway_gradients_and_dead_outputs import _never_zeroed, tagger_views
from trainguard.api._default_set import DEFAULT_SET
from trainguard.rules import registry
from trainguard.rules.base import Finding, fmt
from trainguard.rules.step_view import GROUP_PREFIX, StepView

GRADS = [f"grad/fc{i}.weight" for i in range(4)]


def _nan_from_relu(d: StepData) -> None:
    if d.step >= 300:
        for name in ["act/relu1", "act/relu2", *GRADS, "fc0.weight", "fc3.weight"]:
            d.set(name, nan=5, l2=math.nan, mean=math.nan)


def _r2_at_chance(d: StepData) -> None:
    if d.step % 25 == 0:
        d.eval_scalars["val_r2"] = 0.01 * (d.step % 2)


def _auc_below_chance(d: StepData) -> None:
    if d.step % 25 == 0:
        d.eval_scalars["val_auc"] = 0.5 - 0.3 * d.step / 400


def _accuracy_falls(d: StepData) -> None:
    if d.step % 25 == 0:
        d.eval_scalars["val_acc"] = 0.8 - 0.7 * d.step / 400


def _gradient_blow_up(d: StepData) -> None:
    if d.step >= 400:
        d.scale("grad/fc2.weight", 1e3)


def _vanishing(d: StepData) -> None:
    d.scalars["loss"] = math.log(10) * (1 + 0.01 * math.sin(d.step))
    for i, name in enumerate(GRADS):
        d.scale(name, 10.0 ** (-(9 - 2 * i)))


def _dying_relu(d: StepData) -> None:
    key = ("active", "act/relu1")
    if d.step >= 300 and key in d.units:
        d.units[key][: int(0.95 * len(d.units[key]))] = 0.0


def _saturating_tanh(d: StepData) -> None:
    key = ("saturated", "act/tanh2")
    if d.step >= 200 and key in d.units:
        d.units[key][:45] = 1.0


def _big_init(d: StepData) -> None:
    d.scale("fc1.weight", 10.0)


def _frozen(d: StepData) -> None:
    if d.step >= 200:
        d.set("fc1.weight", update_l2=0.0)


def _never_updated(d: StepData) -> None:
    if d.step >= 200:  # fc1.weight keeps its statistics of step 199 while its gradient goes on
        d.cols["fc1.weight"] = Stream(steps=200).data(199).cols["fc1.weight"]
        d.set("fc1.weight", update_l2=0.0)  # and no element changed


def _tiny_lr(d: StepData) -> None:
    d.scalars["loss"] = 2.3
    for i in range(4):
        d.set(f"fc{i}.weight", update_l2=d.cols[f"fc{i}.weight"][7] * 0 + 1e-9)


def _loss_growing(d: StepData) -> None:
    d.scalars["loss"] = 0.3 * 1.01 ** max(d.step - 100, 0)


def _loss_falling_without_bound(d: StepData) -> None:
    d.scalars["loss"] = 0.05 - 0.04 * d.step


def _flat_loss(d: StepData) -> None:
    d.scalars["loss"] = 2.3 * (1 + 0.05 * math.sin(d.step * 1.7))
    if d.eval_scalars:  # the validation loss of a run that learns nothing does not fall either
        d.eval_scalars["loss"] = 2.4


def _rising_loss(d: StepData) -> None:
    """A loss that rises 4x from 1.08 (a learning rate far too high): 'not decreasing' by a long way."""
    d.scalars["loss"] = 1.08 * (1 + 3 * min(d.step, 150) / 150)


def _spike(d: StepData) -> None:
    if d.step == 400:
        d.scalars["loss"] *= 5
        d.scale("grad/fc3.weight", 20)


def _oscillate(d: StepData) -> None:
    if d.step >= 300:
        d.scalars["loss"] = 1.6 if d.step % 2 else 0.6


def _overfitting(d: StepData) -> None:
    if d.eval_scalars and d.step >= 300:
        d.eval_scalars["loss"] = 1.0 + (d.step - 300) / 100


def _skewed(d: StepData) -> None:
    d.scalars["label_count/cat"] = 99.0
    d.scalars["label_count/dog"] = 1.0


def _pause(d: StepData) -> None:
    if d.step >= 20:
        d.wall_time += 3600


def _optimizer_stops_stepping() -> list[StepView]:
    """100 steps, then training without optimizer steps: the hook's no-step markers at the last counted step."""
    return [*Stream(steps=100).views(), *(StepView(step=99, no_step=(100, n)) for n in range(2, 120, 10))]


def _inputs(start: int, **columns: float) -> Callable[[StepData], None]:
    def edit(d: StepData) -> None:
        if d.step >= start:
            d.set("input/x", **columns)

    return edit


def _warmup_never_stepped(d: StepData) -> None:
    if (
        d.step == 0
    ):  # the hook writes a group's settings where they change: once, for a scheduler never stepped
        d.scalars[f"{GROUP_PREFIX}0.0/initial_lr"] = 2e-3
        d.scalars[f"{GROUP_PREFIX}0.0/lr"] = 2e-3 / 30


def _adam_eps_one(d: StepData) -> None:
    if d.step == 0:  # written once: the settings never change
        d.scalars[f"{GROUP_PREFIX}0.0/eps"] = 1.0
        d.scalars[f"{GROUP_PREFIX}0.0/lr"] = 1e-3


def _adagrad_rate(d: StepData) -> None:
    if d.step == 0:  # the group's rate, written once: the stream's SGD-sized steps are a sliver of it
        d.scalars[f"{GROUP_PREFIX}0.0/lr"] = 0.05


def _every(n: int, views: Iterable[StepView]) -> list[StepView]:
    return [v for v in views if v.step % n == 0]


SCENARIOS: dict[str, list[tuple[str, dict[str, object], Callable[[], Iterable[StepView]]]]] = {
    "exploding_tensor": [("nan", {}, lambda: Stream(fault=_nan_from_relu))],
    "exploding_gradient": [
        ("jump", {}, lambda: Stream(fault=_gradient_blow_up)),
        ("runaway", {}, lambda: Stream(steps=300, fault=_never_zeroed)),
    ],
    "vanishing_gradient": [("deep sigmoid", {}, lambda: Stream(steps=200, fault=_vanishing))],
    "dead_relu": [
        ("units die", {}, lambda: Stream(fault=_dying_relu)),
        ("clamped outputs", {}, lambda: tagger_views()),
    ],
    "saturated_activation": [("tanh", {}, lambda: Stream(activation="tanh", fault=_saturating_tanh))],
    "poor_weight_initialization": [("10x", {}, lambda: Stream(steps=20, fault=_big_init))],
    "unchanged_tensor": [("frozen", {}, lambda: Stream(steps=260, fault=_frozen))],
    "gradient_not_applied": [("not in the optimizer", {}, lambda: Stream(steps=260, fault=_never_updated))],
    "weight_update_ratio": [("tiny lr", {}, lambda: Stream(steps=120, fault=_tiny_lr))],
    "batchnorm_small_batch": [("batches of two", {}, lambda: point_views(2))],
    "warmup_not_stepped": [
        ("scheduler never stepped", {}, lambda: Stream(steps=300, fault=_warmup_never_stepped))
    ],
    "eps_dominates_gradient": [
        ("Adam eps=1", {}, lambda: Stream(steps=60, optimizer="Adam", fault=_adam_eps_one))
    ],
    "gradient_cut": [("fake quantisation without an estimator", {}, cut_views)],
    "negligible_step": [
        (
            "Adagrad accumulator 1e4",
            {},
            lambda: _every(10, Stream(steps=60, optimizer="Adagrad", fault=_adagrad_rate)),
        )
    ],
    "diverging_loss": [
        ("growing", {}, lambda: Stream(steps=400, fault=_loss_growing)),
        ("falling", {}, lambda: _every(10, Stream(steps=300, fault=_loss_falling_without_bound))),
    ],
    "loss_not_decreasing": [
        ("stuck", {}, lambda: _every(10, Stream(steps=700, fault=_flat_loss))),
        ("blocks", {"stuck_steps": None}, lambda: Stream(steps=700, fault=_flat_loss)),
        ("rising", {}, lambda: _every(10, Stream(steps=400, fault=_rising_loss))),
    ],
    "loss_spike": [("spike", {}, lambda: Stream(fault=_spike))],
    "oscillating_loss": [("swing", {}, lambda: Stream(fault=_oscillate))],
    "overfit": [("val rises", {}, lambda: Stream(fault=_overfitting))],
    "overtraining": [("val rises", {}, lambda: Stream(fault=_overfitting))],
    "auc_drop": [
        (
            "drift",
            {"half_life_steps": 10, "baseline_half_life_steps": 200},
            lambda: auc_stream(200, drift_at=120, seed=8),
        )
    ],
    "class_imbalance": [("99:1", {}, lambda: Stream(steps=20, fault=_skewed))],
    "collapsed_lookup": [
        ("ids modulo 1", {}, lambda: lookup_views(lambda s: 230 if s < 100 else 1, steps=300))
    ],
    "stalled_training": [("an hour's pause", {}, lambda: Stream(steps=30, fault=_pause))],
    "optimizer_not_stepping": [("scaler never recovers", {}, _optimizer_stops_stepping)],
    "metric_against_loss": [
        ("accuracy falls", {}, lambda: Stream(steps=400, fault=_accuracy_falls)),
        ("r2 at chance", {}, lambda: Stream(steps=400, fault=_r2_at_chance)),
        ("auc below chance", {}, lambda: Stream(steps=400, fault=_auc_below_chance)),
    ],
    "accuracy_gap": [("leak", {}, leak_views)],
    "input_scale": [
        ("uint8 wrap", {}, lambda: Stream(inputs=True, fault=_inputs(300, mean=1.2, std=1.6))),
        (
            "255 twice",
            {},
            lambda: Stream(steps=50, inputs=True, fault=_inputs(0, min=0, max=0.0039, std=0.0009)),
        ),
        (
            "normalised twice",
            {},
            lambda: Stream(steps=50, inputs=True, fault=_inputs(0, min=-0.6, max=-0.5, mean=-0.58, std=0.02)),
        ),
        ("raw units", {"max_abs": 1e4}, lambda: Stream(steps=50, inputs=True, fault=_inputs(0, max=65025.0))),
    ],
}


NUMBER = r"(-?[\d.]+(?:e-?\d+)?)"


def quoted(x: float, message: str) -> bool:
    """Whether the message quotes x as the rules write numbers: 4.1e5, 0.031, 0.6664, 93.8%, x2, 2x."""
    forms = {
        fmt(x),
        f"{x:.3g}",
        f"{x:.4f}",
        f"{100 * x:.3g}%",
        fmt(100 * x) + "%",
        f"x{fmt(x)}",
        f"{fmt(x)}x",
    }
    return any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d])", message) for f in forms)


def close(quoted_text: str, x: float) -> bool:
    """Whether a number as the message prints it (3 significant digits) is x."""
    return math.isclose(float(quoted_text), x, rel_tol=6e-3, abs_tol=1e-12)


def contradictions(f: Finding) -> list[str]:
    """The sentence's claims about its evidence that the evidence contradicts."""
    assert f.value is not None
    wrong = []
    if m := re.search(
        rf"mean {NUMBER} over the last \d+ steps is still within {NUMBER}% of [^\d]*?{NUMBER}", f.message
    ):
        mean, pct, ref = (float(g) for g in m.groups())
        if not close(m.group(1), f.value) or abs(mean - ref) > pct / 100 * abs(ref) * 1.01:
            wrong.append(f"value {f.value!r} is not within {pct}% of {ref}")
    if m := re.search(rf"is {NUMBER}x its first value {NUMBER}", f.message):
        factor, first = float(m.group(1)), float(m.group(2))
        if not close(m.group(1), f.value / first):
            wrong.append(f"value {f.value!r} is not {factor}x {first}")
        if "rose" in f.message and not f.value > first:
            wrong.append(f"says the loss rose, but {f.value!r} is not above {first}")
    for m in re.finditer(
        rf"(above|below) the (?:threshold|bound) {NUMBER}|\((above|below) {NUMBER}[);]", f.message
    ):
        side, bound = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if (side == "above") != (f.value > float(bound)) and not close(bound, f.value):
            wrong.append(f"value {f.value!r} is not {side} {bound}")
    return wrong


CASES = [(rule, label, params, views) for rule, cases in SCENARIOS.items() for label, params, views in cases]


def test_every_default_rule_has_a_scenario() -> None:
    assert set(SCENARIOS) == {name for name, _ in DEFAULT_SET}


@pytest.mark.parametrize(("rule", "label", "params", "views"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_findings_message_quotes_its_evidence_and_says_what_it_shows(
    rule: str, label: str, params: dict[str, object], views: Callable[[], Iterable[StepView]]
) -> None:
    found = run(registry.get(rule)(params), views())
    assert found, f"{rule} did not fire on {label}"
    for f in found[:5]:
        if f.value is not None and math.isfinite(f.value):
            assert quoted(f.value, f.message), f"value {f.value!r} not in: {f.message}"
        if f.threshold is not None and math.isfinite(f.threshold):
            assert quoted(f.threshold, f.message), f"threshold {f.threshold!r} not in: {f.message}"
        if f.value is not None:
            assert contradictions(f) == [], f.message
