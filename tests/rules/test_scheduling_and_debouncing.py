"""`Rule.update` applies start_step, every, k-of-n debouncing and `applies` around `check`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainguard.rules.all_zero import AllZero
from trainguard.rules.base import fmt
from trainguard.rules.dead_relu import DeadRelu
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta
from trainguard.store.run_format import STAT_COLUMNS

META = (TensorMeta("w", "weights", trainable=True, order=0, shape=(4, 4)),)


def view(step: int, zero: bool) -> StepView:
    row = np.zeros((1, len(COLUMNS)))
    row[0, COL["count"]] = 16
    row[0, COL["zero"]] = 16 if zero else 3
    return StepView(step=step, names=("w",), meta=META, stats=row)


def steps_fired(rule: AllZero, pattern: str) -> list[int]:
    """Feed views whose condition holds where `pattern` has an 'x'; return the steps reported."""
    return [s for s, c in enumerate(pattern) if rule.update(view(s, c == "x"))]


def test_view_columns_are_the_run_format_columns() -> None:
    assert COLUMNS == STAT_COLUMNS


def test_without_debouncing_every_hit_is_reported() -> None:
    assert steps_fired(AllZero(), "..x.xx.") == [2, 4, 5]


def test_k_of_n_reports_only_once_the_condition_held_k_times_in_the_last_n() -> None:
    rule = AllZero({"trigger_k": 2, "trigger_n": 3})
    assert steps_fired(rule, "x..x.x.xx..x") == [5, 7, 8]


def test_start_step_skips_early_views_and_every_thins_the_rest() -> None:
    assert steps_fired(AllZero({"start_step": 3}), "xxxxx") == [3, 4]
    assert steps_fired(AllZero({"every": 2}), "xxxxx") == [0, 2, 4]


def test_views_a_rule_does_not_apply_to_do_not_break_its_k_of_n_run() -> None:
    rule = DeadRelu({"trigger_k": 3, "trigger_n": 3})
    dead = {("active", "act/relu0"): np.zeros(8)}
    fired = []
    for step in range(30):
        units = dead if step % 10 == 0 else {}
        v = StepView(step=step, names=("w",), meta=META, stats=np.zeros((1, len(COLUMNS))), units=units)
        fired += [f.step for f in rule.update(v)]
    assert fired == [20]


def test_a_severity_override_reaches_the_finding() -> None:
    found = AllZero({"severity": "critical"}).update(view(0, True))
    assert found[0].severity.value == "critical" and found[0].to_dict()["severity"] == "critical"


@pytest.mark.parametrize(
    ("x", "text"),
    [(4.1e5, "4.1e5"), (1e-7, "1e-7"), (0.031, "0.031"), (12.0, "12"), (1234.5, "1234"), (0.5, "0.5"),
     (0.00099996, "1e-3"), (9999.7, "10000"), (99999.9, "1e5"), (-2.5e-9, "-2.5e-9"), (0.0, "0"),
     (math.nan, "nan"), (math.inf, "inf"), (None, "n/a")],
)  # fmt: skip
def test_numbers_in_findings_read_short(x: float | None, text: str) -> None:
    assert fmt(x) == text
