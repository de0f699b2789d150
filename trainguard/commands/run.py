"""Run a training command under TrainGuard: live rules, a stop on a `stop` verdict, a report at the end.

CMD gets TRAINGUARD_OUT (default file://./trainguard-runs/<run-id>), TRAINGUARD_RUN_ID and
TRAINGUARD_STOP_FILE. Exit status: CMD's own when it ends by itself, 3 when a rule stopped it,
2 when TrainGuard itself could not start it.
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
        "--rules", metavar="FILE", help="rules file (YAML `rules: [...]`); default: the built-in set"
    )
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
        "--grace-period-seconds", type=float, default=10.0, metavar="S",
        help="after SIGTERM, how long CMD may take to exit (e.g. to save a checkpoint) before SIGKILL (default 10)",
    )  # fmt: skip
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line (verdicts and the table are still printed)"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD", help="the training command")


def main(args: argparse.Namespace) -> int:
    from trainguard.local import supervise
    from trainguard.sidecar import config

    if not args.verbose:  # the evaluator's own log lines repeat the verdict lines printed here
        logging.getLogger("trainguard.sidecar").setLevel(logging.ERROR)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    rules = config.load_rules_file(args.rules) if args.rules else None
    server = None
    progress = supervise.Progress(sys.stderr, quiet=args.quiet)
    sup = supervise.Supervisor(
        command,
        run_uri=args.out,
        run_id=args.run_id,
        rules=rules,
        grace_period_seconds=args.grace_period_seconds,
        progress=progress,
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
    doc = outcome.to_json()
    doc["report"] = _report(args, outcome, doc, progress)
    _summary(outcome, progress, report=doc["report"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return outcome.exit_code


def _report(args: argparse.Namespace, outcome: Any, doc: dict[str, Any], progress: Any) -> str | None:
    from trainguard import report
    from trainguard.errors import TrainGuardError
    from trainguard.local import supervise
    from trainguard.store import runs

    if args.no_report:
        return None
    if outcome.last_step is None:
        progress.line(
            f"the command wrote no TrainGuard data to {outcome.run_uri}: create trainguard.Recorder() or "
            "trainguard.torch.Hook(model) in the script (see examples/); no report written"
        )
        return None
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


def _summary(outcome: Any, progress: Any, *, report: str | None) -> None:
    from trainguard.local import supervise

    out = sys.stderr
    if outcome.rule_status:
        out.write("\n" + supervise.verdict_table(outcome.rule_status) + "\n\n")
    if outcome.evaluation_error:
        progress.line(f"evaluation failed: {outcome.evaluation_error}")
    if outcome.stopped:
        v = outcome.stop_verdict
        how = "SIGKILL after the grace period" if outcome.killed else "SIGTERM"
        progress.line(
            f"STOPPED by rule {v.rule} at step {v.step} on rank {v.rank} ({how}); exit status {outcome.exit_code}"
        )
        progress.line(f"why: {v.message}")
        hint = getattr(v.finding, "hint", "") if v.finding is not None else ""
        if hint and hint not in v.message:
            progress.line(f"what to try: {hint}")
        if outcome.earlier_sign is not None:
            progress.line(_finding_line("earlier sign", outcome.earlier_sign))
    else:
        severe = outcome.severe_findings
        state = f"{len(severe)} warning/critical findings" if severe else "no warnings"
        progress.line(f"the command exited with status {outcome.exit_code}; {state}")
        if severe:
            progress.line(_finding_line("the first", min(severe, key=lambda f: f.step)))
    progress.line(f"run data: {outcome.run_uri}")
    if report:
        progress.line(f"report: {report}")
