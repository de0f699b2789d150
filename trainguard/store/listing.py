"""Finds the runs stored under a prefix, for `trainguard ls`.

Walks the prefix one level at a time (a delimited listing per folder, so a run's own segments are
never listed) and stops descending at a folder that is a run: `run.json` or `rank-NNNNN/` (ours),
`index/` with `events/` or `collections/` (smdebug), or `*tfevents*` files (TensorBoard, each folder
that holds them directly). For each run it reads `run.json` and each rank's `END.json`, and lists
the keys of its verdict records (the evaluator's `evaluator/*/state.json`, read by the caller), nothing
else, so listing stays cheap on S3. `end_state` sums up how a run ended from its ENDs, worst first: a
run with a crashed rank never reads as ok; `run_end` gives that decision as a `RunEnd` (the evaluator's
`trainguard_run_ended` metric). Opening a run is `reader.open_run`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trainguard.api.enums import RunEnd
from trainguard.store import errors, run_format
from trainguard.store.backends import Store
from trainguard.store.runs import is_ours
from trainguard.store.source import load_json_doc

LOCAL_RUNS_DIR = "trainguard-runs"
"""The directory (in the current one) where `trainguard run` writes its runs by default, and `trainguard ls`
looks by default; local mode's `supervise.DEFAULT_RUNS_DIR` is this name."""
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
    verdict_keys: list[str] = field(default_factory=list)
    """Keys (below the listed URI) of the run's verdict records: the evaluator's checkpoints."""
    problem: str | None = None
    """Why `run.json` or an END could not be read, if so."""


def end_state(ends: Mapping[int, run_format.EndInfo | None]) -> str:
    """How a TrainGuard run ended, from its ranks' END markers, worst first: `crashed: <how>` (the script
    failed), `error: <how>` (capture failed), `stopped`, `killed by SIGKILL`, `running or no END (k of n ranks ended)`, `ok`.
    One rank that failed decides, whatever the others say. Used by `trainguard ls` and the report's banner."""
    return _decide(ends)[0]


def run_end(ends: Mapping[int, run_format.EndInfo | None], *, stop_issued: bool = False) -> RunEnd | None:
    """How a TrainGuard run ended as a `RunEnd`, by `end_state`'s decision; None while a rank has no END.

    Capture that failed (`error`: steps lost) or steps the hooks did not count (`unchecked_steps`) on a run
    that otherwise ended ok make it `blind`, as `trainguard run` says. `stop_issued` (a verdict record or the
    evaluator issued a stop) makes an ok or killed end `stopped`, as `trainguard ls` tells it."""
    state = _decide(ends)[1]
    if stop_issued and state in (RunEnd.OK, RunEnd.KILLED):
        return RunEnd.STOPPED
    if state is RunEnd.OK and any(e is not None and e.unchecked_steps for e in ends.values()):
        return RunEnd.BLIND
    return state


def _decide(ends: Mapping[int, run_format.EndInfo | None]) -> tuple[str, RunEnd | None]:
    """`end_state`'s phrase and its `RunEnd` (None: not ended, or statuses this format does not know)."""
    if not ends:
        return "no ranks yet", None
    done = {rank: e for rank, e in sorted(ends.items()) if e is not None}
    several = len(ends) > 1

    def where(rank: int) -> str:
        return f" (rank {rank})" if several else ""

    for rank, e in done.items():  # the script failed: whatever the hook's own END said, it crashed
        if not e.signal and (e.status == "crashed" or e.exception or e.exit_code not in (None, 0)):
            return "crashed" + e.outcome()[len(e.status) :] + where(rank), RunEnd.CRASHED
    for rank, e in done.items():  # capture failed, steps lost: the script itself was fine
        if e.status == "error" and not e.signal:
            return e.outcome() + where(rank), RunEnd.BLIND
    for rank, e in done.items():
        if e.status == "stopped":
            return "stopped" + where(rank), RunEnd.STOPPED
    for rank, e in done.items():
        if e.signal:
            return f"killed by {e.signal}" + where(rank), RunEnd.KILLED
    if len(done) < len(ends):
        return f"running or no END ({len(done)} of {len(ends)} ranks ended)", None
    statuses = {e.status for e in done.values()}
    if statuses == {"ok"}:
        return "ok", RunEnd.OK
    return ", ".join(sorted(statuses)), RunEnd.KILLED if "killed" in statuses else None


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
        verdicts = prefix + run_format.EVALUATOR_PREFIX + "/"
        if run_format.EVALUATOR_PREFIX + "/" in names:
            for folder in store.list(verdicts, delimiter="/"):
                key = folder + run_format.EVALUATOR_STATE_NAME
                if folder.endswith("/") and store.exists(key):
                    entry.verdict_keys.append(key)
    except errors.StoreError as err:
        entry.problem = str(err)
    return entry
