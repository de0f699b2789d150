"""`trainguard ls [URI]`: the runs stored under a prefix (file:// or s3://), one line each.

URI defaults to `trainguard-runs` in the current directory, where `trainguard run` writes. Searches
`--depth` folders below the URI (default 4: a DebugJob's runs sit at
`<uri>/<namespace>/<debugjob>/<uid>/`) and prints, per run, the URI to give `inspect`, `evaluate`
or `report`, its format, run id, start time, ranks, how many ranks ended, how many warning and
critical findings its verdict record holds (info notes are not counted, as in `trainguard run`'s last
line; "-": no record, e.g. a run no evaluator checkpointed; "316+": a record keeps the first 100 of each
rule) and how it ended: ok, stopped
by rule R, crashed (with the error), killed by a signal, or running or no END. Reads only each run's
`run.json`, END markers and verdict records. Exit status: 0 when it found runs, 1 when there are
none under the URI, 2 when the URI cannot be listed (one line on stderr).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any

HELP = "list the runs under a prefix (default ./trainguard-runs): ranks, findings, how each ended"


def register(parser: argparse.ArgumentParser) -> None:
    from trainguard.store import listing

    parser.add_argument(
        "uri",
        metavar="URI",
        nargs="?",
        default=listing.LOCAL_RUNS_DIR,
        help=f"a prefix: file:///path, s3://bucket/prefix, a directory path (default {listing.LOCAL_RUNS_DIR}, "
        "where `trainguard run` writes)",
    )
    parser.add_argument(
        "--depth", type=int, default=None, metavar="N", help="folders below URI to search (default 4)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON, one object per run")


def _ended(entry: Any) -> str:
    if entry.kind != "trainguard":
        return "-"
    if not entry.ends:
        return "no ranks yet"
    return f"{sum(e is not None for e in entry.ends.values())} of {len(entry.ends)}"


SEVERE = ("critical", "warning")
"""The severities FINDINGS counts, as `trainguard run`'s last line does: info notes are not warnings."""


def _verdicts(store: Any, entry: Any) -> tuple[dict[str, int] | None, dict[str, int], list[str]]:
    """Findings per rule and per severity in the run's verdict records (None, {}: it has none), and the rules
    that stopped it."""
    from trainguard.sidecar import checkpoint

    if not entry.verdict_keys:
        return None, {}, []
    found: dict[str, int] = {}
    by_severity: dict[str, int] = {}
    stopped_by: list[str] = []
    for key in entry.verdict_keys:
        state = checkpoint.load(store, key)
        if state is None:
            continue
        for f in state.findings:
            rule, severity = str(f.get("rule", "?")), str(f.get("severity", "?"))
            found[rule] = found.get(rule, 0) + 1
            by_severity[severity] = by_severity.get(severity, 0) + 1
        stopped_by += [
            name for name, s in state.statuses.items() if s.stop_emitted and name not in stopped_by
        ]
    return found, by_severity, stopped_by


def _state(entry: Any, stopped_by: list[str]) -> str:
    from trainguard.store import listing

    state = listing.end_state(entry.ends)
    if stopped_by and (state.startswith(("stopped", "killed")) or state == "ok"):
        # the verdict record names the rule; the ranks' ENDs say how the command ended after the stop
        how = "" if state in ("stopped", "ok") else f" ({state})"
        return f"stopped by rule {', '.join(stopped_by)}{how}"
    return state


def main(args: argparse.Namespace) -> int:
    from trainguard.sidecar import checkpoint  # not verdicts: ls needs no extra (verdicts reads rules files)
    from trainguard.store import listing
    from trainguard.store.backends import open_store

    store = open_store(args.uri)
    root = store.uri.rstrip("/")
    depth = listing.DEFAULT_MAX_DEPTH if args.depth is None else args.depth
    runs = listing.find_runs(store, max_depth=depth)
    rows: list[dict[str, Any]] = []
    for r in runs:
        info = r.info
        findings, by_severity, stopped_by = _verdicts(store, r)
        rows.append(
            {
                "uri": f"{root}/{r.prefix}".rstrip("/"),
                "format": r.kind,
                "run_id": info.run_id if info else None,
                "framework": info.framework if info else None,
                "start_time": info.start_time if info else None,
                "world_size": info.world_size if info else None,
                "ranks": sorted(r.ends),
                "ended": {str(k): (e.status if e else None) for k, e in sorted(r.ends.items())},
                "state": _state(r, stopped_by) if r.kind == "trainguard" else None,
                "stopped_by": stopped_by or None,
                # warning and critical findings: a run with info notes only did not warn
                "findings": None if findings is None else sum(by_severity.get(k, 0) for k in SEVERE),
                "findings_by_severity": None if findings is None else by_severity,
                "findings_by_rule": findings,
                # a verdict record keeps the first findings of each rule only: the count is then a floor
                "findings_capped": max((findings or {}).values(), default=0)
                >= checkpoint.MAX_FINDINGS_PER_RULE,
                "problem": r.problem,
            }
        )
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif rows:
        _print_table(rows, runs)
    if not rows:
        print(f"no runs under {root} (searched {depth} folders deep)", file=sys.stderr)
        return 1
    if not args.json:
        print(f"{len(rows)} run{'s' if len(rows) != 1 else ''} under {root}")
    return 0


def _print_table(rows: list[dict[str, Any]], runs: list[Any]) -> None:
    table = [("RUN", "FORMAT", "RUN ID", "STARTED (UTC)", "RANKS", "ENDED", "FINDINGS", "STATE")]
    for row, run in zip(rows, runs, strict=True):
        started = (
            datetime.datetime.fromtimestamp(row["start_time"], datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M:%S"
            )
            if row["start_time"] is not None
            else "-"
        )
        ranks = str(len(row["ranks"])) if row["format"] == "trainguard" else "-"
        findings = (
            "-" if row["findings"] is None else str(row["findings"]) + ("+" if row["findings_capped"] else "")
        )
        table.append(
            (
                row["uri"],
                row["format"],
                row["run_id"] or "-",
                started,
                ranks,
                _ended(run),
                findings,
                row["state"] or "-",
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
    for row in rows:
        if row["problem"]:
            print(f"problem: {row['uri']}: {row['problem']}")
