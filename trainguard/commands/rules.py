"""`trainguard rules list` shows the built-in rules; `trainguard rules convert FILE` ports a SageMaker
Debugger rule configuration.

`list [NAME] [--json]`: every built-in rule with its category, default action and severity, SageMaker
Debugger's name for it, and its parameters with their defaults (`NAME`: one rule, with each
parameter's description). `convert FILE [-o OUT]`: reads the training job API's
`DebugRuleConfigurations` (JSON or YAML, as `describe-training-job` prints it) or the Python SDK's
`Rule.sagemaker` arguments written as YAML, and prints a TrainGuard rules file; what changed on the
way (profiler rules skipped, several save intervals made one), and what could not be carried over with
the reason, go to stderr. A Python file is not read: the answer says how to get the configuration as
data. Exit status of `convert`: 0 when every rule and parameter was carried over (notes aside), 1 when
something was left out, 2 when the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HELP = "list the built-in rules, or convert a SageMaker Debugger rule configuration"

EXIT_COMPLETE = 0
EXIT_PARTIAL = 1
PYTHON_CALL = "Rule.sagemaker("
PYTHON_ANSWER = (
    "{file} is Python, and `trainguard rules convert` reads data, never runs code. Give it either the training "
    "job's configuration as JSON (`aws sagemaker describe-training-job --training-job-name NAME > job.json`, "
    "then `trainguard rules convert job.json`), or the arguments of each `Rule.sagemaker(...)` written as YAML, "
    'e.g. `rules: [{{base_config: vanishing_gradient, rule_parameters: {{threshold: "1e-7"}}}}]` '
    "(docs/migrating-from-sagemaker.md shows a whole file)"
)


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rules_command", metavar="{list,convert}", required=True)
    ls = sub.add_parser(
        "list",
        help="the built-in rules: category, default action, severity, parameters and their defaults",
        description="Print every built-in rule: its category, its action in the default set (off: not in it), "
        "severity, SageMaker Debugger's name, and its parameters with their defaults; NAME (ours or "
        "SageMaker's) describes one rule's parameters.",
    )
    ls.add_argument("name", nargs="?", metavar="NAME", help="one rule, with each parameter's description")
    ls.add_argument("--json", action="store_true", help="print JSON (every field, every rule)")
    conv = sub.add_parser(
        "convert",
        help="print a TrainGuard rules file made from a SageMaker Debugger rule configuration (JSON or YAML)",
        description="Print a TrainGuard rules file made from a SageMaker Debugger rule configuration: the "
        "training job's JSON (`describe-training-job`) or `Rule.sagemaker(...)` arguments written as YAML (not a "
        ".py file). Notes (profiler rules skipped, save intervals made one) and what was not converted go to "
        "stderr. Exit status: 0 all converted, 1 something left out, 2 the file cannot be read.",
    )
    conv.add_argument(
        "file", type=Path, metavar="FILE", help="the SageMaker Debugger configuration (JSON or YAML)"
    )
    conv.add_argument(
        "-o", "--output", type=Path, metavar="OUT", help="write the rules file here, not stdout"
    )


def main(args: argparse.Namespace) -> int:
    if args.rules_command == "list":
        return _list(args)
    return _convert(args)


def value_text(value: Any) -> str:
    """A parameter value as the rules file would hold it: 1e-07, true, none, [a, b]."""
    from trainguard.rules.base import fmt

    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return fmt(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return str(getattr(value, "value", value))


def _list(args: argparse.Namespace) -> int:
    from trainguard.errors import ConfigError
    from trainguard.rules import registry

    rules = registry.catalogue()
    if args.name:
        name = registry.get(args.name).name  # SageMaker's names work too; unknown: a ConfigError
        rules = [r for r in rules if r["name"] == name]
        if not rules:
            raise ConfigError(f"no built-in rule {args.name!r}")
    if args.json:
        json.dump(rules, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return 0
    width = max(len(r["name"]) for r in rules)
    for r in rules:
        action = r["default_action"] or "off"
        also = f"  (SageMaker: {r['sagemaker_name']})" if r["sagemaker_name"] else ""
        print(f"{r['name']:<{width}}  {r['category']:<20} default {action:<6} {r['severity']:<8}{also}")
        print(f"  {r['summary']}")
        if args.name:
            for p in r["params"]:
                required = " (required)" if p["required"] else ""
                print(f"  {p['name']} = {value_text(p['default'])}{required}: {p['description']}")
            print(f"  what to try: {r['hint']}" if r["hint"] else "", end="\n" if r["hint"] else "")
        else:
            params = ", ".join(
                f"{p['name']}={'(required)' if p['required'] else value_text(p['default'])}"
                for p in r["params"]
            )
            print(f"  params: {params or 'none'}")
    if not args.name:
        print(
            "\n'default' is the action in the set that runs without a rules file (off: not in it). "
            "`trainguard rules list NAME` describes every parameter."
        )
    return 0


def _entry(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if v != {}}


def _convert(args: argparse.Namespace) -> int:
    import yaml

    from trainguard.errors import ConfigError
    from trainguard.rules import convert

    try:
        text = args.file.read_text()
    except OSError as err:
        raise ConfigError(f"cannot read {args.file}: {err.strerror or err}") from err
    if args.file.suffix == ".py" or PYTHON_CALL in text:
        raise ConfigError(PYTHON_ANSWER.format(file=args.file))
    try:
        doc = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError as err:
        raise ConfigError(f"{args.file} is neither JSON nor YAML: {err}") from err
    result = convert.convert(doc)
    header = [f"# TrainGuard rules converted from the SageMaker Debugger configuration {args.file.name}."]
    if result.save_interval is not None:
        header.append(
            f"# Capture (not a rule setting): save every {result.save_interval} steps: TRAINGUARD_SAVE_INTERVAL="
            f"{result.save_interval}, or a DebugJob's spec.capture.saveInterval: {result.save_interval}."
        )
        header.extend(f"# Note: {n}" for n in result.notes if "save" in n and "interval" in n)
    if result.collections:
        header.append(
            f"# The configuration saved the collections {', '.join(result.collections)}; the hook captures "
            "statistics of every collection by default (TRAINGUARD_COLLECTIONS restricts it)."
        )
    body = yaml.safe_dump(
        {"rules": [_entry(spec.model_dump(mode="json", exclude_none=True)) for spec in result.rules]},
        sort_keys=False,
        default_flow_style=None,
        width=110,
    )
    text = "\n".join(header) + "\n" + body
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    for note in result.notes:
        print(f"trainguard: note: {note}", file=sys.stderr)
    for dropped in result.dropped:
        print(f"trainguard: not converted: {dropped}", file=sys.stderr)
    return EXIT_PARTIAL if result.dropped else EXIT_COMPLETE
