"""A rank's `END.json`: the one function that writes it, and the one rule that says which is stale.

Three parties write END.json: the hook's writer when it closes (`upload_queue`), the operator for
ranks that died without one (`operator/end_marker.py`), and local mode for every rank of the
command it ran (`local/supervise.py`). All of them PUT it through `write`, and those that must not
overwrite a live END (the operator, local mode) read it through `current`, which applies the
staleness rule of `EndInfo.is_stale`: an END of a writer attempt older than the newest attempt of
the rank in the store (or than `not_before`) is stale, because the rank was restarted since. The
readers apply the same rule to the attempts they have read (`source.RankSource.ended`).
"""

from __future__ import annotations

from trainguard.store import errors, run_format
from trainguard.store.backends import Store
from trainguard.store.source import later_attempt, load_json_doc


def write(store: Store, rank: int, end: run_format.EndInfo) -> bytes:
    """PUT `end` as the rank's END.json and return the bytes written; store errors are raised."""
    data = end.model_dump_json().encode()
    store.put(run_format.end_key(rank), data)
    return data


def current(store: Store, rank: int, *, not_before: str | None = None) -> run_format.EndInfo | None:
    """Return the rank's END.json unless there is none, it is damaged, or it is stale (see the module docstring).

    A damaged END counts as none: whoever asks is about to write one that says how the rank ended.
    Other store errors are raised.
    """
    try:
        end = load_json_doc(store, run_format.end_key(rank), run_format.EndInfo)
    except errors.NotFound:
        return None
    except errors.FormatError:
        return None
    assert isinstance(end, run_format.EndInfo)
    if end.attempt is None:
        return end  # the operator's, or format 1: it closes whichever attempt is current
    newest = later_attempt(store, rank, end.attempt)
    return None if end.is_stale(newest, not_before) else end
