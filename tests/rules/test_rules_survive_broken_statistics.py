"""Every rule takes non-finite, huge and missing statistics without raising or warning.

A diverging run produces inf, NaN and 1e300 in every column; pytest turns warnings into errors,
so a division or a square that overflows inside a rule fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.rules.streams import StepData, Stream, run
from trainguard.rules import registry
from trainguard.rules.step_view import COLUMNS, StepView

UNGATED = {"gate_on_loss": False}  # so gated rules compute on the broken steps too
PARAMS = {
    "threshold": {"statistic": "var", "value": 1.0},
    "vanishing_gradient": UNGATED,
    "exploding_gradient": UNGATED,
    "weight_update_ratio": UNGATED,
    "oscillating_loss": UNGATED,
}


def diverge(d: StepData) -> None:
    """From step 100 the run blows up: huge, infinite and NaN values by turns, in every column."""
    if d.step < 100:
        return
    value = (1e300, math.inf, math.nan, -math.inf)[d.step % 4]
    for cols in d.cols.values():
        cols[2:] = value
        cols[0] = 4096
    d.scalars["loss"] = value
    d.scalars["grad_norm"] = value
    if d.eval_scalars:
        d.eval_scalars["loss"] = value
    for key in d.units:
        d.units[key][:] = math.nan


@pytest.mark.parametrize("name", sorted(registry.BUILTINS))
def test_rule_takes_a_diverging_run_without_errors_or_warnings(name: str) -> None:
    rule = registry.get(name)(PARAMS.get(name, {}))
    run(rule, Stream(steps=160, fault=diverge))
    run(rule, Stream(steps=40, activation="tanh", fault=diverge))


@pytest.mark.parametrize("name", sorted(registry.BUILTINS))
def test_rule_takes_empty_and_scalar_only_views(name: str) -> None:
    rule = registry.get(name)(PARAMS.get(name, {}))
    views = [
        StepView(step=0),
        StepView(step=1, scalars={"loss": 1.0}),
        StepView(step=2, eval_scalars={"val_loss": 2.0}),
        StepView(step=3, names=(), stats=np.zeros((0, len(COLUMNS)))),
        StepView(step=4, units={("active", "act/x"): np.zeros(0)}),
    ]
    assert run(rule, views) == []
