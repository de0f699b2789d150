"""Write a self-contained HTML report of a stored run: loss, gradient norms, update ratios,
dead units, with the findings marked. Findings come from --json (a `trainguard run`/`evaluate`
output) or from evaluating the run with the default rules.
"""

from __future__ import annotations

import argparse
import sys

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


def main(args: argparse.Namespace) -> int:
    from trainguard import report

    if args.json:
        path = report.write_report(args.uri, args.output, json_file=args.json, rank=args.rank)
    else:
        from trainguard.sidecar import evaluator

        run = report.report_run(args.uri, rank=args.rank)
        findings = evaluator.evaluate_stored(args.uri, attempt=run.attempt)
        path = report.write_report(args.uri, args.output, findings=findings, rank=args.rank, run=run)
    print(f"report: {path.resolve()}", file=sys.stderr)
    return 0
