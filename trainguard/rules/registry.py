"""The built-in rules by name, building configured rules, and the default rule set.

`BUILTINS` is found, not listed: every concrete `Rule` subclass with a `name` in a module of this
package is a built-in, so adding a rule is writing its module; a rule that sets `default_action`
joins the default set (`declared_default_set`, copied for the operator into
`trainguard.api._default_set` by `dev/gen_docs.py`). The evaluator calls `build(spec)` for every
entry of a rules file (custom `python:` classes are imported by the evaluator and handed in as
`rule_class`); `default_rules()` is what runs without a file. Every configuration error is a
`ConfigError` that names the entry, the parameter and what was expected, so the CLI prints it as
one line.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
import re
from typing import Any

from pydantic import ValidationError

import trainguard.rules
from trainguard.api import default_rules as default_rule_set
from trainguard.api import sagemaker
from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import ConfigError
from trainguard.rules.base import Params, Rule


def _discover() -> dict[str, type[Rule]]:
    """Every concrete `Rule` subclass with a `name`, defined in a module of this package, by its name.

    Adding a rule is one edit: its module. A name defined twice is a programming error, raised here."""
    found: dict[str, type[Rule]] = {}
    for info in sorted(pkgutil.iter_modules(trainguard.rules.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{trainguard.rules.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Rule)
                and obj.__module__ == module.__name__
                and obj.name
                and not inspect.isabstract(obj)
            ):
                if obj.name in found and found[obj.name] is not obj:
                    raise RuntimeError(
                        f"two built-in rules are named {obj.name!r}: {found[obj.name]} and {obj}"
                    )
                found[obj.name] = obj
    return found


BUILTINS: dict[str, type[Rule]] = _discover()
"""Every built-in rule class by its name (SageMaker Debugger's snake_case names where one exists)."""

# SageMaker Debugger's CamelCase rule names, so `type: VanishingGradient` from a ported config works.
SAGEMAKER_ALIASES: dict[str, str] = {
    "".join(part.title() for part in name.split("_")): name for name in BUILTINS
} | sagemaker.RULES

DEFAULT_SET = default_rule_set.DEFAULT_SET
"""The rules that run without a rules file, and their actions: the copy of `declared_default_set()` in
`trainguard.api`, so the evaluator runs exactly the set for which the operator (which never imports
this package) resolves actions when a DebugJob's `spec.rules` is empty."""


def declared_default_set() -> tuple[tuple[str, Action], ...]:
    """(name, action) of every built-in whose class sets `default_action`: by category in `RuleCategory`'s
    order (as the docs' rules reference lists them), then by name. `dev/gen_docs.py` writes it into
    `trainguard/api/_default_set.py`; tests/rules/test_registry.py fails while the two differ."""
    categories = list(RuleCategory)
    chosen = sorted(
        (cls for cls in BUILTINS.values() if cls.default_action is not None),
        key=lambda cls: (categories.index(cls.category), cls.name),
    )
    return tuple((cls.name, cls.default_action) for cls in chosen if cls.default_action is not None)


def get(name: str) -> type[Rule]:
    """Return the built-in rule class called `name` (or its SageMaker CamelCase name)."""
    cls = BUILTINS.get(SAGEMAKER_ALIASES.get(name, name))
    if cls is not None:
        return cls
    unsupported = sagemaker.unsupported_rule(name)
    if unsupported is not None:
        raise ConfigError(
            f"{unsupported[0]} is a SageMaker Debugger rule that TrainGuard does not support: {unsupported[1]}"
        )
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
    for key in spec.params:
        if key in sagemaker.PARAMETER_HINTS and key not in cls.Params.model_fields:
            raise ConfigError(
                f"{entry}: parameter {key!r} is SageMaker Debugger's: {sagemaker.PARAMETER_HINTS[key]}"
            )
    try:
        params = cls.Params.model_validate(spec.params)
    except ValidationError as err:
        problems = "; ".join(_describe(e) for e in err.errors())  # type: ignore[arg-type]
        fields = ", ".join(sorted(cls.Params.model_fields))
        raise ConfigError(
            f"{entry} of type {cls.name or spec.type}: {problems}. Parameters it takes: {fields}"
        ) from err
    return cls(params, instance_name=spec.key, collections=spec.collections, tensors=spec.tensors)


def catalogue() -> list[dict[str, Any]]:
    """Every built-in rule as plain data: name, category, summary, severity, default action, SageMaker's
    name, and its own parameters with their defaults and descriptions (the ones every rule takes,
    such as `start_step`, are left out unless the rule changes their default).

    `trainguard rules list` prints it and the docs' rules reference is generated from it."""
    sagemaker_names = {ours: theirs for theirs, ours in sagemaker.RULES.items()}
    common = Params.model_fields
    out = []
    for name, cls in BUILTINS.items():
        params = []
        for pname, field in cls.Params.model_fields.items():
            required = field.is_required()
            default = None if required else field.get_default(call_default_factory=True)
            if pname in common and default == common[pname].get_default(call_default_factory=True):
                continue
            params.append(
                {
                    "name": pname,
                    "default": default,
                    "required": required,
                    "description": field.description or "",
                }
            )
        action = cls.default_action
        out.append(
            {
                "name": name,
                "category": cls.category.value,
                "summary": cls.summary,
                "severity": cls.default_severity.value,
                "default_action": action.value if action else None,
                "sagemaker_name": sagemaker_names.get(name),
                "hint": cls.hint,
                "params": params,
            }
        )
    return out
