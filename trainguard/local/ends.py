"""How each rank of a supervised run ended: the END.json documents the supervisor completes.

Called by `supervise.Supervisor` once CMD has exited. A rank without an END.json (killed by the stop
or a signal, or crashed before its hook closed) gets one written by the supervisor; a rank whose hook
wrote one gets CMD's exit status added. Only this run's ranks are touched: what an earlier run left
on the same `--out` is recognised by its attempt (its start time) and left alone. The documents and
keys are `trainguard.store.run_format`'s; reading, the staleness rule and writing are
`trainguard.store.rank_end`'s.
"""

from __future__ import annotations

import time

from trainguard.local.outcome import exit_status
from trainguard.local.process import signal_name
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store import errors as store_errors
from trainguard.store import rank_end, run_format
from trainguard.store.runs import list_ranks, read_run_info


def close_ranks(
    ev: Evaluator, returncode: int, *, started_at: float, stopped_by: str | None
) -> dict[int, run_format.EndInfo]:
    """Give every rank of CMD's run an END.json that says how it ended, and return them by rank.

    `started_at` is the Unix time just before CMD started; `stopped_by` the rule that stopped CMD, if one
    did. A rank without an END gets `stopped`, `killed`, `crashed` or `ok` by how CMD ended; a rank whose hook
    wrote one gets CMD's exit status added, and `stopped`, `killed` or `crashed` where CMD's end says so. So `evaluate --follow`
    and readers see every rank end, and `inspect` and the report say how."""
    store = ev.store
    stopped = stopped_by is not None
    ours = run_format.attempt_id(started_at)
    # this run's ranks: those it wrote segments for, and every rank of its run.json (a rank that died
    # before its first segment); not the ranks an earlier run left on the same --out
    attempts = {r: ev.attempt_of(r) for r in list_ranks(store)}
    ranks = {r for r, a in attempts.items() if a is not None and a >= ours}
    try:
        info = read_run_info(store)
    except store_errors.StoreError:  # unreadable: the ranks with segments are all there is to go on
        info = None
    if info is not None and info.start_time >= started_at:
        ranks |= set(range(info.world_size))
    code = exit_status(returncode)
    sig = signal_name(returncode)
    out: dict[int, run_format.EndInfo] = {}
    for rank in sorted(ranks):
        # none, a damaged one (the supervisor knows how the rank ended) or an earlier run's: write one
        end = rank_end.current(store, rank, not_before=ours)
        if end is None:
            status = "stopped" if stopped else ("killed" if sig else "ok" if code == 0 else "crashed")
            reason = (
                f"the command was stopped by rule {stopped_by}"
                if stopped
                else f"the command ended (exit status {code}) before the rank's hook closed"
            )
            new = run_format.EndInfo(
                status=status, last_step=ev.rank_progress(rank)[0], wall_time=time.time(),
                written_by="supervisor", errors=[reason], exit_code=code, signal=sig,
                # this run's attempt: a later run on the same --out sees it as stale, not as its own end
                attempt=ev.attempt_of(rank) or ours,
            )  # fmt: skip
        else:
            assert isinstance(end, run_format.EndInfo)
            if end.exit_code is not None:
                out[rank] = end
                continue
            new = end.model_copy(
                update={"exit_code": code, "signal": sig, "status": _status(end, code, sig, stopped)}
            )
        rank_end.write(store, rank, new)
        out[rank] = new
    return out


def _status(end: run_format.EndInfo, code: int, sig: str | None, stopped: bool) -> str:
    """How a rank whose hook closed its run ended, now that CMD's exit is known: a stop rule's stop is
    `stopped` however the script left; a signal is `killed`; a failed command is `crashed` (its uncaught
    exception, if the hook saw one, is in `exception`); else what the hook wrote."""
    if stopped and end.status in ("ok", "stopped"):
        return "stopped"
    if sig and not stopped:
        return "killed"
    if code != 0 and not stopped and (end.status == "ok" or end.exception):
        return "crashed"
    return end.status
