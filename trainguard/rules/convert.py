"""Turns a SageMaker Debugger rule configuration into TrainGuard rule entries.

Reads the two shapes such a configuration is kept in: the training-job API's
(`DebugRuleConfigurations` with `RuleConfigurationName` and string-valued `RuleParameters`, the
`DebugHookConfig` with its `CollectionConfigurations`, as `describe-training-job` prints them) and
the Python SDK's `Rule.sagemaker(...)` arguments written as YAML (`base_config`, `rule_parameters`,
`collections_to_save`, `actions`; the hook's `debugger_hook_config` beside them). `convert(doc)` returns
our entries, the capture settings the configuration implies (which are not rule settings here; several
save intervals become the smallest, with a note naming each), a note for each profiler rule skipped (the
SDK adds `ProfilerReport` to every job) and, for everything else it could not carry over, one line that
says why. Pure: the caller reads the file and prints. Used by `trainguard rules
convert` and by the rules-file loader, which accepts such a file as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from trainguard.api import sagemaker
from trainguard.api.enums import Action
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import ConfigError
from trainguard.rules import registry

_API_KEYS = ("DebugRuleConfigurations", "ProfilerRuleConfigurations", "DebugHookConfig")
_SDK_HOOK_KEY = "debugger_hook_config"
"""The SDK's `DebuggerHookConfig(hook_parameters=..., collection_configs=[CollectionConfig(name, parameters)])`
written as YAML next to `rules:`."""
_ENTRY_KEYS = ("base_config", "RuleConfigurationName", "RuleParameters")
_TRUE = {"true", "1", "yes", "on"}


@dataclass
class Conversion:
    """What `convert` made of a SageMaker Debugger configuration."""

    rules: list[RuleSpec] = field(default_factory=list)
    save_interval: int | None = None
    """The hook's save interval the configuration asked for (the smallest, if several: see `notes`)."""
    collections: list[str] | None = None
    """Our collections to capture; None: every collection (the hook's default)."""
    notes: list[str] = field(default_factory=list)
    """What was carried over differently, one sentence each."""
    dropped: list[str] = field(default_factory=list)
    """What could not be carried over (a rule, a parameter), one sentence each with the reason."""


def is_sagemaker_config(doc: Any) -> bool:
    """Whether a parsed YAML/JSON document is in one of SageMaker Debugger's shapes (not our `rules:`)."""
    if isinstance(doc, dict) and any(k in doc for k in _API_KEYS):
        return True
    entries = doc.get("rules") if isinstance(doc, dict) else doc
    return (
        isinstance(entries, list)
        and bool(entries)
        and all(isinstance(e, dict) and "type" not in e and any(k in e for k in _ENTRY_KEYS) for e in entries)
    )


def convert(doc: Any) -> Conversion:
    """Convert a SageMaker Debugger configuration; raise ConfigError when `doc` is none."""
    if not is_sagemaker_config(doc):
        raise ConfigError(
            "not a SageMaker Debugger rule configuration: expected DebugRuleConfigurations (the training job "
            "API's shape) or a list of rules with base_config and rule_parameters (the Python SDK's)"
        )
    out = Conversion()
    intervals: list[tuple[str, int]] = []
    wanted: list[str] = []
    if isinstance(doc, dict) and any(k in doc for k in _API_KEYS):
        entries = [("DebugRuleConfigurations", e) for e in doc.get("DebugRuleConfigurations") or []]
        for i, e in enumerate(doc.get("ProfilerRuleConfigurations") or []):
            _skip_profiler(f"ProfilerRuleConfigurations[{i}] ({_rule_name(e) or '?'})", out)
        hook = doc.get("DebugHookConfig") or {}
        _collect_intervals("the hook", hook.get("HookParameters"), intervals, out)
        for c in hook.get("CollectionConfigurations") or []:
            wanted.append(str(c.get("CollectionName", "")))
            _collect_intervals(wanted[-1], c.get("CollectionParameters"), intervals, out)
    else:
        listed = doc.get("rules") if isinstance(doc, dict) else doc
        entries = [("rules", e) for e in listed or []]
        hook = (doc.get(_SDK_HOOK_KEY) if isinstance(doc, dict) else None) or {}
        _collect_intervals("the hook", hook.get("hook_parameters"), intervals, out)
        for c in hook.get("collection_configs") or []:
            wanted.append(str(c.get("name", "")))
            _collect_intervals(wanted[-1], c.get("parameters"), intervals, out)
    taken: set[str] = set()
    for i, (where, entry) in enumerate(entries):
        spec = _convert_entry(f"{where}[{i}]", entry, out, taken)
        if spec is not None:
            out.rules.append(spec)
        if not isinstance(entry, dict):
            continue
        for c in entry.get("collections_to_save") or []:
            wanted.append(str(c.get("name", c.get("CollectionName", ""))))
            params = c.get("parameters", c.get("CollectionParameters"))
            _collect_intervals(wanted[-1], params, intervals, out)
    out.save_interval = min(n for _, n in intervals) if intervals else None
    if len({n for _, n in intervals}) > 1:
        asked = ", ".join(f"{who} every {n}" for who, n in intervals)
        out.notes.append(
            f"the configuration saves at different intervals ({asked} steps); TrainGuard saves every collection "
            f"at one interval, so the smallest, {out.save_interval}, is used: no collection is saved less often "
            "than asked, the others more often (a larger interval makes the hook cheaper and the rules see fewer "
            "steps)"
        )
    out.collections = _capture_collections(wanted, out)
    return out


