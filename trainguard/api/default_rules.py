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
from trainguard.api.enums import Action
from trainguard.api.rules_config import RuleSpec

__all__ = [
    "DEFAULT_SET",
    "NAN_STOP",
    "default_specs",
    "effective_specs",
    "extend_defaults",
    "keeps_nan_stop",
    "with_actions",
]

NAN_STOP = "exploding_tensor"
"""The rule of the default set's one stop: NaN or Inf in a tensor or the loss."""


def default_specs() -> list[RuleSpec]:
    """Return the default set as rule entries (each named after its type, default parameters)."""
    return [RuleSpec(type=name, action=action) for name, action in DEFAULT_SET]


def effective_specs(rules: list[RuleSpec]) -> list[RuleSpec]:
    """Return the rules that actually run for a configuration: `rules`, or the default set when empty."""
    return list(rules) if rules else default_specs()


def extend_defaults(entries: list[RuleSpec]) -> list[RuleSpec]:
    """Return the default set extended by `entries`: an entry named like a default rule takes its place (in
    the default order), the others follow in their own order."""
    by_key = {r.key: r for r in entries}
    defaults = default_specs()
    names = {d.key for d in defaults}
    return [by_key.get(d.key, d) for d in defaults] + [r for r in entries if r.key not in names]


def with_actions(specs: list[RuleSpec], *, stop: list[str], notify: list[str]) -> list[RuleSpec]:
    """Return `specs` with the named rules' action set to stop or notify (`trainguard run --stop/--notify`);
    a name that no entry has is added as a rule of that type with its default parameters."""
    wanted = {**{n: Action.NOTIFY for n in notify}, **{n: Action.STOP for n in stop}}
    out = [r.model_copy(update={"action": wanted[r.key]}) if r.key in wanted else r for r in specs]
    present = {r.key for r in specs}
    out += [RuleSpec(type=n, action=a) for n, a in wanted.items() if n not in present]
    return out


def keeps_nan_stop(specs: list[RuleSpec]) -> bool:
    """Whether the rules stop a run on NaN/Inf: an `exploding_tensor` entry with action stop."""
    return any(r.type == NAN_STOP and r.action == Action.STOP for r in specs)
