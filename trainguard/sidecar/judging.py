"""Judging: giving a followed rank's step views to its rules and turning what they find into verdicts.

`Judge` calls each rule instance of a rank in isolation (an exception sets that rule to Error there and
the others go on), hands findings to the verdict state machine (`verdicts.py`), sends heartbeat views
to the rules that watch time, checks once per rank that each rule's `tensors` match something (a
warning, or an Error with `strict`), and passes views through the shard merger (`shard_merge.py`)
so that the rules see a sharded tensor whole where every part is followed; and gives saved steps to
the one check that compares ranks (`same_data.py`: the same data on every rank), beside the rules.
Reading segments, data gaps and the end of a run are elsewhere (`evaluator.py`, `data_gaps.py`,
`rank_ends.py`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection

from trainguard.rules.step_view import StepView
from trainguard.sidecar import shard_merge
from trainguard.sidecar._tracks import RankTrack
from trainguard.sidecar.config import CompiledRule
from trainguard.sidecar.data_gaps import DataGaps
from trainguard.sidecar.same_data import CHECK as SAME_DATA
from trainguard.sidecar.same_data import SameData
from trainguard.sidecar.verdicts import ChecksNothing, Verdict, Verdicts

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_SECONDS = 1.0
"""While a followed rank brings nothing new, time-watching rules (stalled_training) get a heartbeat
view this often; their thresholds are minutes, so a second is plenty."""


class Judge:
    """Gives views to the rules of the followed ranks, through the shard merger, and returns the transitions."""

    def __init__(
        self,
        compiled: list[CompiledRule],
        verdicts: Verdicts,
        gaps: DataGaps,
        lock: threading.RLock,
        *,
        strict: bool,
        warnings: list[str],
    ) -> None:
        """`warnings`: the evaluator's list of configuration warnings, appended to once each."""
        self._compiled = compiled
        self._verdicts = verdicts
        self._gaps = gaps
        self._lock = lock
        self._strict = strict
        self._warnings = warnings
        self.merger = shard_merge.ShardMerger()
        """Merges sharded tensors over the followed ranks before the rules see them."""
        self._per_part_noted: set[str] = set()
        self._units_noted: set[str] = set()
        self.same_data = SameData()
        """The evaluator's cross-rank check: do the followed ranks train on the same data?"""

    def views(
        self, track: RankTrack, views: list[StepView], tracks: dict[int, RankTrack], expected: Collection[int]
    ) -> list[Verdict]:
        """A segment's views of `track` (in step order): judged now, or held until their sharded tensors'
        other parts are in; then whatever other ranks held that is now whole."""
        out: list[Verdict] = []
        if not track.patterns_checked and any(v.names for v in views):
            track.patterns_checked = True
            out += self._check_patterns(track, next(v for v in views if v.names))
        self.merger.replan({r: t.source.catalogue() for r, t in tracks.items()}, expected)
        self._note_per_part()
        out += self._judge(track, self.merger.take(track.rank, views))
        return out + self.release(tracks)

    def release(self, tracks: dict[int, RankTrack], *, final: bool = False) -> list[Verdict]:
        """Judge the views of sharded tensors' owners whose parts are all in (or will not come: a data gap)."""
        ended = {r for r, t in tracks.items() if t.end_seen or t.ended}
        with self._lock:
            views, gaps = self.merger.release(ended, final=final)
            verdicts: list[Verdict] = []
            for gap in gaps:
                verdicts += self._gaps.gap(gap.owner, gap.step, gap.message())
            for view in views:
                verdicts += self._judge(tracks[view.rank], [view])
        return verdicts

    def heartbeat(self, track: RankTrack, now: float) -> list[Verdict]:
        """A heartbeat view (the rank's last step, the time now) for the rules that want one, at most every
        HEARTBEAT_INTERVAL_SECONDS."""
        if track.last_step is None or now - track.last_heartbeat < HEARTBEAT_INTERVAL_SECONDS:
            return []
        track.last_heartbeat = now
        view = StepView(step=track.last_step, rank=track.rank, wall_time=now)
        with self._lock:
            return self._update_rules(track, view, heartbeat=True)

    def _judge(self, track: RankTrack, views: list[StepView]) -> list[Verdict]:
        """Give each of `views` (one rank's, in step order) to the rank's rules."""
        verdicts: list[Verdict] = []
        for view in views:
            verdicts.extend(self._update_rules(track, view))
            if view.names:
                track.last_stats_view = view
            if view.predictions or view.eval_predictions:
                track.predictions.update(view)
            if view.names and not self.same_data.found and SAME_DATA not in self._verdicts.status:
                verdicts.extend(self._same_data(view))
        self._verdicts.count_evaluations(len(views))
        return verdicts

    def _same_data(self, view: StepView) -> list[Verdict]:
        """Give a saved step to the cross-rank check that the ranks train on different data (`same_data.py`)."""
        finding = self.same_data.add(view)
        if finding is None:
            return []
        log.warning("trainguard: %s", finding.message)
        return self._verdicts.own_check(finding)

    def _update_rules(self, track: RankTrack, view: StepView, *, heartbeat: bool = False) -> list[Verdict]:
        """Give `view` to each of the track's rules (with `heartbeat`, only those that want one), each in
        isolation: one rule's exception sets it to Error and the others go on."""
        verdicts: list[Verdict] = []
        for i, rule in enumerate(track.rules):
            if heartbeat and not rule.wants_heartbeat:
                continue
            try:
                found = rule.update(view)
            except Exception as err:  # noqa: BLE001 - one rule's failure must not stop the others
                v = self._verdicts.on_error(i, track.rank, view, err)
                if v is not None:
                    log.error("trainguard: %s; the other rules go on", v.message)
                    verdicts.append(v)
                continue
            if found:
                verdicts.extend(self._verdicts.on_findings(i, track.rank, found))
        return verdicts

    def _note_per_part(self) -> None:
        """Say once which sharded tensors have parts on ranks not followed here (another pod's): they are judged
        per part, on the columns that hold for a part as for the whole; and which merged tensors' per-unit vectors
        are judged per shard (their parts hold pieces of every row), with why."""
        per_shard = self.merger.units_per_shard
        fresh = sorted(set(per_shard) - self._units_noted)
        if fresh:
            self._units_noted.update(fresh)
            shown = "; ".join(f"{n}: {per_shard[n]}" for n in fresh[:3]) + ("; ..." if len(fresh) > 3 else "")
            self._warn(
                f"the per-unit vectors of {len(fresh)} sharded tensors are judged per shard, not merged ({shown}); "
                "their statistics and histograms are the full tensor's"
            )
        new = sorted(self.merger.per_part - self._per_part_noted)
        if not new:
            return
        self._per_part_noted.update(new)
        shown = ", ".join(new[:3]) + (", ..." if len(new) > 3 else "")
        self._warn(
            f"{len(new)} sharded tensors ({shown}) have parts on ranks this evaluator does not follow; they are "
            f"judged per part on {', '.join(shard_merge.PER_PART_COLUMNS)} only (their norms, means and std are "
            "the whole tensor's only where every part is read: `trainguard evaluate` or `report` on the run)"
        )

    def _check_patterns(self, track: RankTrack, view: StepView) -> list[Verdict]:
        """At a rank's first saved step: a rule whose `tensors` match none of the rank's tensors and scalars
        checks nothing there. Say so once (a warning), or with `strict` make the rule an Error."""
        names = {t.name for t in track.source.catalogue().values()} | set(view.names)
        out: list[Verdict] = []
        for i, (c, rule) in enumerate(zip(self._compiled, track.rules)):
            pattern = rule.pattern
            if (
                pattern is None
                or any(pattern.search(n) for n in names)
                or c.name in self._verdicts.checks_nothing
            ):
                continue
            shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
            asked = c.spec.tensors or rule.params.tensor_regex or [pattern.pattern]
            message = (
                f"{c.name}: its tensors {list(asked)} match none of the {len(names)} tensors and scalars of "
                f"rank {track.rank} ({shown}); it checks nothing. Fix `tensors` in the rules file"
            )
            self._verdicts.checks_nothing[c.name] = message
            self._warn(message)
            if self._strict:
                v = self._verdicts.on_error(i, track.rank, view, ChecksNothing(message))
                out += [v] if v is not None else []
        return out

    def _warn(self, message: str) -> None:
        self._warnings.append(message)
        log.warning("trainguard: %s", message)
