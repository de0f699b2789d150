"""Evaluate rules offline on a stored run, an smdebug output directory or a TensorBoard log directory.

The same evaluator as the sidecar and `trainguard run`: every rank (or `--rank N`) is read once,
in step order, through the rules of `--rules FILE` (default: the built-in set); then a verdict
table is printed, what needs attention first. `--follow` keeps following a run that is still being
written until every rank ended (or `--idle-timeout-seconds`). Data the rules could not see is a
finding of its own, `data_gap` (a warning): a damaged segment, steps the hook lost to a store outage.
Exit status: 0 when no rule found a warning or critical issue, none failed and no data was missing;
1 when any did (so a CI step can gate on it); 4 when nothing was evaluated (no saved step); 2 on a
usage or read error.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

HELP = "run the rules over a stored run (TrainGuard, smdebug or TensorBoard); exit 1 on warnings"

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_NOTHING_EVALUATED = 4


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "uri", metavar="URI", help="run root: file:///path, s3://bucket/prefix, a directory path"
    )
    parser.add_argument(
        "--rules",
        metavar="FILE",
        help="rules file (YAML `rules: [...]`, or a SageMaker Debugger configuration); default: the built-in set",
    )
    parser.add_argument("--json", metavar="FILE", help="write rule statuses and findings as JSON")
    parser.add_argument("--rank", type=int, metavar="N", help="evaluate only this rank (default: all ranks)")
    parser.add_argument("--follow", action="store_true", help="keep following until every rank wrote END")
    parser.add_argument(
        "--checkpoint", action="store_true",
        help="save position and rule state into the run (evaluator/...), and resume from it when present",
    )  # fmt: skip
    parser.add_argument(
        "--strict", action="store_true",
        help="a rule whose `tensors` match no tensor of the run is an error (exit 1), not a warning",
    )  # fmt: skip
    parser.add_argument(
        "--quiet", action="store_true", help="the verdict table shows only the rules that found something"
    )
    parser.add_argument(
        "--poll-interval-seconds",
        type=float,
        default=0.25,
        metavar="S",
        help="with --follow: pause between listings (default 0.25)",
    )
    parser.add_argument(
        "--idle-timeout-seconds", type=float, default=600.0, metavar="S",
        help="with --follow: give up when nothing new arrives for this long (default 600)",
    )  # fmt: skip


def exit_status(rule_status: dict[str, Any]) -> int:
    """Return 1 when any rule found issues (warning or critical) or failed, else 0."""
    from trainguard.api.enums import RuleState

    bad = (RuleState.ISSUES_FOUND, RuleState.ERROR)
    return EXIT_FINDINGS if any(s.state in bad for s in rule_status.values()) else EXIT_CLEAN


def main(args: argparse.Namespace) -> int:
    from trainguard.api.enums import RuleState
    from trainguard.local import supervise
    from trainguard.sidecar import config
    from trainguard.sidecar.evaluator import Evaluator
    from trainguard.sidecar.verdicts import Verdict
    from trainguard.store.runs import open_run

    rules = config.load_rules_file(args.rules) if args.rules else None
    if not args.follow:
        open_run(args.uri)  # a stored run must exist: NotFound says what was expected at the URI
    ev = Evaluator(  # nothing here stops the run: the verdict lines below say what a rule found
        args.uri, rules=rules, rank=args.rank, checkpoint=args.checkpoint, strict=args.strict, acts=False
    )

    def on_verdict(v: Verdict) -> None:
        if v.state != RuleState.NO_ISSUES_FOUND:
            print(supervise.describe_verdict(v), file=sys.stderr, flush=True)

    if args.follow:
        ev.run(
            threading.Event(),
            on_verdict,
            poll_interval_seconds=args.poll_interval_seconds,
            idle_timeout_seconds=args.idle_timeout_seconds,
        )
    else:
        ev.poll_until_idle(on_verdict=on_verdict)
    for v in ev.finish():
        on_verdict(v)
    status = dict(ev.rule_status)
    code = exit_status(status)
    nothing = ev.nothing_evaluated
    if nothing is not None and code == EXIT_CLEAN:
        code = EXIT_NOTHING_EVALUATED
    print(supervise.verdict_table(status, quiet=args.quiet))
    for warning in ev.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for rank, end in ev.ends().items():
        if end.status not in ("ok", "stopped") or end.exception:
            print(f"rank {rank} ended {end.outcome()}", file=sys.stderr)
    where = "no steps" if ev.last_step is None else f"up to step {ev.last_step}"
    ranks = ", ".join(map(str, ev.ranks)) or "none"
    if nothing is not None:
        print(f"\nnothing was evaluated in {args.uri}: {nothing}; exit status {code}")
    else:
        print(f"\nevaluated {args.uri} ({ev.run_format} format, ranks {ranks}, {where}); exit status {code}")
    if args.json:
        doc = {
            "uri": args.uri,
            "ranks": ev.ranks,
            "last_step": ev.last_step,
            "ended": ev.ended,
            "exit_code": code,
            "nothing_evaluated": nothing,
            "lost_steps": ev.lost_steps_total,
            "warnings": list(ev.warnings),
            "rules": {name: supervise.rule_status_dict(st) for name, st in status.items()},
            "findings": [supervise.finding_dict(f) for f in ev.findings],
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return code