def _skip_profiler(label: str, out: Conversion) -> None:
    out.notes.append(f"{label}: skipped: {sagemaker.UNSUPPORTED_RULES['ProfilerReport']}")


def _rule_name(entry: dict[str, Any]) -> str | None:
    params = entry.get("RuleParameters") or entry.get("rule_parameters") or {}
    name = params.get("rule_to_invoke") or entry.get("base_config") or entry.get("RuleConfigurationName")
    if not name:
        return None
    # `rule_configs.vanishing_gradient()` as written in Python
    return re.sub(r"^(sagemaker\.debugger\.)?rule_configs\.|\(\)$", "", str(name).strip())


def _convert_entry(where: str, entry: Any, out: Conversion, taken: set[str]) -> RuleSpec | None:
    if not isinstance(entry, dict):
        out.dropped.append(f"{where}: not a rule configuration (a mapping was expected, got {entry!r})")
        return None
    name = _rule_name(entry)
    label = f"{where} ({name})"
    if name is None:
        out.dropped.append(f"{where}: names no rule (base_config, RuleConfigurationName or rule_to_invoke)")
        return None
    if sagemaker.is_profiler_rule(name):
        _skip_profiler(label, out)
        return None
    unsupported = sagemaker.unsupported_rule(name)
    if unsupported is not None:
        out.dropped.append(f"{label}: not supported: {unsupported[1]}")
        return None
    try:
        cls = registry.get(name)
    except ConfigError as err:
        out.dropped.append(f"{label}: {err}")
        return None
    params = {
        str(k): v for k, v in (entry.get("RuleParameters") or entry.get("rule_parameters") or {}).items()
    }
    params.pop("rule_to_invoke", None)
    action = Action.NOTIFY
    if str(params.pop("stop_training_on_fire", "")).strip().lower() in _TRUE:
        action = Action.STOP
        out.notes.append(f"{label}: stop_training_on_fire became action: stop")
    if params.pop("training_job_name_prefix", None) is not None:
        out.notes.append(
            f"{label}: training_job_name_prefix dropped ({sagemaker.PARAMETER_HINTS['training_job_name_prefix']})"
        )
    actions = _actions(params.pop("action_json", None), entry.get("actions"))
    if "StopTraining" in actions:
        action = Action.STOP
        out.notes.append(f"{label}: the StopTraining action became action: stop")
    for kind in sorted(set(actions) & {"Email", "SMS"}):
        out.notes.append(
            f"{label}: the {kind} action has no direct counterpart: a DebugJob calls the webhooks of "
            "spec.actions.notify (Slack or any HTTP endpoint) for every rule that fires, and the chart's "
            "alerts can reach e-mail through Alertmanager"
        )
    collections = _rule_collections(params.pop("collection_names", None), label, out)
    tensor_regex = params.pop("tensor_regex", None)
    tensors = (
        [t.strip() for t in tensor_regex.split(",") if t.strip()]
        if isinstance(tensor_regex, str)
        else tensor_regex
    )
    params = _valid_params(cls, params, label, out)
    key = cls.name
    config_name = entry.get("RuleConfigurationName") or entry.get("name")
    if config_name and not _names_rule(str(config_name), cls.name):
        key = re.sub(r"[^a-z0-9_-]+", "-", str(config_name).lower()).strip("-_") or cls.name
    base, n = key, 2
    while key in taken:
        key, n = f"{base}-{n}", n + 1
    taken.add(key)
    return RuleSpec(
        type=cls.name,
        name=None if key == cls.name else key,
        action=action,
        params=params,
        collections=collections or None,
        tensors=tensors or None,
    )


