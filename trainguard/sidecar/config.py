"""Reads the sidecar config and rules files, and turns rule entries into rule instances.

`load_sidecar_config(path)` and `load_rules_file(path)` parse YAML into the `api` models;
`compile_rules(specs)` checks every entry once (unknown rule, bad parameter, duplicate name,
import error) and returns factories the evaluator calls once per followed rank. Every problem
is a `ConfigError` that names the entry. Built-in rules come from `trainguard.rules.registry`,
custom ones from `custom.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from trainguard.api import default_rules, rules_config
from trainguard.api.enums import RuleCategory, Severity
from trainguard.api.rules_config import RulesFile, RuleSpec
from trainguard.api.sidecar_config import SidecarConfig
from trainguard.errors import ConfigError, TrainGuardError
from trainguard.rules.base import Rule
from trainguard.sidecar import custom

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompiledRule:
    """One validated rule entry: its spec and a way to build a fresh instance (one per rank)."""

    spec: RuleSpec
    make: Callable[[], Rule]
    severity: Severity
    """The rule's configured (or default) severity, for statuses before any finding."""
    category: RuleCategory = RuleCategory.WATCHPOINT
    """The rule class's category (what it watches), for the findings document (`sidecar/findings.py`)."""

    @property
    def name(self) -> str:
        return self.spec.key


def _read_yaml(path: str | Path, *, what: str) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(f"cannot read the {what} {path}: {err.strerror or err}") from err
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"the {what} {path} is not valid YAML: {err}") from err
    except RecursionError as err:
        raise ConfigError(f"the {what} {path} nests too deeply to parse") from err


def _validate(model: type[BaseModel], doc: Any, *, what: str) -> Any:
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<top level>"
        # pydantic prefixes a validator's own message with "Value error, "; ours read as sentences already.
        raise ConfigError(f"{what}: {where}: {first['msg'].removeprefix('Value error, ')}") from err


def load_sidecar_config(path: str | Path) -> SidecarConfig:
    """Read the sidecar's YAML config (`/etc/trainguard/sidecar.yaml`)."""
    doc = _read_yaml(path, what="sidecar config")
    config: SidecarConfig = _validate(SidecarConfig, doc or {}, what=f"sidecar config {path}")
    return config


def load_rules_file(path: str | Path) -> list[RuleSpec]:
    """Read a rules file (`rules: [...]`, or a bare list of entries) into the rules to run: the default set
    extended by the file's entries, or the entries alone when it says `defaults: false`.

    A SageMaker Debugger rule configuration (JSON or YAML, see `trainguard.rules.convert`) is read as
    it is (the whole set, as SageMaker ran it) when every rule in it converts; otherwise the first rule
    that does not is the error."""
    doc = _read_yaml(path, what="rules file")
    from trainguard.rules import convert  # imports every built-in rule: only for such a file

    if convert.is_sagemaker_config(doc):
        result = convert.convert(doc)
        if result.dropped:
            raise ConfigError(
                f"rules file {path} (a SageMaker Debugger configuration): {result.dropped[0]}; "
                "`trainguard rules convert` shows the whole conversion"
            )
        for note in result.notes:
            log.info("rules file %s: %s", path, note)
        return result.rules
    if isinstance(doc, list):
        doc = {"rules": doc}
    config: RulesFile = _validate(RulesFile, doc or {}, what=f"rules file {path}")
    if not config.defaults:
        return list(config.rules)
    compile_rules(config.rules)  # a bad entry is named by its place in the file, not in the extended set
    return default_rules.extend_defaults(list(config.rules))


def _entry(i: int, spec: RuleSpec) -> str:
    return f"rules[{i}] (name {spec.key!r}, type {spec.type!r})"


def compile_rules(specs: Sequence[RuleSpec]) -> list[CompiledRule]:
    """Validate rule entries and return their factories; raise ConfigError naming the first bad entry."""
    out: list[CompiledRule] = []
    duplicate = rules_config.first_duplicate(specs)
    for i, spec in enumerate(specs):
        entry = _entry(i, spec)
        if duplicate is not None and i == duplicate[0]:
            raise ConfigError(
                f"{entry}: duplicate rule name {spec.key!r} (also rules[{duplicate[1]}]); give each entry a unique `name`"
            )
        make = _factory(spec, index=i, entry=entry)
        try:
            probe = make()  # build once now, so a bad parameter fails at startup and not at the first step
        except ConfigError:
            raise
        except (TrainGuardError, ValidationError, ValueError, TypeError, KeyError) as err:
            raise ConfigError(f"{entry}: {_explain(err)}") from err
        out.append(CompiledRule(spec=spec, make=make, severity=probe.severity, category=probe.category))
    return out


def _factory(spec: RuleSpec, *, index: int, entry: str) -> Callable[[], Rule]:
    from trainguard.rules import registry  # imports every built-in rule: only when rules are compiled

    if spec.type.startswith(custom.PREFIX):
        cls = custom.factory(spec, entry=entry)
        if issubclass(cls, Rule):
            # The registry validates params, collections and tensor patterns the same way as for built-ins.
            return lambda: registry.build(spec, rule_class=cls, index=index)
        return lambda: custom.SmdebugRuleAdapter(cls, spec)
    try:
        registry.get(spec.type)
    except TrainGuardError as err:
        raise ConfigError(f"{entry}: {err}") from err
    return lambda: registry.build(spec, index=index)


def _explain(err: Exception) -> str:
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        return f"parameter {where!r}: {first['msg']}"
    return f"{type(err).__name__}: {err}" if not isinstance(err, TrainGuardError) else str(err)


def default_specs() -> list[RuleSpec]:
    """The default rule set: `exploding_tensor` stops, the others notify (see the rules library)."""
    from trainguard.rules import registry

    return list(registry.default_rules())
