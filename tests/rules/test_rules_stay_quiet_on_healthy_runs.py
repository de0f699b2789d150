"""Every built-in rule, with its default parameters, stays quiet on healthy synthetic runs.

The streams are noisy on purpose: a warmup bump in the loss, sparse-but-alive ReLU layers, tanh
layers with a few saturated units, lr warmup and cosine decay, per-step gradient noise.
"""

from __future__ import annotations

import pytest

from tests.rules.streams import Stream, run
from trainguard.rules import registry
from trainguard.rules.step_view import StepView

CONFIGURABLE = {"threshold"}  # needs a value; covered by its own tests


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_builtin_rule_stays_quiet_on_a_healthy_run(seed: int, activation: str) -> None:
    views = Stream(seed=seed, activation=activation, steps=800, inputs=seed % 2 == 1).views()
    noisy = {name: run(cls(), views) for name, cls in registry.BUILTINS.items() if name not in CONFIGURABLE}
    assert {name: [f.message for f in found[:2]] for name, found in noisy.items() if found} == {}


def test_the_default_rule_set_stays_quiet_with_heartbeats_between_steps() -> None:
    rules = [registry.build(spec) for spec in registry.default_rules()]
    for view in Stream(seed=7).views():
        for rule in rules:
            assert rule.update(view) == [], rule.name
            # the evaluator sends heartbeats while it waits; a short wait is no stall
            assert rule.update(StepView(step=view.step, rank=0, wall_time=view.wall_time + 30.0)) == []
