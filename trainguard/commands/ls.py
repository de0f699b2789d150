"""`trainguard ls URI`: the runs stored under a prefix (file:// or s3://), one line each.

Searches `--depth` folders below the URI (default 4: a DebugJob's runs sit at
`<uri>/<namespace>/<debugjob>/<uid>/`) and prints, per run, the URI to give `inspect`, `evaluate`
or `report`, its format, run id, start time, ranks and how many ranks ended. Reads only each run's
`run.json` and END markers. Exit status: 0 when it found runs, 1 when there are none under the
URI, 2 when the URI cannot be listed (one line on stderr).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any

HELP = "list the runs under a prefix (file:// or s3://): format, run id, start, ranks, ended"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "uri", metavar="URI", help="a prefix: file:///path, s3://bucket/prefix, a directory path"
    )
    parser.add_argument(
        "--depth", type=int, default=None, metavar="N", help="folders below URI to search (default 4)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON, one object per run")


def _ended(entry: Any) -> str:
    if entry.kind != "trainguard":
        return "-"
    ends = entry.ends
    if not ends:
        return "no ranks yet"
    done = [e for e in ends.values() if e is not None]
    statuses = sorted({e.status for e in done})
    text = f"{len(done)} of {len(ends)}"
    return f"{text} ({', '.join(statuses)})" if done else text


def main(args: argparse.Namespace) -> int:
    from trainguard.store import listing
    from trainguard.store.backends import open_store

    store = open_store(args.uri)
    root = store.uri.rstrip("/")
    depth = listing.DEFAULT_MAX_DEPTH if args.depth is None else args.depth
    runs = listing.find_runs(store, max_depth=depth)
    rows: list[dict[str, Any]] = []
    for r in runs:
        info = r.info
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
    table = [("RUN", "FORMAT", "RUN ID", "STARTED (UTC)", "RANKS", "ENDED")]
    for row, run in zip(rows, runs, strict=True):
        started = (
            datetime.datetime.fromtimestamp(row["start_time"], datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M:%S"
            )
            if row["start_time"] is not None
            else "-"
        )
        ranks = str(len(row["ranks"])) if row["format"] == "trainguard" else "-"
        table.append((row["uri"], row["format"], row["run_id"] or "-", started, ranks, _ended(run)))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
    for row in rows:
        if row["problem"]:
            print(f"problem: {row['uri']}: {row['problem']}")
