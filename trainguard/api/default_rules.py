"""The default rule set: which rules run, and with which action, when no rules are configured.

One list for both sides. The evaluator (`trainguard.rules.registry.default_rules`, through
`trainguard.sidecar.config.default_specs`) runs it when a rules file, a sidecar config or a
DebugJob's `spec.rules` is empty; the operator, which never imports the rules library, resolves
the action of each rule from it in that case (`trainguard.operator.status_decision.rule_actions`).
So the rule whose sidecar writes the stop file is the rule for which the operator suspends the Job.

Each rule declares its own membership (`Rule.default_action`); `DEFAULT_SET` is the copy that
`dev/gen_docs.py` writes into `_default_set.py`, in evaluation order. `exploding_tensor` stops the
job, the others notify; the watchpoints (`all_zero`, `tensor_variance`, `threshold`) need to be told
what to watch and `auc_resolution` is a check worth asking for, so they are not in it. Severities
stay with the rule classes (`Rule.default_severity`): the operator never needs one before a
sidecar reports it.
"""

from __future__ import annotations

from trainguard.api._default_set import DEFAULT_SET
from trainguard.api.rules_config import RuleSpec

__all__ = ["DEFAULT_SET", "default_specs", "effective_specs"]


def default_specs() -> list[RuleSpec]:
    """Return the default set as rule entries (each named after its type, default parameters)."""
    return [RuleSpec(type=name, action=action) for name, action in DEFAULT_SET]


def effective_specs(rules: list[RuleSpec]) -> list[RuleSpec]:
    """Return the rules that actually run for a configuration: `rules`, or the default set when empty."""
    return list(rules) if rules else default_specs()
