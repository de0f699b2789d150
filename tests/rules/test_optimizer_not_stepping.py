"""`optimizer_not_stepping` over the hook's no-step markers: a spell of training without optimizer steps is
reported once it reaches `min_iterations` in a row, with its count, share and start; the short spells of
healthy dynamic loss scaling (a few skipped steps after an overflow, then recovery) are not."""

from __future__ import annotations

from trainguard.api.enums import Severity
from trainguard.rules.base import is_heartbeat
from trainguard.rules.optimizer_not_stepping import OptimizerNotStepping
from trainguard.rules.step_view import StepView


def _spell(last_step: int, counts: range) -> list[StepView]:
    """The markers of one spell as the hook writes them: at the last counted step, every 10 iterations."""
    return [StepView(step=last_step, no_step=(last_step + 1, n)) for n in counts]


def test_a_scaler_that_never_recovers_is_reported_once_with_count_share_and_start() -> None:
    rule = OptimizerNotStepping()
    found = [f for v in [StepView(step=149, scalars={"loss": 0.5}), *_spell(149, range(2, 300, 10))]
             for f in rule.update(v)]  # fmt: skip
    assert len(found) == 1, found
    f = found[0]
    assert (f.rule, f.severity, f.step, f.value, f.threshold) == ("optimizer_not_stepping", Severity.WARNING,
                                                                  149, 52.0, 50.0)  # fmt: skip
    assert "52 training iterations in a row went without an optimizer step since step 150" in f.message
    assert "26% of the 202 training iterations so far at step 149 on rank 0" in f.message, f.message


def test_healthy_dynamic_loss_scaling_with_short_skipped_spells_is_quiet() -> None:
    rule = OptimizerNotStepping()
    views: list[StepView] = [*_spell(0, range(2, 18, 10))]  # the scale comes down from 2^16 at the start
    for step in range(200, 20_000, 2000):  # then an overflow after each growth: one or two skipped steps
        views += [StepView(step=step, scalars={"loss": 0.3}), *_spell(step, range(2, 3))]
    assert [f for v in views for f in rule.update(v)] == []


def test_every_spell_counts_in_the_share_and_each_long_one_is_reported() -> None:
    rule = OptimizerNotStepping({"min_iterations": 20})
    views = [*_spell(99, range(2, 33, 10)), *_spell(199, range(2, 13, 10)), *_spell(299, range(2, 23, 10))]
    found = [f for v in views for f in rule.update(v)]
    assert [(f.step, f.value) for f in found] == [(99, 22.0), (299, 22.0)]
    # the first spell's 32, the second's 12 and the third's 22 of 300 counted steps and 66 skipped
    assert "18% of the 366 training iterations" in found[1].message, found[1].message


def test_a_view_with_only_the_marker_reaches_no_rule_but_those_that_take_heartbeats() -> None:
    assert is_heartbeat(StepView(step=5, no_step=(6, 40)))
    assert OptimizerNotStepping.wants_heartbeat
