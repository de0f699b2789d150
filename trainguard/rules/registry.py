"""The built-in rules by name, building configured rules, and the default rule set.

The evaluator calls `build(spec)` for every entry of a rules file (custom `python:` classes are
imported by the evaluator and handed in as `rule_class`); `default_rules()` is what runs without a
file. Every configuration error is a `ConfigError` that names the entry, the parameter and what was
expected, so the CLI prints it as one line.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import ValidationError

from trainguard.api import default_rules as default_rule_set
from trainguard.api.enums import Collection
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import ConfigError
from trainguard.rules import (
    all_zero,
    auc_drop,
    auc_resolution,
    class_imbalance,
    dead_relu,
    diverging_loss,
    exploding_gradient,
    exploding_tensor,
    loss_not_decreasing,
    loss_spike,
    oscillating_loss,
    overfit,
    overtraining,
    poor_weight_initialization,
    saturated_activation,
    stalled_training,
    tensor_variance,
    threshold,
    unchanged_tensor,
    vanishing_gradient,
    weight_update_ratio,
)
from trainguard.rules.base import Rule

BUILTINS: dict[str, type[Rule]] = {
    cls.name: cls
    for cls in (
        exploding_tensor.ExplodingTensor,
        vanishing_gradient.VanishingGradient,
        exploding_gradient.ExplodingGradient,
        dead_relu.DeadRelu,
        saturated_activation.SaturatedActivation,
        poor_weight_initialization.PoorWeightInitialization,
        all_zero.AllZero,
        unchanged_tensor.UnchangedTensor,
        weight_update_ratio.WeightUpdateRatio,
        tensor_variance.TensorVariance,
        loss_not_decreasing.LossNotDecreasing,
        diverging_loss.DivergingLoss,
        overfit.Overfit,
        overtraining.Overtraining,
        loss_spike.LossSpike,
        oscillating_loss.OscillatingLoss,
        class_imbalance.ClassImbalance,
        stalled_training.StalledTraining,
        threshold.Threshold,
        auc_drop.AucDrop,
        auc_resolution.AucResolution,
    )
}
"""Every built-in rule class by its name (SageMaker Debugger's snake_case names where one exists)."""

# SageMaker Debugger's CamelCase rule names, so `type: VanishingGradient` from a ported config works.
SAGEMAKER_ALIASES: dict[str, str] = {
    "".join(part.title() for part in name.split("_")): name for name in BUILTINS
} | {"StalledTrainingRule": "stalled_training"}

DEFAULT_SET = default_rule_set.DEFAULT_SET
"""The rules that run without a rules file, and their actions. The list lives in
`trainguard.api.default_rules`, so the operator (which never imports this package) resolves the
same actions when a DebugJob's `spec.rules` is empty."""


def get(name: str) -> type[Rule]:
    """Return the built-in rule class called `name` (or its SageMaker CamelCase name)."""
    cls = BUILTINS.get(SAGEMAKER_ALIASES.get(name, name))
    if cls is not None:
        return cls
    close = difflib.get_close_matches(name, [*BUILTINS, *SAGEMAKER_ALIASES], n=1, cutoff=0.5)
    maybe = f"; did you mean {SAGEMAKER_ALIASES.get(close[0], close[0])!r}?" if close else "."
    raise ConfigError(
        f"unknown rule type {name!r}{maybe} Built-in rules: {', '.join(sorted(BUILTINS))}; "
        "custom rules are written python:module:Class"
    )


def default_rules() -> list[RuleSpec]:
    """Return the default rule set: `exploding_tensor` stops the job, the others notify."""
    return default_rule_set.default_specs()


def _describe(err: dict[str, Any]) -> str:
    loc = ".".join(str(x) for x in err.get("loc", ())) or "params"
    found = err.get("input")
    shown = "" if isinstance(found, dict) else f" (got {found!r})"
    return f"parameter {loc}: {err.get('msg', 'invalid')}{shown}"


def build(spec: RuleSpec, *, rule_class: type[Rule] | None = None, index: int | None = None) -> Rule:
    """Validate one configured rule and return a fresh instance of it.

    `rule_class` is the class when the caller resolved it already (a custom `python:` rule);
    otherwise `spec.type` is looked up among the built-ins. `index` (the entry's position in the
    rules list) only makes error messages easier to find.
    """
    entry = f"rules[{index}] ({spec.key!r})" if index is not None else f"rule {spec.key!r}"
    try:
        cls = rule_class or get(spec.type)
    except ConfigError as err:
        raise ConfigError(f"{entry}: {err}") from err
    if spec.collections:
        known = {c.value for c in Collection}
        unknown = [c for c in spec.collections if c not in known]
        if unknown:
            raise ConfigError(
                f"{entry}: unknown collection(s) {', '.join(map(repr, unknown))}; expected some of {', '.join(sorted(known))}"
            )
    for pattern in spec.tensors or ():
        try:
            re.compile(pattern)
        except re.error as err:
            raise ConfigError(
                f"{entry}: tensors pattern {pattern!r} is not a valid regular expression ({err})"
            ) from err
    try:
        params = cls.Params.model_validate(spec.params)
    except ValidationError as err:
        problems = "; ".join(_describe(e) for e in err.errors())  # type: ignore[arg-type]
        fields = ", ".join(sorted(cls.Params.model_fields))
        raise ConfigError(
            f"{entry} of type {cls.name or spec.type}: {problems}. Parameters it takes: {fields}"
        ) from err
    return cls(params, instance_name=spec.key, collections=spec.collections, tensors=spec.tensors)