def _names_rule(name: str, rule: str) -> bool:
    """Whether a configuration name is just the rule's own name (`StalledTrainingRule`, `vanishing_gradient`)."""
    try:
        return registry.get(name).name == rule
    except ConfigError:
        return False


def _actions(action_json: Any, actions: Any) -> list[str]:
    """SageMaker action names (StopTraining, Email, SMS) from `action_json` (the API's string) or the SDK's
    `actions` (a name, a list of names, or a mapping of name to settings)."""
    found: list[str] = []
    for source in (action_json, actions):
        if isinstance(source, str):
            try:
                source = json.loads(source)
            except json.JSONDecodeError:
                source = [source]
        if isinstance(source, dict):
            found.extend(str(k) for k in source)
        elif isinstance(source, list):
            found.extend(str(next(iter(a))) if isinstance(a, dict) else str(a) for a in source)
    return found


def _rule_collections(value: Any, label: str, out: Conversion) -> list[str]:
    names = [x.strip() for x in value.split(",")] if isinstance(value, str) else list(value or [])
    ours: list[str] = []
    for name in filter(None, names):
        coll = sagemaker.collection(name)
        if coll is None:
            out.dropped.append(
                f"{label}: collection {name!r} has no TrainGuard counterpart; the rule watches its default collections"
            )
        elif coll.value not in ours:
            ours.append(coll.value)
    return ours


def _valid_params(cls: type[Any], params: dict[str, Any], label: str, out: Conversion) -> dict[str, Any]:
    """The parameters our rule takes, parsed from SageMaker's strings; the others dropped with a reason."""
    fields = cls.Params.model_fields
    for key in [k for k in params if k not in fields]:
        out.dropped.append(
            f"{label}: parameter {key!r} has no counterpart in {cls.name}; parameters it takes: {', '.join(sorted(fields))}"
        )
        del params[key]
    while True:
        try:
            parsed = cls.Params.model_validate(params)
        except ValidationError as err:
            bad = {str(e["loc"][0]) for e in err.errors() if e.get("loc")}
            for e in err.errors():
                out.dropped.append(
                    f"{label}: parameter {'.'.join(map(str, e['loc']))}: {e['msg']} (got {e.get('input')!r})"
                )
            if not bad & set(params):
                return {}
            for key in bad:
                params.pop(key, None)
            continue
        dumped = parsed.model_dump(mode="json")
        return {k: dumped[k] for k in params}


def _collect_intervals(who: str, params: Any, intervals: list[tuple[str, int]], out: Conversion) -> None:
    """Add the save intervals in a hook's or collection's parameters: `save_interval` and smdebug's per-mode
    `train.save_interval`, `eval.save_interval`, ... (TrainGuard saves every mode at one interval)."""
    if not isinstance(params, dict):
        return
    for key, value in params.items():
        if key != "save_interval" and not str(key).endswith(".save_interval"):
            continue
        try:
            n = int(str(value))
        except ValueError:
            out.dropped.append(f"{who}: {key} {value!r} is not a whole number of steps")
            continue
        if n >= 1:
            mode = str(key).split(".", 1)[0] if "." in str(key) else ""
            intervals.append((f"{who} ({mode})" if mode else who, n))


def _capture_collections(names: list[str], out: Conversion) -> list[str] | None:
    if not names or any(n in ("all", "default") for n in names):
        return None
    ours: list[str] = []
    for name in names:
        coll = sagemaker.collection(name)
        if coll is None:
            out.dropped.append(f"collection {name!r} to save has no TrainGuard counterpart")
        elif coll.value not in ours:
            ours.append(coll.value)
    return ours or None
