"""`Evaluator`: follows a run, feeds every new step to the rules, and emits verdict transitions.

Used by `trainguard sidecar` (the ranks of one pod, Kubernetes), `trainguard evaluate` (offline)
and local mode (all ranks, in process). The constructor only validates and compiles the rules;
`open()` (called by the first poll if nobody called it) lists the run and loads the checkpoint.
Each `poll()` reads only what is new (listing after the last key), turns segments into StepViews
(`view_builder.py`), calls each rule instance in isolation (an exception sets that rule to Error and the
others go on), hands findings to the verdict state machine (`verdicts.py`), emits each transition
once, creates the stop file on a `stop` verdict, and checkpoints after each segment
(`checkpoint.py`). Which ranks are followed, and what is held per rank, is `_tracks.py`. Metrics
are read from it at scrape time by a `metrics.EvaluatorCollector`, which the caller builds and
registers; the HTTP server and status reports live in `server.py` and `report_status.py`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from trainguard.api.enums import Mode
from trainguard.api.rules_config import RuleSpec
from trainguard.rules.base import Finding
from trainguard.rules.step_view import StepView
from trainguard.sidecar import checkpoint as ckpt
from trainguard.sidecar import config, metrics, shard_merge
from trainguard.sidecar._tracks import Ranks, RankTrack
from trainguard.sidecar.running_auc import StreamSummary
from trainguard.sidecar.verdicts import (
    BLIND_HINT,
    DATA_GAP,
    STORE_HINT,
    ChecksNothing,
    RuleCounters,
    RuleStatus,
    Verdict,
    Verdicts,
)
from trainguard.stop_flag import request_stop
from trainguard.store import errors, run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.run_format import Segment
from trainguard.store.runs import open_run
from trainguard.store.source import Problem

__all__ = ["DATA_GAP", "Evaluator", "evaluate_stored"]

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_SECONDS = 1.0
"""While a followed rank brings nothing new, time-watching rules (stalled_training) get a heartbeat
view this often; their thresholds are minutes, so a second is plenty."""


class Evaluator:
    """Follows one rank, a given set of ranks, or all ranks of a run and evaluates the rules on every new step."""

    def __init__(
        self,
        run_uri: str,
        *,
        rules: Sequence[RuleSpec] | None = None,
        rank: int | None = None,
        ranks: Sequence[int] | None = None,
        store: Store | None = None,
        checkpoint: bool = True,
        clock: Callable[[], float] = time.time,
        stop_file: str | None = None,
        not_before: float | None = None,
        strict: bool = False,
    ) -> None:
        """`not_before`: when this evaluator's pod started (Unix time; the sidecar of a DebugJob pod). Writer
        attempts started before it are an earlier pod's of a retried Job: their segments are left to that
        pod's evaluator, their END does not end a rank, and a checkpoint's rules from them start over.
        `strict`: a rule whose `tensors` match no tensor of a rank is an Error there (else a warning).
        """
        if rank is not None and ranks is not None:
            raise ValueError("pass rank or ranks, not both")
        if ranks is not None and not ranks:
            raise ValueError("ranks is empty: pass None to follow every rank")
        self.run_uri = run_uri
        self.followed: tuple[int, ...] | None = (
            (rank,) if rank is not None else tuple(sorted(set(ranks))) if ranks is not None else None
        )
        """The ranks to follow (the ranks of one pod for the sidecar), or None for every rank."""
        self.store = store or open_store(run_uri)
        self.checkpoint_enabled = checkpoint
        self.clock = clock
        self.stop_file = stop_file
        self._not_before = run_format.attempt_id(not_before) if not_before is not None else None
        self.compiled = config.compile_rules(config.default_specs() if rules is None else list(rules))
        self.rule_names = [c.name for c in self.compiled]
        self._lock = threading.RLock()
        self._verdicts = Verdicts(self.compiled, clock=clock)
        self._ranks: Ranks | None = None
        self._tracks: dict[int, RankTrack] = {}
        """The followed ranks' tracks (the same dict as `Ranks.tracks` once opened)."""
        self._merger = shard_merge.ShardMerger()
        """Merges sharded tensors over the followed ranks before the rules see them (`shard_merge.py`)."""
        self._per_part_noted: set[str] = set()
        self._saved: ckpt.EvaluatorState | None = None
        self._unsavable: set[str] = set()
        self.ended = False
        self.timed_out = False
        self.last_error: str | None = None
        self.segments_total = 0
        self.views_total = 0
        """Steps given to the rules, with anything recorded (statistics or scalars)."""
        self.stats_views_total = 0
        """Of those, steps with tensor statistics (a saved step of the hook)."""
        self.lost_steps_total = 0
        """Steps the followed ranks' hooks report lost (segments after a gap, END.json)."""
        self.strict = strict
        self.warnings: list[str] = []
        """Configuration warnings met while evaluating (a rule's `tensors` that match nothing), once each."""
        self.corrupt_segments_total = 0
        self.lag_seconds: float | None = None
        self.last_evaluation_time: float | None = None
        self.durations = metrics.Histogram(metrics.DURATION_BUCKETS_SECONDS)

    def open(self) -> None:
        """Open the run and restore the checkpoint (I/O). Idempotent; the first `poll` calls it if nobody did."""
        if self._ranks is not None:
            return
        run = open_run(self.run_uri, store=self.store, wait=True)
        saved = ckpt.load(self.store, ckpt.key_for(self.followed)) if self.checkpoint_enabled else None
        with self._lock:
            self._saved = saved
            if saved is not None:
                self._verdicts.restore(saved)
            self._ranks = Ranks(
                self.store, run, followed=self.followed, compiled=self.compiled, not_before=self._not_before
            )
            self._tracks = self._ranks.tracks

    def _opened(self) -> Ranks:
        self.open()
        assert self._ranks is not None
        return self._ranks

    # --- public view of the state ----------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        """Every finding kept so far (the first MAX_FINDINGS_PER_RULE per rule), by step and rank."""
        self.open()
        with self._lock:
            return self._verdicts.findings()

    @property
    def rule_status(self) -> dict[str, RuleStatus]:
        """Each rule's state over every followed rank (the first transition wins)."""
        self.open()
        with self._lock:
            return dict(self._verdicts.status)

    def rank_status(self, rank: int) -> dict[str, RuleStatus]:
        """Each rule's state on one followed rank (all InProgress before the rank is followed)."""
        self.open()
        with self._lock:
            return dict(self._verdicts.rank_status.get(rank) or self._verdicts.fresh())

    def rank_progress(self, rank: int) -> tuple[int | None, bool]:
        """One followed rank's last evaluated step and whether it ended (END seen, everything evaluated)."""
        self.open()
        track = self._tracks.get(rank)
        if track is not None:
            return track.last_step, track.ended
        saved = self._saved.ranks.get(str(rank)) if self._saved else None  # restarted, not polled yet
        return (None, False) if saved is None else (saved.last_step, saved.ended)

    @property
    def tensors_declared(self) -> bool:
        """Whether a followed rank's catalogue names tensors (not only scalars): a hook registered a model."""
        return any(
            not t.is_scalar for tr in list(self._tracks.values()) for t in tr.source.catalogue().values()
        )

    @property
    def nothing_evaluated(self) -> str | None:
        """Why no step was evaluated, or None when some were: nothing was read at all, or tensors were
        registered but no step with their statistics was saved (a PyTorch hook without an optimizer)."""
        if self.views_total == 0:
            return "the run holds no step"
        if self.stats_views_total == 0 and self.tensors_declared:
            return (
                "the run holds no saved step with tensor statistics, only scalars (a PyTorch script must call "
                "hook.register_optimizer(optimizer): its steps count the saved steps)"
            )
        return None

    def attempt_of(self, rank: int) -> str | None:
        """The writer attempt of the newest segment evaluated from `rank` (None before its first one)."""
        track = self._tracks.get(rank)
        return None if track is None else track.attempt

    def ends(self) -> dict[int, run_format.EndInfo]:
        """The END.json of each followed rank that has a readable one."""
        out = {}
        for rank, track in sorted(self._tracks.items()):
            try:
                end = track.source.ended()
            except errors.StoreError:
                end = None
            if end is not None:
                out[rank] = end
        return out

    @property
    def unchecked_steps_total(self) -> int:
        """Steps the followed ranks' hooks saw go by without counting them: their blind markers' counts while
        they run, END.json `unchecked_steps` once they ended."""
        return sum(t.unchecked for t in list(self._tracks.values()))

    @property
    def stop_requested(self) -> bool:
        """Whether a stop verdict was issued (also before a restart)."""
        self.open()
        return self._verdicts.stop_requested

    @property
    def last_step(self) -> int | None:
        return None if self._ranks is None else self._ranks.last_step

    @property
    def run_format(self) -> str:
        """The format of the followed run: trainguard, smdebug or tensorboard."""
        return self._opened().run.format

    @property
    def ranks(self) -> list[int]:
        return sorted(self._tracks)

    @property
    def read_bytes_total(self) -> int:
        return 0 if self._ranks is None else self._ranks.read_bytes_total

    def counters(self) -> list[tuple[str, RuleCounters]]:
        """Per-rule counters (for metrics); read under the evaluator's lock."""
        return list(zip(self.rule_names, self._verdicts.counters))

    def last_views(self) -> list[StepView]:
        """The newest view with tensor statistics of each rank, lowest rank first."""
        return [] if self._ranks is None else self._ranks.last_views()

    def prediction_summary(self) -> dict[str, StreamSummary]:
        """AUC figures of the primary prediction stream by mode, from the lowest rank that has any."""
        return {} if self._ranks is None else self._ranks.prediction_summary()

    def last_loss(self) -> dict[Mode, float]:
        """The newest loss values by mode, from the lowest followed rank that has them."""
        return {} if self._ranks is None else self._ranks.last_loss()

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    # --- following ------------------------------------------------------------------------------
    def poll(
        self, *, on_verdict: Callable[[Verdict], None] | None = None, heartbeat: bool = False
    ) -> list[Verdict]:
        """Read what is new once, evaluate it and return the verdict transitions it caused.

        With `on_verdict`, each transition is handed over right after the segment that caused it
        and before that segment's checkpoint, so a crash repeats at most one segment's verdicts
        (idempotent sinks: stop file, status patch) and never loses one. With `heartbeat` (live
        following, as `run` does), a rank that brought nothing new gets a heartbeat view (its last
        step, the time now) for the rules that watch time, such as `stalled_training`.
        """
        ranks = self._opened()
        out: list[Verdict] = []
        out.extend(self._emit(self._discover(ranks), on_verdict))
        for track in [t for t in ranks.in_order() if not t.ended]:
            segments = track.source.poll()
            if not segments and self._ended(track, out, on_verdict):
                # END is written after the last segment; one more listing picks up any segment listed late.
                segments = track.source.poll()
                track.end_seen = True
            for seg in segments:
                if self._not_before is not None and seg.attempt and seg.attempt < self._not_before:
                    continue  # an earlier pod's trainer (a retried Job): left to that pod's evaluator
                out.extend(self._emit(self._evaluate_segment(track, seg), on_verdict))
                self._save()
            if heartbeat and not segments and not track.end_seen:
                beat = self._heartbeat(track)
                if beat:
                    out.extend(self._emit(beat, on_verdict))
                    self._save()
            out.extend(self._emit(self._note_problems(track), on_verdict))
            if track.end_seen:
                out.extend(self._emit(self._release(), on_verdict))
        for track in [t for t in ranks.in_order() if t.end_seen and not t.ended]:
            if self._merger.holds(track.rank):
                continue  # views waiting for other ranks' parts of sharded tensors: not done yet
            out.extend(self._emit(self._trailing_gap(track), on_verdict))
            track.ended = True
            self._finish_rank(track)
            self._save()
        if ranks.all_ended():
            out.extend(self._emit(self.finish(), on_verdict))
        return out

    def poll_until_idle(self, *, on_verdict: Callable[[Verdict], None] | None = None) -> None:
        """Poll until a poll brings nothing new or the evaluation ended: everything stored so far is evaluated."""
        before = -1
        while self.segments_total != before and not self.ended:
            before = self.segments_total
            self.poll(on_verdict=on_verdict)

    def _emit(self, verdicts: list[Verdict], on_verdict: Callable[[Verdict], None] | None) -> list[Verdict]:
        for v in verdicts:
            self._act(v)
            if on_verdict is not None:
                on_verdict(v)
        return verdicts

    def run(
        self,
        stop: threading.Event,
        on_verdict: Callable[[Verdict], None] | None = None,
        *,
        poll_interval_seconds: float = 0.25,
        idle_timeout_seconds: float = 3600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Poll until every followed rank ended, `stop` is set, or nothing new came for `idle_timeout_seconds`.

        The run is opened first (a failure to open it is raised); a store that fails later is retried
        at the poll interval (logged, and shown by `last_error`).
        """
        self.open()
        last_data = monotonic()
        while not stop.is_set():
            before = self.segments_total
            try:
                self.poll(on_verdict=on_verdict, heartbeat=True)
                self.last_error = None
            except errors.StoreError as err:
                if self.last_error != str(err):
                    log.warning("trainguard: reading %s failed: %s; retrying", self.run_uri, err)
                self.last_error = str(err)
            if self.ended:
                return
            if self.segments_total > before:
                last_data = monotonic()
                continue
            if monotonic() - last_data > idle_timeout_seconds:
                self.timed_out = True
                log.warning(
                    "trainguard: nothing new in %s for %.0f s; giving up", self.run_uri, idle_timeout_seconds
                )
                return
            stop.wait(poll_interval_seconds)

    def finish(self) -> list[Verdict]:
        """End the evaluation: rules still InProgress become NoIssuesFound. Idempotent."""
        ranks = self._opened()
        with self._lock:
            if self.ended and self._verdicts.all_decided():
                return []
            out = self._release(final=True)
            self.ended = True
            for track in ranks.tracks.values():
                self._finish_rank(track)
            step = self.last_step if self.last_step is not None else 0
            tracks = list(ranks.tracks.values())
            # a rule is not checked when no rank ever gave it what it reads
            unchecked = {
                c.name: tracks[0].rules[i].needs
                for i, c in enumerate(self.compiled)
                if tracks and not any(t.rules[i].checked for t in tracks)
            }
            out += self._verdicts.finish(
                step=step, rank=self.followed[0] if self.followed else 0, unchecked=unchecked
            )
            self._save()
        return out

    def _finish_rank(self, track: RankTrack) -> None:
        """One rank ended: its rules still InProgress there become NoIssuesFound on that rank."""
        unchecked = {c.name: rule.needs for c, rule in zip(self.compiled, track.rules) if not rule.checked}
        with self._lock:
            self._verdicts.finish_rank(track.rank, track.last_step, unchecked=unchecked)

    # --- internals ------------------------------------------------------------------------------
    def _discover(self, ranks: Ranks) -> list[Verdict]:
        """Open a track for each rank to follow that is not followed yet."""
        out: list[Verdict] = []
        for r in ranks.wanted():
            if r in ranks.tracks:
                continue
            saved = self._saved.ranks.get(str(r)) if self._saved else None
            earlier_pod = ranks.follow(r, saved)
            with self._lock:
                if earlier_pod:
                    self._verdicts.reopen_rank(r)
                self._verdicts.on_rank(r)  # restored statuses are there already
            if saved is not None and saved.held_from is not None and not earlier_pod:
                out += self._data_gap(
                    r, saved.held_from,
                    f"steps {saved.held_from}-{saved.last_step} of rank {r} were held for their sharded tensors' "
                    "other parts when the evaluator stopped; the restarted evaluator did not judge them",
                )  # fmt: skip
        return out

    def _new_attempt(self, track: RankTrack, attempt: str) -> None:
        """The rank was restarted on the same URI (a retried pod, a resumed run): its rules start over."""
        log.warning(
            "trainguard: rank %d was restarted (writer attempt %s after %s); its rules start over",
            track.rank, attempt, track.attempt,
        )  # fmt: skip
        track.restart(self.compiled)
        self._merger.forget(track.rank)
        with self._lock:
            self._verdicts.reopen_rank(track.rank)

    def _evaluate_segment(self, track: RankTrack, seg: Segment) -> list[Verdict]:
        started = time.perf_counter()
        verdicts: list[Verdict] = []
        with self._lock:
            if seg.attempt != track.attempt:
                if track.attempt is not None:
                    self._new_attempt(track, seg.attempt)
                track.attempt = seg.attempt
            if seg.lost_before.size:
                first, last, n = (int(x) for x in seg.lost_before)
                track.lost_seen = seg.lost_steps_total
                self.lost_steps_total += n
                verdicts += self._data_gap(
                    track.rank, first,
                    f"steps {first}-{last} of rank {track.rank} never reached the store ({n} steps lost: it "
                    "failed for longer than the hook's pending memory covers); the rules did not see them",
                )  # fmt: skip
            blind = seg.extra.get(run_format.BLIND_RECORD)
            if blind is not None and blind.size:
                since, unchecked = (int(x) for x in blind[-1])
                track.blind_spells[since] = unchecked
                track.unchecked = sum(track.blind_spells.values())
                verdicts += self._blind(track, since, f"{unchecked} steps so far")
            views = track.builder.views(seg, track.source.catalogue())
            if track.skip_through is not None:
                views = [v for v in views if v.step > track.skip_through]
            self.views_total += len(views)
            self.stats_views_total += sum(1 for v in views if v.names)
            if not track.patterns_checked and any(v.names for v in views):
                track.patterns_checked = True
                verdicts += self._check_patterns(track, next(v for v in views if v.names))
            if views:
                track.last_step = views[-1].step
            self._merger.replan(self._catalogues(), self._ranks.expected() if self._ranks else ())
            self._note_per_part()
            verdicts += self._judge(track, self._merger.take(track.rank, views))
            verdicts += self._release()
            now = self.clock()
            if seg.wall_time.size:
                self.lag_seconds = now - float(seg.wall_time[-1])
            self.last_evaluation_time = now
            self.segments_total += 1
            self.durations.observe(time.perf_counter() - started)
        return verdicts

    def _judge(self, track: RankTrack, views: list[StepView]) -> list[Verdict]:
        """Give each of `views` (one rank's, in step order) to the rank's rules."""
        verdicts: list[Verdict] = []
        for view in views:
            verdicts.extend(self._update_rules(track, view))
            if view.names:
                track.last_stats_view = view
            if view.predictions or view.eval_predictions:
                track.predictions.update(view)
        self._verdicts.count_evaluations(len(views))
        return verdicts

    def _note_per_part(self) -> None:
        """Say once which sharded tensors have parts on ranks not followed here (another pod's): they are judged
        per part, on the columns that hold for a part as for the whole."""
        new = sorted(self._merger.per_part - self._per_part_noted)
        if not new:
            return
        self._per_part_noted.update(new)
        shown = ", ".join(new[:3]) + (", ..." if len(new) > 3 else "")
        message = (
            f"{len(new)} sharded tensors ({shown}) have parts on ranks this evaluator does not follow; they are "
            f"judged per part on {', '.join(shard_merge.PER_PART_COLUMNS)} only (their norms, means and std are "
            "the whole tensor's only where every part is read: `trainguard evaluate` or `report` on the run)"
        )
        self.warnings.append(message)
        log.warning("trainguard: %s", message)

    def _catalogues(self) -> dict[int, shard_merge.Catalogue]:
        return {r: t.source.catalogue() for r, t in self._tracks.items()}

    def _release(self, *, final: bool = False) -> list[Verdict]:
        """Judge the views of sharded tensors' owners whose parts are all in (or will not come: a data gap)."""
        ended = {r for r, t in self._tracks.items() if t.end_seen or t.ended}
        with self._lock:
            views, gaps = self._merger.release(ended, final=final)
            verdicts: list[Verdict] = []
            for gap in gaps:
                verdicts += self._data_gap(gap.owner, gap.step, gap.message())
            for view in views:
                verdicts += self._judge(self._tracks[view.rank], [view])
        return verdicts

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

    def _heartbeat(self, track: RankTrack) -> list[Verdict]:
        """Send a heartbeat view to the rules that want one, at most every HEARTBEAT_INTERVAL_SECONDS."""
        now = self.clock()
        if track.last_step is None or now - track.last_heartbeat < HEARTBEAT_INTERVAL_SECONDS:
            return []
        track.last_heartbeat = now
        view = StepView(step=track.last_step, rank=track.rank, wall_time=now)
        with self._lock:
            return self._update_rules(track, view, heartbeat=True)

    def _act(self, verdict: Verdict) -> None:
        """Create the stop file for a STOP verdict (once per rule)."""
        if not self._verdicts.take_stop(verdict):
            return
        if self.stop_file:
            request_stop(self.stop_file, rule=verdict.rule, message=verdict.message)
        log.warning("trainguard: rule %s asks to stop the run: %s", verdict.rule, verdict.message)

    def _check_patterns(self, track: RankTrack, view: StepView) -> list[Verdict]:
        """At a rank's first saved step: a rule whose `tensors` match none of the rank's tensors and scalars
        checks nothing there. Say so once (a warning), or with `strict` make the rule an Error."""
        names = {t.name for t in track.source.catalogue().values()} | set(view.names)
        out: list[Verdict] = []
        for i, (c, rule) in enumerate(zip(self.compiled, track.rules)):
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
            self.warnings.append(message)
            log.warning("trainguard: %s", message)
            if self.strict:
                v = self._verdicts.on_error(i, track.rank, view, ChecksNothing(message))
                out += [v] if v is not None else []
        return out

    def _ended(
        self, track: RankTrack, out: list[Verdict], on_verdict: Callable[[Verdict], None] | None
    ) -> bool:
        """Whether the rank has an END; a damaged one ends it too (the writer got that far), as a data gap."""
        try:
            return track.source.ended() is not None
        except errors.FormatError as err:
            if not track.end_damaged:
                track.end_damaged = True
                gap = self._data_gap(
                    track.rank, track.last_step or 0, f"{err}; how rank {track.rank} ended is unknown"
                )
                out.extend(self._emit(gap, on_verdict))
            return True

    def _note_problems(self, track: RankTrack) -> list[Verdict]:
        """Each object the rank's reader skipped (damaged, gone) is a data gap: its steps went unchecked."""
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
            out += self._data_gap(track.rank, step, f"{message} ({span} of rank {track.rank} went unchecked)")
        return out

    def _trailing_gap(self, track: RankTrack) -> list[Verdict]:
        """Steps END.json counts as lost beyond the last gap a segment announced: lost at the end of the run."""
        try:
            end = track.source.ended()
        except errors.FormatError:
            return []  # reported as damaged by `_ended`
        if end is not None:
            track.unchecked = end.unchecked_steps
        out: list[Verdict] = []
        if end is not None and end.blind_since_step is not None:
            out += self._blind(
                track, end.blind_since_step, f"{end.unchecked_steps} steps in all, until it closed"
            )
        elif end is not None and end.unchecked_steps and track.blind_since is None:
            out += self._blind(track, end.last_step or 0, f"{end.unchecked_steps} steps in all")
        missing = 0 if end is None else end.lost_steps - track.lost_seen
        if missing <= 0:
            return out
        self.lost_steps_total += missing
        after = track.last_step if track.last_step is not None else 0
        return out + self._data_gap(
            track.rank, after,
            f"{missing} steps of rank {track.rank} after step {after} never reached the store (END.json "
            "lost_steps: the store failed until the rank closed); the rules did not see them",
        )  # fmt: skip

    def _blind(self, track: RankTrack, since: int, how_many: str) -> list[Verdict]:
        """The rank's hook went blind at step `since` (a marker in a segment, or END.json): a data gap, once per
        blind spell."""
        if track.blind_since == since:
            return []
        track.blind_since = since
        return self._data_gap(
            track.rank, since,
            f"rank {track.rank} blind since step {since}: training went on ({how_many}) but the hook counted no "
            "step, so the rules did not see them; an optimizer that is not registered with the hook (or was "
            "replaced) steps the captured parameters, or no optimizer steps at all",
            hint=BLIND_HINT,
        )  # fmt: skip

    def _data_gap(self, rank: int, step: int, message: str, *, hint: str = STORE_HINT) -> list[Verdict]:
        log.warning("trainguard: %s", message)
        with self._lock:
            return self._verdicts.data_gap(rank, step, message, hint=hint)

    def _save(self) -> None:
        if self.checkpoint_enabled:
            self.save_checkpoint()

    def save_checkpoint(self) -> None:
        """Write the checkpoint now, also when this evaluator does not checkpoint as it goes: local mode leaves
        its final verdicts in the run so, for `trainguard ls` and a later `evaluate --checkpoint`."""
        with self._lock:
            state = ckpt.EvaluatorState(
                ranks={
                    str(r): ckpt.RankPosition(
                        last_key=getattr(t.source, "last_key", None),
                        last_step=t.last_step,
                        ended=t.ended,
                        rules={
                            c.name: rule.state_dict()
                            for c, rule in zip(self.compiled, t.rules)
                            if c.name not in self._unsavable
                        },
                        statuses=self._verdicts.rank_docs(r),
                        held_from=self._merger.held_from(r),
                    )
                    for r, t in self._tracks.items()
                },
                statuses=self._verdicts.status_docs(),
                findings=self._verdicts.finding_docs(),
                stop_requested=self._verdicts.stop_requested,
            )
        try:
            ckpt.save(self.store, ckpt.key_for(self.followed), state)
        except (TypeError, ValueError):
            # A rule whose state is not JSON must not stop checkpoints for the others: drop it, say so once.
            for position in state.ranks.values():
                for name, rule_state in list(position.rules.items()):
                    why = ckpt.unsavable(rule_state)
                    if why is not None:
                        log.error(
                            "trainguard: the state of rule %s cannot be checkpointed (%s); it restarts fresh",
                            name,
                            why,
                        )
                        self._unsavable.add(name)
                        del position.rules[name]
            ckpt.save(self.store, ckpt.key_for(self.followed), state)


def evaluate_stored(uri: str, *, attempt: str | None = None) -> list[Finding]:
    """Evaluate a stored run once with the default rules and return every finding kept (with `attempt`: of
    the writer attempts from that one on only), as `trainguard report` marks them."""
    ev = Evaluator(
        uri, checkpoint=False, not_before=None if attempt is None else run_format.attempt_time(attempt)
    )
    ev.poll_until_idle()
    return ev.findings
