"""Writes a run's `END.json` for ranks whose trainer died (or was stopped) without writing one.

Called by the DebugJob handler when the DebugJob enters a terminal phase. Followers and offline
readers then know the run is over instead of waiting for an idle timeout. A rank's END written
by the hook is never overwritten, unless it closes an earlier attempt of a rank that was
restarted since (a retried pod that died without writing its own). Opening the store with the
DebugJob's S3 credentials is here; the key names and the document come from
`trainguard.store.run_format`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trainguard.api import debugjob as api
from trainguard.api.enums import Phase
from trainguard.store import backends, errors, run_format
from trainguard.store.source import later_attempt, load_json_doc


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
        key = run_format.end_key(rank)
        if not _missing_or_stale(store, rank):
            continue
        info = run_format.EndInfo(
            status=status,
            last_step=last_steps.get(rank),
            wall_time=wall_time,
            written_by="operator",
            errors=[reason],
        )
        store.put(key, json.dumps(info.model_dump()).encode())
        written.append(rank)
    return written


def _missing_or_stale(store: backends.Store, rank: int) -> bool:
    """Whether the rank has no END, or one that closes an attempt older than the newest in the store."""
    try:
        end = load_json_doc(store, run_format.end_key(rank), run_format.EndInfo)
    except errors.NotFound:
        return True
    assert isinstance(end, run_format.EndInfo)
    return end.attempt is not None and later_attempt(store, rank, end.attempt) is not None


def last_steps(reports: Mapping[str, api.RankReport]) -> dict[int, int | None]:
    """Return each rank's last evaluated step from the sidecars' reports."""
    out: dict[int, int | None] = {}
    for key, report in reports.items():
        prefix, _, digits = key.partition("-")
        if prefix == "rank" and digits.isdigit():
            out[int(digits)] = report.last_step
    return out


def open_run_store(
    uri: str, capture: api.CaptureSpec, *, credentials: Mapping[str, str] | None
) -> backends.Store:
    """Open the run's store; for s3:// with `credentials` (access key id, secret key) from the DebugJob's Secret."""
    if not uri.startswith("s3://"):
        return backends.open_store(uri)
    options: dict[str, Any] = {"endpoint_url": capture.endpoint, "region": capture.region}
    if credentials:
        import boto3
        from botocore.config import Config

        options["client"] = boto3.session.Session().client(
            "s3",
            endpoint_url=capture.endpoint,
            region_name=capture.region or "us-east-1",
            aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
            config=Config(
                s3={"addressing_style": "path"} if capture.endpoint else {}, retries={"total_max_attempts": 1}
            ),
        )
    return backends.open_store(uri, **options)
