"""The default rule set: which rules run, and with which action, when no rules are configured.

One list for both sides. The evaluator (`trainguard.rules.registry.default_rules`, through
`trainguard.sidecar.config.default_specs`) runs it when a rules file, a sidecar config or a
DebugJob's `spec.rules` is empty; the operator, which never imports the rules library, resolves
the action of each rule from it in that case (`trainguard.operator.status.rule_actions`). So the
rule whose sidecar writes the stop file is the rule for which the operator suspends the Job.

Severities stay with the rule classes (`Rule.default_severity`): the operator never needs one
before a sidecar reports it, and a second copy here could drift.
"""

from __future__ import annotations

from trainguard.api.enums import Action
from trainguard.api.rules_config import RuleSpec

DEFAULT_SET: tuple[tuple[str, Action], ...] = (
    ("exploding_tensor", Action.STOP),
    ("vanishing_gradient", Action.NOTIFY),
    ("exploding_gradient", Action.NOTIFY),
    ("dead_relu", Action.NOTIFY),
    ("saturated_activation", Action.NOTIFY),
    ("poor_weight_initialization", Action.NOTIFY),
    ("unchanged_tensor", Action.NOTIFY),
    ("weight_update_ratio", Action.NOTIFY),
    ("loss_not_decreasing", Action.NOTIFY),
    ("diverging_loss", Action.NOTIFY),
    ("overfit", Action.NOTIFY),
    ("overtraining", Action.NOTIFY),
    ("loss_spike", Action.NOTIFY),
    ("oscillating_loss", Action.NOTIFY),
    ("class_imbalance", Action.NOTIFY),
    ("stalled_training", Action.NOTIFY),
    ("auc_drop", Action.NOTIFY),
)
"""(built-in rule name, action) in evaluation order: `exploding_tensor` stops the job, the others
notify. `all_zero`, `tensor_variance` and `threshold` are watchpoints that need to be told what to
watch, so they are not in it; nor is `auc_resolution`, a check of the bucket resolution that is
worth asking for. `auc_drop` is a no-op without prediction streams and stays quiet on healthy ones
(tests/rules/test_auc_drop_stays_quiet_on_healthy_predictions.py)."""


def default_specs() -> list[RuleSpec]:
    """Return the default set as rule entries (each named after its type, default parameters)."""
    return [RuleSpec(type=name, action=action) for name, action in DEFAULT_SET]


def effective_specs(rules: list[RuleSpec]) -> list[RuleSpec]:
    """Return the rules that actually run for a configuration: `rules`, or the default set when empty."""
    return list(rules) if rules else default_specs()
