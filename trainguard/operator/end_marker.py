"""Writes a run's `END.json` for ranks whose trainer died (or was stopped) without writing one.

Called by the DebugJob handler when the DebugJob enters a terminal phase. Followers and offline
readers then know the run is over instead of waiting for an idle timeout. A rank's END written
by the hook is never overwritten, unless it closes an earlier attempt of a rank that was
restarted since (a retried pod that died without writing its own), or a damaged one. Opening the
store with the DebugJob's store credentials is here; reading, the staleness rule and writing END.json
are `trainguard.store.rank_end`'s, shared with the hook and local mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainguard.api import debugjob
from trainguard.api.enums import Phase
from trainguard.store import backends, rank_end, run_format


def end_status(phase: Phase) -> str:
    """Return EndInfo.status for a terminal phase: `ok` when the Job succeeded, `stopped` when a stop rule
    suspended it, else `crashed`."""
    return {Phase.SUCCEEDED: "ok", Phase.STOPPED: "stopped"}.get(phase, "crashed")


def write_missing(
    store: backends.Store,
    *,
    workers: int,
    last_steps: Mapping[int, int | None],
    status: str,
    reason: str,
    wall_time: float,
) -> list[int]:
    """Write END.json for every rank in `range(workers)` that has none, or a stale one; return those ranks."""
    written = []
    for rank in range(workers):
        if rank_end.current(store, rank) is not None:
            continue
        info = run_format.EndInfo(
            status=status,
            last_step=last_steps.get(rank),
            wall_time=wall_time,
            written_by="operator",
            errors=[reason],
        )
        rank_end.write(store, rank, info)
        written.append(rank)
    return written


def last_steps(reports: Mapping[str, debugjob.RankReport]) -> dict[int, int | None]:
    """Return each rank's last evaluated step from the sidecars' reports."""
    out: dict[int, int | None] = {}
    for key, report in reports.items():
        rank = debugjob.rank_of_report_key(key)
        if rank is not None:
            out[rank] = report.last_step
    return out


def open_run_store(
    uri: str, capture: debugjob.CaptureSpec, *, credentials: Mapping[str, str] | None
) -> backends.Store:
    """Open the run's store with the settings of `capture` and, when given, the `credentials` read from the
    DebugJob's Secret (by the variable each credential's backend declares: `AWS_ACCESS_KEY_ID`, ...)."""
    backend = capture.backend()
    options: dict[str, Any] = backend.options(capture.store_settings())
    if credentials:
        options.update({c.option: credentials[c.env] for c in backend.credentials if c.env in credentials})
    return backends.open_store(uri, **options)
