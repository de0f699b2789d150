"""The default rule set is one list (trainguard.api.default_rules) for the evaluator and the operator."""

from __future__ import annotations

from trainguard.api import default_rules
from trainguard.api.enums import Action
from trainguard.operator import status_decision
from trainguard.sidecar import config


def test_the_evaluator_runs_the_rules_the_operator_acts_on_with_the_same_actions() -> None:
    runs = {c.name: c.spec.action for c in config.compile_rules(config.default_specs())}
    assert runs == status_decision.rule_actions([]) == dict(default_rules.DEFAULT_SET)
    assert {name for name, a in runs.items() if a == Action.STOP} == {"exploding_tensor"}
    assert {a for name, a in runs.items() if a != Action.STOP} == {Action.NOTIFY}
