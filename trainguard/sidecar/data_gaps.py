"""Data gaps: steps of a followed rank that the rules did not see, each reported as a DATA_GAP finding.

A gap is one of: steps the hook reports lost (a segment's `lost_before`, END.json's `lost_steps` beyond
the last announced gap), objects the rank's reader skipped (damaged, gone), blind spells of the hook
(training went on but the hook counted no step: a marker in a segment, END.json's `blind_since_step`),
steps held for sharded tensors' other parts when an earlier evaluator stopped, and a damaged END.json.
`DataGaps` words each one, logs it, hands it to the verdict state machine (`verdicts.py`) and keeps the
counters the metrics show (lost steps, skipped segments). It decides nothing else: when a gap is
looked for is the evaluator's (`evaluator.py`) and the end of a run's (`rank_ends.py`).
"""

from __future__ import annotations

import logging
import threading

from trainguard.sidecar import checkpoint as ckpt
from trainguard.sidecar._tracks import RankTrack
from trainguard.sidecar.verdicts import BLIND_HINT, STORE_HINT, Verdict, Verdicts
from trainguard.store import run_format
from trainguard.store.run_format import Segment
from trainguard.store.source import Problem

log = logging.getLogger(__name__)


class DataGaps:
    """Reports the steps the rules did not see as data gaps, and counts lost steps and skipped segments."""

    def __init__(self, verdicts: Verdicts, lock: threading.RLock) -> None:
        self._verdicts = verdicts
        self._lock = lock
        self.lost_steps_total = 0
        """Steps the followed ranks' hooks report lost (segments after a gap, END.json)."""
        self.corrupt_segments_total = 0
        """Objects the followed ranks' readers skipped (damaged, gone)."""

    def gap(self, rank: int, step: int, message: str, *, hint: str = STORE_HINT) -> list[Verdict]:
        """One data gap of `rank` at `step`: logged, and a DATA_GAP finding (its transition, if any)."""
        log.warning("trainguard: %s", message)
        with self._lock:
            return self._verdicts.data_gap(rank, step, message, hint=hint)

    def in_segment(self, track: RankTrack, seg: Segment) -> list[Verdict]:
        """What a segment says went unseen before it: steps lost by the hook, the blind marker's spell."""
        out: list[Verdict] = []
        if seg.lost_before.size:
            first, last, n = (int(x) for x in seg.lost_before)
            track.lost_seen = seg.lost_steps_total
            self.lost_steps_total += n
            out += self.gap(
                track.rank, first,
                f"steps {first}-{last} of rank {track.rank} never reached the store ({n} steps lost: it "
                "failed for longer than the hook's pending memory covers); the rules did not see them",
            )  # fmt: skip
        blind = seg.extra.get(run_format.BLIND_RECORD)
        if blind is not None and blind.size:
            since, unchecked = (int(x) for x in blind[-1])
            track.blind_spells[since] = unchecked
            track.unchecked = sum(track.blind_spells.values())
            out += self.blind(track, since, f"{unchecked} steps so far")
        return out

    def skipped(self, track: RankTrack) -> list[Verdict]:
        """Each object the rank's reader skipped (damaged, gone) since last asked: its steps went unchecked."""
        problems = track.source.problems
        new = problems[track.problems_seen :]
        self.corrupt_segments_total += len(new)
        track.problems_seen = len(problems)
        out: list[Verdict] = []
        for message in new:
            # the reader says which segment it skipped (a Problem); a foreign reader's messages name none
            name = message.segment if isinstance(message, Problem) else None
            step = name.first_step if name else (track.last_step or 0)
            span = f"steps {name.first_step}-{name.last_step}" if name else "its steps"
            out += self.gap(track.rank, step, f"{message} ({span} of rank {track.rank} went unchecked)")
        return out

    def held(self, rank: int, saved: ckpt.RankPosition) -> list[Verdict]:
        """Steps a stopped evaluator held for sharded tensors' other parts: the restarted one does not judge them."""
        if saved.held_from is None:
            return []
        return self.gap(
            rank, saved.held_from,
            f"steps {saved.held_from}-{saved.last_step} of rank {rank} were held for their sharded tensors' "
            "other parts when the evaluator stopped; the restarted evaluator did not judge them",
        )  # fmt: skip

    def at_end(self, track: RankTrack, end: run_format.EndInfo) -> list[Verdict]:
        """What END.json says went unseen: the blind spell it closed, steps lost beyond the last announced gap
        (lost at the end of the run). Its `unchecked_steps` replaces the markers' count."""
        track.unchecked = end.unchecked_steps
        out: list[Verdict] = []
        if end.blind_since_step is not None:
            out += self.blind(
                track, end.blind_since_step, f"{end.unchecked_steps} steps in all, until it closed"
            )
        elif end.unchecked_steps and track.blind_since is None:
            out += self.blind(track, end.last_step or 0, f"{end.unchecked_steps} steps in all")
        missing = end.lost_steps - track.lost_seen
        if missing <= 0:
            return out
        self.lost_steps_total += missing
        after = track.last_step if track.last_step is not None else 0
        return out + self.gap(
            track.rank, after,
            f"{missing} steps of rank {track.rank} after step {after} never reached the store (END.json "
            "lost_steps: the store failed until the rank closed); the rules did not see them",
        )  # fmt: skip

    def blind(self, track: RankTrack, since: int, how_many: str) -> list[Verdict]:
        """The rank's hook went blind at step `since` (a marker in a segment, or END.json): a data gap, once per
        blind spell."""
        if track.blind_since == since:
            return []
        track.blind_since = since
        return self.gap(
            track.rank, since,
            f"rank {track.rank} blind since step {since}: training went on ({how_many}) but the hook counted no "
            "step, so the rules did not see them; an optimizer that is not registered with the hook (or was "
            "replaced) steps the captured parameters, or no optimizer steps at all",
            hint=BLIND_HINT,
        )  # fmt: skip
