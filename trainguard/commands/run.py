"""Run a training command under TrainGuard: live rules, a stop on a `stop` verdict, a report at the end.

CMD gets TRAINGUARD_OUT (default file://./trainguard-runs/<run-id>), TRAINGUARD_RUN_ID,
TRAINGUARD_STOP_FILE and, with --save-interval, TRAINGUARD_SAVE_INTERVAL. A stop writes the stop file first; a CMD that polls it (`hook.should_stop()`)
gets --grace seconds to save its work and exit, then SIGTERM, then SIGKILL after
--grace-period-seconds. Exit status: CMD's own when it ends by itself (128+N when signal N ended it),
3 when a rule stopped it, 4 when it exited 0 but nothing was checked (it wrote no TrainGuard data, or
no saved step), 2 when TrainGuard itself could not start it.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

HELP = "run a training command with live rules; stop it when a rule says so (exit 3)"


def register(parser: argparse.ArgumentParser) -> None:
    parser.usage = "trainguard run [options] -- CMD [ARGS...]"
    parser.add_argument(
        "--out",
        metavar="URI",
        help="run root (file:///path or s3://bucket/prefix); default file://./trainguard-runs/<run-id>",
    )
    parser.add_argument("--run-id", help="run id (default: UTC start time plus a random suffix)")
    parser.add_argument(
        "--rules", metavar="FILE",
        help="rules file (YAML `rules: [...]`: its entries extend the default set, or replace it with "
        "`defaults: false`; or a SageMaker Debugger configuration, taken as the whole set)",
    )  # fmt: skip
    parser.add_argument(
        "--stop", action="append", default=[], metavar="RULE",
        help="stop the run when RULE fires (repeatable); RULE joins the set if it is not in it",
    )  # fmt: skip
    parser.add_argument(
        "--notify", action="append", default=[], metavar="RULE",
        help="only report RULE, never stop for it (repeatable); RULE joins the set if it is not in it",
    )  # fmt: skip
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        help="serve Prometheus /metrics on this port while running (0: any free port)",
    )
    parser.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        metavar="ADDR",
        help="address for --metrics-port (default 127.0.0.1)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the outcome (stopped, stopped_by, exit_code, findings, ...) as JSON",
    )
    parser.add_argument(
        "--report", metavar="FILE", help="HTML report path (default: report.html in the run directory)"
    )
    parser.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    parser.add_argument(
        "--save-interval", type=int, metavar="N",
        help="CMD's hook saves statistics every N training steps (sets TRAINGUARD_SAVE_INTERVAL; default: an "
        "exported TRAINGUARD_SAVE_INTERVAL, else 10); a save_interval the script passes to its hook wins",
    )  # fmt: skip
    parser.add_argument(
        "--grace", type=float, default=30.0, metavar="S",
        help="after a stop verdict, how long a CMD that polls hook.should_stop() may take to save its work and "
        "exit before SIGTERM (default 30; 0: SIGTERM at once, with the stop file)",
    )  # fmt: skip
    parser.add_argument(
        "--grace-period-seconds", type=float, default=10.0, metavar="S",
        help="after SIGTERM, how long CMD may take to exit before SIGKILL (default 10)",
    )  # fmt: skip
    parser.add_argument(
        "--strict", action="store_true",
        help="a rule whose `tensors` match no tensor of the run is an error (exit 1), not a warning",
    )  # fmt: skip
    parser.add_argument(
        "--quiet", action="store_true",
        help="no progress line and no verdict lines while the command runs (the end is still told)",
    )  # fmt: skip
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD", help="the training command")


def main(args: argparse.Namespace) -> int:
    from trainguard.local import supervise

    if not args.verbose:  # the evaluator's own log lines repeat the verdict lines printed here
        logging.getLogger("trainguard.sidecar").setLevel(logging.ERROR)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    rules, setup_warnings = _rules(args)
    for warning in setup_warnings:
        _say(f"warning: {warning}")
    server = None
    progress = supervise.Progress(sys.stderr, quiet=args.quiet)
    sup = supervise.Supervisor(
        command,
        run_uri=args.out,
        run_id=args.run_id,
        rules=rules,
        grace_period_seconds=args.grace_period_seconds,
        cooperative_seconds=args.grace,
        strict=args.strict,
        progress=progress,
        save_interval=args.save_interval,
    )
    if args.metrics_port is not None:
        import prometheus_client

        from trainguard.sidecar.server import MetricsServer

        def health() -> tuple[bool, dict[str, Any]]:
            ev = sup.evaluator
            return True, {"last_step": ev.last_step if ev else None, "ended": bool(ev and ev.ended)}

        sup.registry = prometheus_client.CollectorRegistry()
        server = MetricsServer(
            sup.registry, health=health, address=args.metrics_address, port=args.metrics_port
        )
        progress.line(f"metrics at {server.url}/metrics")
    try:
        outcome = sup.run()
    finally:
        if server is not None:
            server.close()
    _keep_verdicts(sup, outcome, progress)
    doc = outcome.to_json()
    doc["warnings"] = setup_warnings + doc["warnings"]
    doc["report"] = _report(args, outcome, doc, progress)
    _summary(outcome, report=doc["report"], table=args.verbose, warnings=setup_warnings)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return outcome.exit_code


def _keep_verdicts(sup: Any, outcome: Any, progress: Any) -> None:
    """Leave the final verdicts in the run (the evaluator's checkpoint), where `trainguard ls` counts the findings
    and names the rule that stopped it, and from where `trainguard evaluate --checkpoint` would go on."""
    from trainguard.store import errors

    if not outcome.recorded or sup.evaluator is None or outcome.evaluation_error:
        return
    try:
        sup.evaluator.save_checkpoint()
    except (errors.StoreError, TypeError, ValueError) as err:
        progress.line(f"the verdicts were not kept in the run: {err}")


def _missing_files(command: list[str] | tuple[str, ...]) -> list[str]:
    """The arguments of CMD that name a script (`*.py`, `*.sh`) that does not exist: why it failed to start."""
    return [a for a in command[1:] if a.endswith((".py", ".sh")) and not Path(a).exists()]


def _rules(args: argparse.Namespace) -> tuple[list[Any] | None, list[str]]:
    """The rules to run (None: the default set) from --rules, --stop and --notify, and a warning when they
    drop the default set's NaN stop."""
    from trainguard.api import default_rules
    from trainguard.errors import ConfigError
    from trainguard.rules import registry
    from trainguard.sidecar import config

    rules = config.load_rules_file(args.rules) if args.rules else None
    if args.stop or args.notify:
        base = rules if rules is not None else config.default_specs()
        known = set(registry.BUILTINS) | {r.key for r in base}
        for name in [*args.stop, *args.notify]:
            if name not in known and not name.startswith("python:"):
                raise ConfigError(f"--stop/--notify {name}: no such rule; `trainguard rules list` shows them")
        rules = default_rules.with_actions(base, stop=args.stop, notify=args.notify)
    if rules is None or default_rules.keeps_nan_stop(rules):
        return rules, []
    nan = default_rules.NAN_STOP
    warning = (
        f"no rule stops the run on NaN or Inf: the rules lack {nan} with action stop (add `{{type: {nan}, "
        "action: stop}` to the rules, or drop `defaults: false`)"
    )
    return rules, [warning]


def _report(args: argparse.Namespace, outcome: Any, doc: dict[str, Any], progress: Any) -> str | None:
    from trainguard import report
    from trainguard.errors import TrainGuardError
    from trainguard.local import supervise
    from trainguard.store import runs

    if args.no_report:
        return None
    if not outcome.recorded:
        return None  # the summary says that nothing was recorded
    local = supervise.local_path(outcome.run_uri)
    path = (
        Path(args.report)
        if args.report
        else (local or Path(supervise.DEFAULT_RUNS_DIR) / outcome.run_id) / "report.html"
    )
    try:
        run = runs.open_run(outcome.run_uri)
        report.write_report(outcome.run_uri, path, findings=outcome.findings, outcome=doc, run=run)
    except TrainGuardError as err:
        progress.line(f"no report: {err}")
        return None
    return str(path.resolve())


def _finding_line(label: str, f: Any) -> str:
    return f"{label}, step {f.step} on rank {f.rank}: {f.rule} ({getattr(f.severity, 'value', f.severity)}): {f.message}"


def _say(text: str) -> None:
    """A summary line that --quiet does not hide, wrapped within 80 columns."""
    from trainguard.local import supervise

    sys.stderr.write(supervise.wrap(text, prefix="[trainguard] ") + "\n")


def _summary(outcome: Any, *, report: str | None, table: bool = False, warnings: list[str]) -> None:
    """The end of `trainguard run`: the rules (findings in full, one line for the quiet ones, or the whole
    table with --verbose), what went wrong beside them, where the data is, and last how the run ended."""
    from trainguard.api.enums import RunEnd
    from trainguard.local import supervise

    out = sys.stderr
    if outcome.rule_status and outcome.recorded:
        if table:
            out.write("\n" + supervise.verdict_table(outcome.rule_status) + "\n\n")
        else:
            out.write(supervise.rules_summary(outcome.rule_status, prefix="[trainguard] ") + "\n")
    for warning in [*warnings, *outcome.warnings]:
        _say(f"warning: {warning}")
    if outcome.evaluation_error:
        _say(f"evaluation failed: {outcome.evaluation_error}")
    told = len(outcome.ends) == 1 and outcome.end in (RunEnd.CRASHED, RunEnd.KILLED)  # by the last line
    for rank, end in sorted(outcome.ends.items()):
        if not told and (end.status not in ("ok", "stopped") or end.exception):
            _say(
                f"rank {rank} ended {end.outcome()}"
                + (f" at step {end.last_step}" if end.last_step is not None else "")
            )
    if outcome.lost_steps:
        _say(f"{outcome.lost_steps} steps never reached the store and were not checked (finding data_gap)")
    if outcome.unchecked_steps:
        from trainguard.sidecar.verdicts import BLIND_HINT

        blind = [f for f in outcome.findings if getattr(f, "hint", None) == BLIND_HINT]
        since = f"blind since step {blind[0].step}; " if blind else ""
        _say(
            f"{since}{outcome.unchecked_steps} training steps went by that the hook did not count and the rules "
            "did not check (finding data_gap)"
        )
    command_status = supervise.exit_status(outcome.returncode)
    if outcome.recorded:
        _say(f"run data: {outcome.run_uri}")
    if report:
        _say(f"report: {report}")
    if outcome.stopped:
        v = outcome.stop_verdict
        _say(f"why: {v.message}")
        hint = getattr(v.finding, "hint", "") if v.finding is not None else ""
        if hint and hint not in v.message:
            _say(f"what to try: {hint}")
        if outcome.earlier_sign is not None:
            _say(_finding_line("earlier sign", outcome.earlier_sign))
    elif not outcome.recorded and command_status != 0:
        missing = _missing_files(outcome.command)
        why = f"file not found: {', '.join(missing)}" if missing else "its own error is printed above"
        _say(f"the command failed before it wrote any TrainGuard data ({why})")  # its status: the last line
    elif not outcome.recorded:
        _say(
            f"nothing was recorded: the command wrote no TrainGuard data to {outcome.run_uri} (create "
            "trainguard.torch.Hook(model) or trainguard.Recorder() in the script; see examples/)"
        )
    elif outcome.severe_findings:
        _say(_finding_line("the first", min(outcome.severe_findings, key=lambda f: f.step)))
    _say(outcome.headline())
