"""Write a self-contained HTML report of a stored run: loss, gradient norms, update ratios,
dead units, with the findings marked. Findings come from --json (a `trainguard run`/`evaluate`
output) or from evaluating the run with the default rules.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

HELP = "write an HTML report (plots and findings) of a stored run"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "uri",
        metavar="URI",
        help="run root: file:///path, s3://bucket/prefix, an smdebug or TensorBoard directory",
    )
    parser.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="where to write the page (default report.html)",
    )
    parser.add_argument(
        "--json", metavar="FILE", help="take the findings from this --json file instead of evaluating the run"
    )
    parser.add_argument(
        "--rank", type=int, default=0, metavar="N", help="rank whose statistics are plotted (default 0)"
    )


def recorded_stop(run: Any) -> dict[str, Any] | None:
    """The stop the run's own evaluator decided, from its verdict records (what `trainguard ls` reads), in the
    shape of a `trainguard run --json` outcome for the report's banner; None when no rule stopped the run or
    the run ended in a way a stop does not explain (crashed, capture error)."""
    from trainguard.report import end_state
    from trainguard.sidecar import checkpoint
    from trainguard.store import errors, run_format

    ended = end_state(run)
    if ended is None or not (ended.startswith(("stopped", "killed")) or ended == "ok"):
        return None
    try:
        folders = run.store.list(run_format.EVALUATOR_PREFIX + "/", delimiter="/")
    except errors.StoreError:
        return None
    for folder in folders:
        state = (
            checkpoint.load(run.store, folder + run_format.EVALUATOR_STATE_NAME)
            if folder.endswith("/")
            else None
        )
        for name, status in (state.statuses if state else {}).items():
            if status.stop_emitted:
                how = "" if ended in ("stopped", "ok") else f" (the command was {ended})"
                message = f"{status.message}{how}" if status.message else how.strip()
                return {
                    "stopped": True,
                    "stopped_by": name,
                    "stop": {"step": status.step, "message": message},
                }
    return None


def main(args: argparse.Namespace) -> int:
    from trainguard import report

    if args.json:
        path = report.write_report(args.uri, args.output, json_file=args.json, rank=args.rank)
    else:
        from trainguard.sidecar import evaluator

        run = report.report_run(args.uri, rank=args.rank)
        findings = evaluator.evaluate_stored(args.uri, attempt=run.attempt)
        path = report.write_report(
            args.uri, args.output, findings=findings, rank=args.rank, run=run, outcome=recorded_stop(run)
        )
    print(f"report: {path.resolve()}", file=sys.stderr)
    return 0
