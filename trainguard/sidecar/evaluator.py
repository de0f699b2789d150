"""`Evaluator`: follows a run, feeds every new step to the rules, and emits verdict transitions.

Used by `trainguard sidecar` (the ranks of one pod, Kubernetes), `trainguard evaluate` (offline)
and local mode (all ranks, in process). The constructor only validates and compiles the rules;
`open()` (called by the first poll if nobody called it) lists the run and loads the checkpoint.
Each `poll()` reads only what is new (listing after the last key), turns segments into StepViews
(`view_builder.py`), has them judged (`judging.py`: each rule instance in isolation, sharded
tensors merged, findings to the verdict state machine of `verdicts.py`), reports what went unseen
(`data_gaps.py`) and how ranks end (`rank_ends.py`), emits each transition once, creates the stop
file on a `stop` verdict, and checkpoints after each segment (`checkpointer.py`). Which ranks are
followed, and what is held per rank, is `_tracks.py`. This class is the facade over them. Metrics
are read from it at scrape time by a `metrics.EvaluatorCollector`, which the caller builds and
registers; the HTTP server and status reports live in `server.py` and `report_status.py`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from trainguard.api.enums import Mode, RunEnd
from trainguard.api.rules_config import RuleSpec
from trainguard.rules.base import Finding
from trainguard.rules.step_view import StepView
from trainguard.sidecar import config, metrics
from trainguard.sidecar._tracks import Ranks, RankTrack
from trainguard.sidecar.checkpointer import Checkpointer
from trainguard.sidecar.data_gaps import DataGaps
from trainguard.sidecar.judging import Judge
from trainguard.sidecar.rank_ends import RankEnds
from trainguard.sidecar.running_auc import StreamSummary
from trainguard.sidecar.verdicts import DATA_GAP, RuleCounters, RuleStatus, Verdict, Verdicts
from trainguard.stop_flag import request_stop, watched
from trainguard.store import errors, listing, run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.run_format import Segment
from trainguard.store.runs import open_run

__all__ = ["DATA_GAP", "Evaluator", "RuleStatus", "evaluate_stored"]

log = logging.getLogger(__name__)


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
        acts: bool = True,
    ) -> None:
        """`not_before`: when this evaluator's pod started (Unix time; the sidecar of a DebugJob pod). Writer
        attempts started before it are an earlier pod's of a retried Job: their segments are left to that
        pod's evaluator, their END does not end a rank, and a checkpoint's rules from them start over.
        `strict`: a rule whose `tensors` match no tensor of a rank is an Error there (else a warning).
        `acts`: False when nothing acts on a stop verdict (a stored run evaluated again by `trainguard evaluate`
        or `report`): no log line then says that a rule asks to stop the run.
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
        self.clock = clock
        self.stop_file = stop_file
        self.acts = acts
        self._not_before = run_format.attempt_id(not_before) if not_before is not None else None
        self.compiled = config.compile_rules(config.default_specs() if rules is None else list(rules))
        self.rule_names = [c.name for c in self.compiled]
        self._lock = threading.RLock()
        self._verdicts = Verdicts(self.compiled, clock=clock)
        self._ranks: Ranks | None = None
        self._tracks: dict[int, RankTrack] = {}
        """The followed ranks' tracks (the same dict as `Ranks.tracks` once opened)."""
        self._checkpointer = Checkpointer(self.store, self.followed, self._lock, enabled=checkpoint)
        self._gaps = DataGaps(self._verdicts, self._lock)
        self._end = RankEnds(self.compiled, self._verdicts, self._gaps, self._lock)
        self.ended = False
        self.timed_out = False
        self.last_error: str | None = None
        self.segments_total = 0
        self.views_total = 0
        """Steps given to the rules, with anything recorded (statistics or scalars)."""
        self.stats_views_total = 0
        """Of those, steps with tensor statistics (a saved step of the hook)."""
        self.strict = strict
        self.warnings: list[str] = []
        """Configuration warnings met while evaluating (a rule's `tensors` that match nothing), once each."""
        self._judge = Judge(
            self.compiled, self._verdicts, self._gaps, self._lock, strict=strict, warnings=self.warnings
        )
        self.lag_seconds: float | None = None
        self.last_evaluation_time: float | None = None
        self.durations = metrics.Histogram(metrics.DURATION_BUCKETS_SECONDS)

    def open(self) -> None:
        """Open the run and restore the checkpoint (I/O). Idempotent; the first `poll` calls it if nobody did."""
        if self._ranks is not None:
            return
        run = open_run(self.run_uri, store=self.store, wait=True)
        saved = self._checkpointer.load()
        with self._lock:
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
        saved = self._checkpointer.position(rank)  # restarted, not polled yet
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
    def run_end(self) -> RunEnd | None:
        """How the run ended once every followed rank ended or the evaluation was finished (None before, or while
        a rank's END is unknown): `listing.run_end` over the ENDs read, as `trainguard ls` decides it, with a stop
        this evaluator issued, and `blind` when an ok run had nothing evaluated, as `trainguard run` says."""
        if self._ranks is None or not (self.ended or self._ranks.all_ended()):
            return None
        ends = {t.rank: t.end for t in list(self._tracks.values())}
        end = listing.run_end(ends, stop_issued=self._verdicts.stop_requested)
        return RunEnd.BLIND if end is RunEnd.OK and self.nothing_evaluated else end

    def take_ends(self, ends: Mapping[int, run_format.EndInfo]) -> None:
        """Take the ENDs `trainguard run` completed after CMD exited (its exit status, `stopped`, `crashed`): a
        rank may have ended here on its hook's own END before, which did not know how the command ended."""
        with self._lock:
            for rank, end in ends.items():
                track = self._tracks.get(rank)
                if track is not None:
                    track.end = end

    @property
    def checkpoint_enabled(self) -> bool:
        """Whether a checkpoint is restored on open and written after each segment."""
        return self._checkpointer.enabled

    @property
    def lost_steps_total(self) -> int:
        """Steps the followed ranks' hooks report lost (segments after a gap, END.json)."""
        return self._gaps.lost_steps_total

    @property
    def corrupt_segments_total(self) -> int:
        """Objects the followed ranks' readers skipped (damaged, gone)."""
        return self._gaps.corrupt_segments_total

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
    def stop_watched(self) -> bool:
        """Whether a trainer polls the stop file (`hook.should_stop()`): a stop can wait for it to end by itself."""
        return bool(self.stop_file and watched(self.stop_file))

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
        polled: list[tuple[RankTrack, list[Segment]]] = []
        for track in [t for t in ranks.in_order() if not t.ended]:
            segments = track.source.poll()
            ended, damaged = self._end.seen(track) if not segments else (False, [])
            out.extend(self._emit(damaged, on_verdict))
            if ended:
                # END is written after the last segment; one more listing picks up any segment listed late.
                segments = track.source.poll()
                track.end_seen = True
            polled.append((track, segments))
        # the ranks' new segments in turns, one of each rank at a time: a rank's many segments (a stored run read
        # at once) never get far ahead of the others', whose parts of sharded tensors its held views wait for
        for track, seg in _in_turns(polled):
            if self._not_before is not None and seg.attempt and seg.attempt < self._not_before:
                continue  # an earlier pod's trainer (a retried Job): left to that pod's evaluator
            out.extend(self._emit(self._evaluate_segment(track, seg), on_verdict))
            self._save()
        for track, segments in polled:
            if heartbeat and not segments and not track.end_seen:
                beat = self._judge.heartbeat(track, self.clock())
                if beat:
                    out.extend(self._emit(beat, on_verdict))
                    self._save()
            out.extend(self._emit(self._gaps.skipped(track), on_verdict))
            if track.end_seen:
                out.extend(self._emit(self._judge.release(self._tracks), on_verdict))
        for track in [t for t in ranks.in_order() if t.end_seen and not t.ended]:
            if self._judge.merger.holds(track.rank):
                continue  # views waiting for other ranks' parts of sharded tensors: not done yet
            out.extend(self._emit(self._end.end_rank(track), on_verdict))
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
            out = self._judge.release(self._tracks, final=True)
            self.ended = True
            step = self.last_step if self.last_step is not None else 0
            rank = self.followed[0] if self.followed else 0
            out += self._end.finish(list(ranks.tracks.values()), step=step, rank=rank)
            self._save()
        return out

    # --- internals ------------------------------------------------------------------------------
    def _discover(self, ranks: Ranks) -> list[Verdict]:
        """Open a track for each rank to follow that is not followed yet."""
        out: list[Verdict] = []
        for r in ranks.wanted():
            if r in ranks.tracks:
                continue
            saved = self._checkpointer.position(r)
            earlier_pod = ranks.follow(r, saved)
            with self._lock:
                if earlier_pod:
                    self._verdicts.reopen_rank(r)
                self._verdicts.on_rank(r)  # restored statuses are there already
            if saved is not None and not earlier_pod:
                out += self._gaps.held(r, saved)
        return out

    def _new_attempt(self, track: RankTrack, attempt: str) -> None:
        """The rank was restarted on the same URI (a retried pod, a resumed run): its rules start over."""
        log.warning(
            "trainguard: rank %d was restarted (writer attempt %s after %s); its rules start over",
            track.rank, attempt, track.attempt,
        )  # fmt: skip
        track.restart(self.compiled)
        self._judge.merger.forget(track.rank)
        with self._lock:
            self._verdicts.reopen_rank(track.rank)

    def _evaluate_segment(self, track: RankTrack, seg: Segment) -> list[Verdict]:
        started = time.perf_counter()
        with self._lock:
            if seg.attempt != track.attempt:
                if track.attempt is not None:
                    self._new_attempt(track, seg.attempt)
                track.attempt = seg.attempt
            verdicts = self._gaps.in_segment(track, seg)
            views = track.builder.views(seg, track.source.catalogue())
            if track.skip_through is not None:
                views = [v for v in views if v.step > track.skip_through]
            self.views_total += len(views)
            self.stats_views_total += sum(1 for v in views if v.names)
            if views:
                track.last_step = views[-1].step
            expected = self._ranks.expected() if self._ranks else ()
            verdicts += self._judge.views(track, views, self._tracks, expected)
            now = self.clock()
            if seg.wall_time.size:
                self.lag_seconds = now - float(seg.wall_time[-1])
            self.last_evaluation_time = now
            self.segments_total += 1
            self.durations.observe(time.perf_counter() - started)
        return verdicts

    def _act(self, verdict: Verdict) -> None:
        """Create the stop file for a STOP verdict (once per rule)."""
        if not self._verdicts.take_stop(verdict):
            return
        if self.stop_file:
            request_stop(self.stop_file, rule=verdict.rule, message=verdict.message)
        if self.acts:
            log.warning("trainguard: rule %s asks to stop the run: %s", verdict.rule, verdict.message)

    def _save(self) -> None:
        if self.checkpoint_enabled:
            self.save_checkpoint()

    def save_checkpoint(self) -> None:
        """Write the checkpoint now, also when this evaluator does not checkpoint as it goes: local mode leaves
        its final verdicts in the run so, for `trainguard ls` and a later `evaluate --checkpoint`."""
        self._checkpointer.save(self._tracks, self.compiled, self._verdicts, self._judge.merger)


def _in_turns(polled: list[tuple[RankTrack, list[Segment]]]) -> list[tuple[RankTrack, Segment]]:
    """Each rank's segments in its order, the ranks taking turns: the first of each, then the second of each, ..."""
    longest = max((len(segments) for _, segments in polled), default=0)
    return [(track, segments[i]) for i in range(longest) for track, segments in polled if i < len(segments)]


def evaluate_stored(uri: str, *, attempt: str | None = None) -> list[Finding]:
    """Evaluate a stored run once with the default rules and return every finding kept (with `attempt`: of
    the writer attempts from that one on only), as `trainguard report` marks them."""
    ev = Evaluator(
        uri,
        checkpoint=False,
        not_before=None if attempt is None else run_format.attempt_time(attempt),
        acts=False,
    )
    ev.poll_until_idle()
    return ev.findings
