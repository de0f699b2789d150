"""The end of a run: reading a followed rank's END, ending a rank, and ending the evaluation.

A rank ends when its END.json is there (written after its last segment) and every segment was
evaluated; a damaged END ends it too (the writer got that far), as a data gap. When it ends, what
END.json counts as unseen becomes data gaps (`data_gaps.py`), and its rules still InProgress there
become NoIssuesFound on that rank, or "not checked" when the rank never gave a rule what it reads.
When the evaluation ends, a rule still InProgress becomes NoIssuesFound, or not checked when no rank
ever gave it what it reads. When this is done is the evaluator's (`evaluator.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Collection

from trainguard.sidecar._tracks import RankTrack
from trainguard.sidecar.config import CompiledRule
from trainguard.sidecar.data_gaps import DataGaps
from trainguard.sidecar.verdicts import Verdict, Verdicts
from trainguard.store import errors


class RankEnds:
    """Reads the followed ranks' END and turns the end of a rank, or of the evaluation, into verdicts."""

    def __init__(
        self, compiled: list[CompiledRule], verdicts: Verdicts, gaps: DataGaps, lock: threading.RLock
    ) -> None:
        self._compiled = compiled
        self._verdicts = verdicts
        self._gaps = gaps
        self._lock = lock

    def seen(self, track: RankTrack) -> tuple[bool, list[Verdict]]:
        """Whether the rank has an END, and the data gap of a damaged one (reported once: how it ended is
        unknown, but it ended)."""
        try:
            return track.source.ended() is not None, []
        except errors.FormatError as err:
            if track.end_damaged:
                return True, []
            track.end_damaged = True
            return True, self._gaps.gap(
                track.rank, track.last_step or 0, f"{err}; how rank {track.rank} ended is unknown"
            )

    def end_rank(self, track: RankTrack) -> list[Verdict]:
        """The rank's END was seen and all it wrote was judged: what END.json counts as unseen is a data gap,
        and the rank's rules are finished there."""
        try:
            end = track.source.ended()
        except errors.FormatError:
            end = None  # reported as damaged by `seen`
        out = [] if end is None else self._gaps.at_end(track, end)
        track.ended, track.end = True, end
        self.finish_rank(track)
        return out

    def finish_rank(self, track: RankTrack) -> None:
        """One rank ended: its rules still InProgress there become NoIssuesFound on that rank (or not checked)."""
        unchecked = {c.name: rule.needs for c, rule in zip(self._compiled, track.rules) if not rule.checked}
        with self._lock:
            self._verdicts.finish_rank(track.rank, track.last_step, unchecked=unchecked)

    def finish(self, tracks: Collection[RankTrack], *, step: int, rank: int) -> list[Verdict]:
        """The evaluation ends at `step`: every rank's rules are finished, then the rules over all of them; a
        rule is not checked when no rank ever gave it what it reads."""
        for track in tracks:
            self.finish_rank(track)
        listed = list(tracks)
        unchecked = {
            c.name: listed[0].rules[i].needs
            for i, c in enumerate(self._compiled)
            if listed and not any(t.rules[i].checked for t in listed)
        }
        with self._lock:
            return self._verdicts.finish(step=step, rank=rank, unchecked=unchecked)
