"""Finds the runs stored under a prefix, for `trainguard ls`.

Walks the prefix one level at a time (a delimited listing per folder, so a run's own segments are
never listed) and stops descending at a folder that is a run: `run.json` or `rank-NNNNN/` (ours),
`index/` with `events/` or `collections/` (smdebug), or `*tfevents*` files (TensorBoard, each folder
that holds them directly). For each run it reads `run.json` and each rank's `END.json`, nothing
else, so listing stays cheap on S3. Opening a run is `reader.open_run`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainguard.store import errors, run_format
from trainguard.store.backends import Store
from trainguard.store.runs import is_ours
from trainguard.store.source import load_json_doc

DEFAULT_MAX_DEPTH = 4
"""Folders below the prefix searched for runs: the operator writes `<uri>/<namespace>/<debugjob>/<uid>/`,
three levels, and `trainguard run` writes `trainguard-runs/<run id>/`, one."""


@dataclass
class RunEntry:
    """One run found under the prefix."""

    prefix: str
    """Its key prefix below the listed URI, ending in `/` ("" for the URI itself)."""
    kind: str
    """Its format: trainguard, smdebug or tensorboard."""
    info: run_format.RunInfo | None = None
    """`run.json` (TrainGuard runs that have one)."""
    ends: dict[int, run_format.EndInfo | None] = field(default_factory=dict)
    """Each rank's END marker, or None while the rank has none (still writing, or killed)."""
    problem: str | None = None
    """Why `run.json` or an END could not be read, if so."""


def kind_of(entries: list[str]) -> str | None:
    """The format of a folder from its immediate entries (names relative to it), or None if not a run."""
    if is_ours(entries):
        return "trainguard"
    if "index/" in entries and ("events/" in entries or "collections/" in entries):
        return "smdebug"
    if any("tfevents" in e for e in entries if not e.endswith("/")):
        return "tensorboard"
    return None


def find_runs(store: Store, *, max_depth: int = DEFAULT_MAX_DEPTH) -> list[RunEntry]:
    """Return the runs under the store's root, in key order, searching `max_depth` folders deep."""
    found: list[RunEntry] = []

    def walk(prefix: str, depth: int) -> None:
        entries = store.list(prefix, delimiter="/")
        names = [e[len(prefix) :] for e in entries]
        kind = kind_of(names)
        if kind is not None:
            found.append(_describe(store, prefix, kind, names))
            return
        if depth < max_depth:
            for entry in entries:
                if entry.endswith("/"):
                    walk(entry, depth + 1)

    walk("", 0)
    return found


def _describe(store: Store, prefix: str, kind: str, names: list[str]) -> RunEntry:
    entry = RunEntry(prefix=prefix, kind=kind)
    if kind != "trainguard":
        return entry
    try:
        if run_format.RUN_INFO_KEY in names:
            info = load_json_doc(store, prefix + run_format.RUN_INFO_KEY, run_format.RunInfo)
            assert isinstance(info, run_format.RunInfo)
            entry.info = info
        for name in names:
            rank = run_format.parse_rank_prefix(name)
            if rank is None:
                continue
            key = prefix + run_format.end_key(rank)
            end = load_json_doc(store, key, run_format.EndInfo) if store.exists(key) else None
            assert end is None or isinstance(end, run_format.EndInfo)
            entry.ends[rank] = end
    except errors.StoreError as err:
        entry.problem = str(err)
    return entry
