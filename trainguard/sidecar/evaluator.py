"""`Evaluator`: follows a run, feeds every new step to the rules, and emits verdict transitions.

Used by `trainguard sidecar` (the ranks of one pod, Kubernetes), `trainguard evaluate` (offline)
and local mode (all ranks, in process). Each `poll()` reads only what is new (listing after the
last key), turns segments into StepViews (`views.py`), calls each rule instance in isolation (an
exception sets that rule to Error and the others go on), turns findings into per-rule state
transitions (InProgress -> IssuesFound / Error / NoIssuesFound) emitted once each, creates the
stop file on a `stop` verdict, and checkpoints after each segment (`checkpoint.py`). Verdicts are
per rule over every followed rank (the first rank to trigger a rule emits its transition); each
followed rank also keeps its own rule states (`rank_status`), which the sidecar reports under that
rank's key. Metrics are read from it at scrape time (`metrics.py`); the HTTP server and status
reports live in `server.py` and `report_status.py`.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import prometheus_client

from trainguard.api.enums import Action, Mode, RuleState, Severity
from trainguard.api.rules_config import RuleSpec
from trainguard.rules.base import Finding, Rule
from trainguard.rules.view import StepView
from trainguard.sidecar import checkpoint as ckpt
from trainguard.sidecar import config, metrics
from trainguard.sidecar.predictions import PredictionTracker, StreamSummary
from trainguard.sidecar.views import ViewBuilder
from trainguard.stop_flag import request_stop
from trainguard.store import errors, run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.reader import Run
from trainguard.store.run_format import Segment
from trainguard.store.runs import list_ranks, open_run
from trainguard.store.source import RankSource, Source, load_json_doc

log = logging.getLogger(__name__)

MAX_FINDINGS_PER_RULE = 100
"""Findings kept per rule (the first ones; later ones are counted in metrics only). Bounds memory
and the checkpoint of a rule that fires on every step of a long run."""


DATA_GAP = "data_gap"
"""The evaluator's own check, shown beside the rules: steps the store never got (the hook's END.json
`lost_steps`, a gap before a segment) or that could not be read (a damaged segment). A warning finding,
so no verdict says "no issues" over data that was never looked at."""

_SEGMENT_NAME = re.compile(r"seg-[0-9-]+\.npz")

HEARTBEAT_INTERVAL_SECONDS = 1.0
"""While a followed rank brings nothing new, time-watching rules (stalled_training) get a heartbeat
view this often; their thresholds are minutes, so a second is plenty."""


@dataclass(frozen=True)
class Verdict:
    """A rule's state transition. `action` is STOP/NOTIFY only on a transition to IssuesFound."""

    rule: str
    action: Action
    state: RuleState
    step: int
    rank: int
    severity: Severity
    message: str
    finding: Finding | None
    time: float

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "action": self.action.value,
            "state": self.state.value,
            "step": self.step,
            "rank": self.rank,
            "severity": self.severity.value,
            "message": self.message,
            "tensor": self.finding.tensor if self.finding else None,
            "time": self.time,
        }


@dataclass(frozen=True)
class RuleStatus:
    """A rule's current state and the transition that set it (step, rank, message, time)."""

    state: RuleState
    action: Action
    severity: Severity
    step: int | None = None
    rank: int | None = None
    message: str = ""
    time: float | None = None


@dataclass
class _RankTrack:
    """What the evaluator holds for one followed rank: reader, view builder, its own rule instances."""

    rank: int
    source: Source
    builder: ViewBuilder
    rules: list[Rule]
    predictions: PredictionTracker = field(default_factory=PredictionTracker)
    skip_through: int | None = None
    """For sources that cannot resume by key: steps up to this one were evaluated before a restart."""
    last_step: int | None = None
    last_stats_view: StepView | None = None
    attempt: str | None = None
    """The writer attempt of the last segment evaluated (a rank restarted on the same URI has several)."""
    ended: bool = False
    end_seen: bool = False
    last_heartbeat: float = float("-inf")
    problems_seen: int = 0
    lost_seen: int = 0
    end_damaged: bool = False
    patterns_checked: bool = False
    """Whether the rules' `tensors` patterns were checked against this rank's catalogue (at its first saved step)."""
    """Steps of the current writer attempt reported lost so far (the newest segment's `lost.total`)."""


@dataclass
class _RuleCounters:
    evaluations: int = 0
    errors: int = 0
    findings: dict[Severity, int] = field(default_factory=dict)
    last_trigger_time: float | None = None
    kept_findings: list[Finding] = field(default_factory=list)


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
        registry: prometheus_client.CollectorRegistry | None = None,
        checkpoint: bool = True,
        clock: Callable[[], float] = time.time,
        stop_file: str | None = None,
        not_before: float | None = None,
        strict: bool = False,
    ) -> None:
        """`not_before`: when this evaluator's pod started (Unix time; the sidecar of a DebugJob pod). Writer
        attempts started before it are an earlier pod's of a retried Job: their segments are left to that
        pod's evaluator, their END does not end a rank, and a checkpoint's rules from them start over.
        """
        """`strict`: a rule whose `tensors` patterns match no tensor of a rank is an Error (else a warning).
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
        self._run: Run = open_run(run_uri, store=self.store, wait=True)
        self._world_size = self._run.info.world_size if self._run.info else None
        self._tracks: dict[int, _RankTrack] = {}
        self._counters = [_RuleCounters() for _ in self.compiled]
        self._status = self._fresh_statuses()
        self._rank_status: dict[int, dict[str, RuleStatus]] = {}
        self._stop_emitted: set[str] = set()
        self._unsavable: set[str] = set()
        self.stop_requested = False
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
        self._gap_findings: list[Finding] = []
        self.strict = strict
        self.warnings: list[str] = []
        """Configuration warnings met while evaluating (a rule's `tensors` that match nothing), once each."""
        self._checks_nothing: dict[str, str] = {}
        self.corrupt_segments_total = 0
        self.lag_seconds: float | None = None
        self.last_evaluation_time: float | None = None
        self.durations = metrics.Histogram(metrics.DURATION_BUCKETS_SECONDS)
        self._saved = ckpt.load(self.store, ckpt.key_for(self.followed)) if checkpoint else None
        if self._saved is not None:
            self._restore_statuses(self._saved)
        self._collector: metrics.EvaluatorCollector | None = None
        if registry is not None:
            self._collector = metrics.EvaluatorCollector(self)
            registry.register(self._collector)
        self._registry = registry

    # --- public view of the state ----------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        """Every finding kept so far (the first MAX_FINDINGS_PER_RULE per rule), by step and rank."""
        with self._lock:
            out = [f for c in self._counters for f in c.kept_findings] + self._gap_findings
        return sorted(out, key=lambda f: (f.step, f.rank))

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
        """The writer attempt of the newest segment read from `rank` (None before its first one)."""
        track = self._tracks.get(rank)
        return None if track is None else track.attempt

    def ends(self) -> dict[int, run_format.EndInfo]:
        """The END.json of each followed rank that has one."""
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
    def rule_status(self) -> dict[str, RuleStatus]:
        """Each rule's state over every followed rank (the first transition wins)."""
        with self._lock:
            return dict(self._status)

    def rank_status(self, rank: int) -> dict[str, RuleStatus]:
        """Each rule's state on one followed rank (all InProgress before the rank is followed)."""
        with self._lock:
            return dict(self._rank_status.get(rank) or self._fresh_statuses())

    def rank_progress(self, rank: int) -> tuple[int | None, bool]:
        """One followed rank's last evaluated step and whether it ended (END seen, everything evaluated)."""
        track = self._tracks.get(rank)
        if track is not None:
            return track.last_step, track.ended
        saved = self._saved.ranks.get(str(rank)) if self._saved else None  # restarted, not polled yet
        return (None, False) if saved is None else (saved.last_step, saved.ended)

    def _fresh_statuses(self) -> dict[str, RuleStatus]:
        return {
            c.name: RuleStatus(state=RuleState.IN_PROGRESS, action=c.spec.action, severity=c.severity)
            for c in self.compiled
        }

    @property
    def last_step(self) -> int | None:
        steps = [t.last_step for t in list(self._tracks.values()) if t.last_step is not None]
        return max(steps) if steps else None

    @property
    def run_format(self) -> str:
        """The format of the followed run: trainguard, smdebug or tensorboard."""
        return self._run.format

    @property
    def ranks(self) -> list[int]:
        return sorted(self._tracks)

    @property
    def read_bytes_total(self) -> int:
        return sum(int(getattr(t.source, "bytes_read", 0)) for t in list(self._tracks.values()))

    def counters(self) -> list[tuple[str, _RuleCounters]]:
        """Per-rule counters (for metrics); read under the evaluator's lock."""
        return list(zip(self.rule_names, self._counters))

    def last_views(self) -> list[StepView]:
        """The newest view with tensor statistics of each rank, lowest rank first."""
        return [t.last_stats_view for _, t in sorted(self._tracks.items()) if t.last_stats_view is not None]

    def prediction_summary(self) -> dict[str, StreamSummary]:
        """AUC figures of the primary prediction stream by mode, from the lowest rank that has any."""
        for _, t in sorted(self._tracks.items()):
            found = t.predictions.summary()
            if found:
                return found
        return {}

    def last_loss(self) -> dict[Mode, float]:
        """The newest loss values by mode, from the lowest followed rank that has them."""
        for _, t in sorted(self._tracks.items()):
            if t.builder.last_loss:
                return dict(t.builder.last_loss)
        return {}

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
        out: list[Verdict] = []
        self._discover()
        for track in [t for _, t in sorted(self._tracks.items()) if not t.ended]:
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
                out.extend(self._emit(self._trailing_gap(track), on_verdict))
                track.ended = True
                self._finish_rank(track)
                self._save()
        if self._all_ended():
            out.extend(self._emit(self.finish(), on_verdict))
        return out

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

        A store that fails is retried at the poll interval (logged, and shown by `last_error`).
        """
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
        out: list[Verdict] = []
        with self._lock:
            if self.ended and all(s.state != RuleState.IN_PROGRESS for s in self._status.values()):
                return out
            self.ended = True
            for track in self._tracks.values():
                self._finish_rank(track)
            step = self.last_step if self.last_step is not None else 0
            for c in self.compiled:
                if self._status[c.name].state == RuleState.IN_PROGRESS:
                    out.append(
                        self._transition(
                            c,
                            RuleState.NO_ISSUES_FOUND,
                            step=step,
                            rank=self.followed[0] if self.followed else 0,
                            severity=Severity.INFO,
                            message=self._checks_nothing.get(c.name)
                            or f"{c.name}: no issues found up to step {step}",
                            finding=None,
                            action=Action.NONE,
                        )
                    )
            self._save()
        return out

    def _finish_rank(self, track: _RankTrack) -> None:
        """One rank ended: its rules still InProgress there become NoIssuesFound on that rank."""
        with self._lock:
            statuses = self._rank_status.setdefault(track.rank, self._fresh_statuses())
            step = track.last_step if track.last_step is not None else 0
            for name, status in statuses.items():
                if status.state == RuleState.IN_PROGRESS:
                    statuses[name] = dataclasses.replace(
                        status,
                        state=RuleState.NO_ISSUES_FOUND,
                        step=step,
                        rank=track.rank,
                        severity=Severity.INFO,
                        message=f"{name}: no issues found up to step {step}",
                        time=self.clock(),
                    )

    def close(self) -> None:
        """Detach the metrics collector from the registry it was given."""
        if self._registry is not None and self._collector is not None:
            self._registry.unregister(self._collector)
            self._collector = None

    # --- internals ------------------------------------------------------------------------------
    def _discover(self) -> None:
        """Open a track for each rank to follow that is not followed yet."""
        if self.followed is not None:
            wanted = list(self.followed)
        elif self._run.format == "trainguard":
            wanted = self._trainguard_ranks()
        else:
            wanted = list(self._run.ranks)
        for r in wanted:
            if r not in self._tracks:
                self._tracks[r] = self._open_track(r)

    def _trainguard_ranks(self) -> list[int]:
        if self._world_size is not None and len(self._tracks) >= self._world_size:
            return list(self._tracks)
        if self._world_size is None and self.store.exists(run_format.RUN_INFO_KEY):
            doc = load_json_doc(self.store, run_format.RUN_INFO_KEY, run_format.RunInfo)
            assert isinstance(doc, run_format.RunInfo)
            self._world_size = doc.world_size
        return list_ranks(self.store)

    def _open_track(self, rank: int) -> _RankTrack:
        saved = self._saved.ranks.get(str(rank)) if self._saved else None
        source: Source
        skip: int | None = None
        if self._run.format == "trainguard":
            source = RankSource(
                self.store, rank, start_after=saved.last_key if saved else None, not_before=self._not_before
            )
            # a format-1 run's attempt "" is whichever is current, as for its segments and END; None: no
            # segment was read before the checkpoint
            if (
                saved is not None
                and self._not_before is not None
                and source.attempt != ""
                and (source.attempt or "") < self._not_before
            ):
                log.info(
                    "trainguard: rank %d: the checkpoint is of an earlier pod's trainer; its rules start over",
                    rank,
                )
                self._reopen_rank(rank)
                saved = None
        else:
            source = self._run.source(rank)
            skip = saved.last_step if saved else None
        track = _RankTrack(
            rank=rank, source=source, builder=ViewBuilder(rank), rules=[c.make() for c in self.compiled]
        )
        track.skip_through = skip
        track.attempt = getattr(source, "attempt", None)
        self._rank_status.setdefault(rank, self._fresh_statuses())  # restored ones are there already
        if saved is not None:
            # `ended` is not restored: the first poll finds END again, unless the rank was restarted since
            track.last_step = saved.last_step
            for c, rule in zip(self.compiled, track.rules):
                state = saved.rules.get(c.name)
                if state is None:
                    continue
                try:
                    rule.load_state_dict(state)
                except Exception as err:  # noqa: BLE001 - a rule's own restore code may fail in any way
                    log.warning(
                        "trainguard: cannot restore the state of rule %s on rank %s (%s); it starts fresh",
                        c.name,
                        rank,
                        err,
                    )
        return track

    def _restore_statuses(self, saved: ckpt.EvaluatorState) -> None:
        index = {c.name: i for i, c in enumerate(self.compiled)}
        for r, position in saved.ranks.items():
            # A checkpoint written before per-rank statuses were kept followed one rank: its statuses are that rank's.
            statuses = self._fresh_statuses()
            for name, doc in (position.statuses or saved.statuses).items():
                if name in statuses:
                    statuses[name] = self._status_from_doc(name, doc)
            self._rank_status[int(r)] = statuses
        for name, doc in saved.statuses.items():
            if name == DATA_GAP:
                self._status[name] = RuleStatus(
                    state=RuleState(doc.state), action=Action.NONE, severity=Severity(doc.severity or "warning"),
                    step=doc.step, rank=doc.rank, message=doc.message, time=doc.time,
                )  # fmt: skip
                continue
            if name not in index:
                continue  # a rule no longer configured
            self._status[name] = self._status_from_doc(name, doc)
            if doc.stop_emitted:
                self._stop_emitted.add(name)
            if doc.state == RuleState.ISSUES_FOUND.value:
                self._counters[index[name]].last_trigger_time = doc.time
        for d in saved.findings:
            i = index.get(str(d.get("rule")))
            if i is not None:
                self._counters[i].kept_findings.append(_finding_from_dict(d))
            elif d.get("rule") == DATA_GAP:
                self._gap_findings.append(_finding_from_dict(d))
        self.stop_requested = saved.stop_requested

    def _status_from_doc(self, name: str, doc: ckpt.StatusDoc) -> RuleStatus:
        c = next(c for c in self.compiled if c.name == name)
        return RuleStatus(
            state=RuleState(doc.state), action=c.spec.action, severity=Severity(doc.severity or "info"),
            step=doc.step, rank=doc.rank, message=doc.message, time=doc.time,
        )  # fmt: skip

    def _new_attempt(self, track: _RankTrack, attempt: str) -> None:
        """The rank was restarted on the same URI (a retried pod, a resumed run): its rules start over."""
        log.warning(
            "trainguard: rank %d was restarted (writer attempt %s after %s); its rules start over",
            track.rank, attempt, track.attempt,
        )  # fmt: skip
        track.builder = ViewBuilder(track.rank)
        track.rules = [c.make() for c in self.compiled]
        track.predictions = PredictionTracker()
        track.last_stats_view = None
        track.last_step = None
        track.lost_seen = 0
        self._reopen_rank(track.rank)

    def _reopen_rank(self, rank: int) -> None:
        """A new attempt of `rank` is evaluated: its statuses go back to InProgress, except IssuesFound, which
        is final (the DebugJob keeps what an earlier attempt found, and its action is not taken twice)."""
        with self._lock:
            old = self._rank_status.get(rank, {})
            self._rank_status[rank] = {
                name: old[name] if name in old and old[name].state == RuleState.ISSUES_FOUND else fresh
                for name, fresh in self._fresh_statuses().items()
            }

    def _evaluate_segment(self, track: _RankTrack, seg: Segment) -> list[Verdict]:
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
            views = track.builder.views(seg, track.source.catalogue())
            if track.skip_through is not None:
                views = [v for v in views if v.step > track.skip_through]
            self.views_total += len(views)
            self.stats_views_total += sum(1 for v in views if v.names)
            if not track.patterns_checked and any(v.names for v in views):
                track.patterns_checked = True
                verdicts += self._check_patterns(track, next(v for v in views if v.names))
            for view in views:
                for i, rule in enumerate(track.rules):
                    try:
                        found = rule.update(view)
                    except Exception as err:  # noqa: BLE001 - one rule's failure must not stop the others
                        v = self._rule_error(i, track.rank, view, err)
                        if v is not None:
                            verdicts.append(v)
                        continue
                    if found:
                        verdicts.extend(self._on_findings(i, track.rank, found))
                if view.names:
                    track.last_stats_view = view
                if view.predictions or view.eval_predictions:
                    track.predictions.update(view)
            for c in self._counters:
                c.evaluations += len(views)
            if views:
                track.last_step = views[-1].step
            now = self.clock()
            if seg.wall_time.size:
                self.lag_seconds = now - float(seg.wall_time[-1])
            self.last_evaluation_time = now
            self.segments_total += 1
            self.durations.observe(time.perf_counter() - started)
        return verdicts

    def _check_patterns(self, track: _RankTrack, view: StepView) -> list[Verdict]:
        """At a rank's first saved step: a rule whose `tensors` patterns match none of the rank's tensors and
        scalars checks nothing there. Say so once (a warning), or with `strict` make the rule an Error."""
        names = {t.name for t in track.source.catalogue().values()} | set(view.names)
        out: list[Verdict] = []
        for c, rule in zip(self.compiled, track.rules):
            pattern = rule.pattern
            if pattern is None or any(pattern.search(n) for n in names) or c.name in self._checks_nothing:
                continue
            shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
            asked = c.spec.tensors or rule.params.tensor_regex or [pattern.pattern]
            message = (
                f"{c.name}: its tensors {list(asked)} match none of the {len(names)} tensors and scalars of "
                f"rank {track.rank} ({shown}); it checks nothing. Fix `tensors` in the rules file"
            )
            self._checks_nothing[c.name] = message
            self.warnings.append(message)
            log.warning("trainguard: %s", message)
            if self.strict:
                v = self._rule_error(self.compiled.index(c), track.rank, view, _ChecksNothing(message))
                out += [v] if v is not None else []
        return out

    def _heartbeat(self, track: _RankTrack) -> list[Verdict]:
        """Send a heartbeat view to the rules that want one, at most every HEARTBEAT_INTERVAL_SECONDS."""
        now = self.clock()
        if track.last_step is None or now - track.last_heartbeat < HEARTBEAT_INTERVAL_SECONDS:
            return []
        track.last_heartbeat = now
        view = StepView(step=track.last_step, rank=track.rank, wall_time=now)
        verdicts: list[Verdict] = []
        with self._lock:
            for i, rule in enumerate(track.rules):
                if not rule.wants_heartbeat:
                    continue
                try:
                    found = rule.update(view)
                except Exception as err:  # noqa: BLE001 - one rule's failure must not stop the others
                    v = self._rule_error(i, track.rank, view, err)
                    verdicts.extend([v] if v is not None else [])
                    continue
                verdicts.extend(self._on_findings(i, track.rank, found))
        return verdicts

    def _on_findings(self, i: int, rank: int, found: list[Finding]) -> list[Verdict]:
        """Count and keep findings of rule `i` on the followed rank `rank`; return the rule's transition, if any."""
        c = self.compiled[i]
        counters = self._counters[i]
        out: list[Verdict] = []
        for f in found:
            counters.findings[f.severity] = counters.findings.get(f.severity, 0) + 1
            if len(counters.kept_findings) < MAX_FINDINGS_PER_RULE:
                counters.kept_findings.append(f)
            if f.severity.rank < Severity.WARNING.rank:
                continue
            counters.last_trigger_time = self.clock()
            message = f.message + (f" {f.hint}" if f.hint and f.hint not in f.message else "")
            on_rank = self._rank_status.setdefault(rank, self._fresh_statuses())
            if on_rank[c.name].state != RuleState.ISSUES_FOUND:
                on_rank[c.name] = RuleStatus(
                    state=RuleState.ISSUES_FOUND, action=c.spec.action, severity=f.severity, step=f.step,
                    rank=rank, message=message, time=self.clock(),
                )  # fmt: skip
            if self._status[c.name].state != RuleState.ISSUES_FOUND:
                out.append(
                    self._transition(
                        c,
                        RuleState.ISSUES_FOUND,
                        step=f.step,
                        rank=f.rank,
                        severity=f.severity,
                        message=message,
                        finding=f,
                        action=c.spec.action,
                    )
                )
        return out

    def _rule_error(self, i: int, rank: int, view: StepView, err: Exception) -> Verdict | None:
        c = self.compiled[i]
        self._counters[i].errors += 1
        message = (
            str(err)
            if isinstance(err, _ChecksNothing)
            else f"{c.name} failed at step {view.step} on rank {view.rank}: {type(err).__name__}: {err}"
        )
        on_rank = self._rank_status.setdefault(rank, self._fresh_statuses())
        if on_rank[c.name].state == RuleState.ERROR:
            on_rank[c.name] = dataclasses.replace(on_rank[c.name], message=message)
        elif on_rank[c.name].state != RuleState.ISSUES_FOUND:
            on_rank[c.name] = RuleStatus(
                state=RuleState.ERROR, action=c.spec.action, severity=on_rank[c.name].severity, step=view.step,
                rank=rank, message=message, time=self.clock(),
            )  # fmt: skip
        status = self._status[c.name]
        if status.state == RuleState.ISSUES_FOUND:
            return None
        if status.state == RuleState.ERROR:
            self._status[c.name] = dataclasses.replace(status, message=message)
            return None
        log.error("trainguard: %s; the other rules go on", message)
        return self._transition(
            c, RuleState.ERROR, step=view.step, rank=view.rank, severity=status.severity, message=message,
            finding=None, action=Action.NONE,
        )  # fmt: skip

    def _transition(
        self, c: config.CompiledRule, state: RuleState, *, step: int, rank: int, severity: Severity, message: str,
        finding: Finding | None, action: Action,
    ) -> Verdict:  # fmt: skip
        now = self.clock()
        self._status[c.name] = RuleStatus(
            state=state,
            action=c.spec.action,
            severity=severity,
            step=step,
            rank=rank,
            message=message,
            time=now,
        )
        return Verdict(
            rule=c.name, action=action, state=state, step=step, rank=rank, severity=severity, message=message,
            finding=finding, time=now,
        )  # fmt: skip

    def _act(self, verdict: Verdict) -> None:
        """Create the stop file for a STOP verdict (once per rule)."""
        if verdict.action != Action.STOP or verdict.rule in self._stop_emitted:
            return
        self._stop_emitted.add(verdict.rule)
        self.stop_requested = True
        if self.stop_file:
            request_stop(self.stop_file, rule=verdict.rule, message=verdict.message)
        log.warning("trainguard: rule %s asks to stop the run: %s", verdict.rule, verdict.message)

    def _note_problems(self, track: _RankTrack) -> list[Verdict]:
        """Each object the rank's reader skipped (damaged, gone) is a data gap: its steps went unchecked."""
        problems = track.source.problems
        new = problems[track.problems_seen :]
        self.corrupt_segments_total += len(new)
        track.problems_seen = len(problems)
        out: list[Verdict] = []
        with self._lock:
            for message in new:
                found = _SEGMENT_NAME.search(message)
                name = run_format.parse_segment_name(found.group(0)) if found else None
                step = name.first_step if name else (track.last_step or 0)
                span = f"steps {name.first_step}-{name.last_step}" if name else "its steps"
                out += self._data_gap(
                    track.rank, step, f"{message} ({span} of rank {track.rank} went unchecked)"
                )
        return out

    def _ended(
        self, track: _RankTrack, out: list[Verdict], on_verdict: Callable[[Verdict], None] | None
    ) -> bool:
        """Whether the rank has an END; a damaged one ends it too (the writer got that far), as a data gap."""
        try:
            return track.source.ended() is not None
        except errors.FormatError as err:
            if not track.end_damaged:
                track.end_damaged = True
                step = track.last_step or 0
                with self._lock:
                    gap = self._data_gap(track.rank, step, f"{err}; how rank {track.rank} ended is unknown")
                out.extend(self._emit(gap, on_verdict))
            return True

    def _trailing_gap(self, track: _RankTrack) -> list[Verdict]:
        """Steps END.json counts as lost beyond the last gap a segment announced: lost at the end of the run."""
        try:
            end = track.source.ended()
        except errors.FormatError:
            return []  # reported as damaged by `_ended`
        missing = 0 if end is None else end.lost_steps - track.lost_seen
        if missing <= 0:
            return []
        self.lost_steps_total += missing
        after = track.last_step if track.last_step is not None else 0
        with self._lock:
            return self._data_gap(
                track.rank, after,
                f"{missing} steps of rank {track.rank} after step {after} never reached the store (END.json "
                "lost_steps: the store failed until the rank closed); the rules did not see them",
            )  # fmt: skip

    def _data_gap(self, rank: int, step: int, message: str) -> list[Verdict]:
        """Record a data-gap finding (a warning); return its verdict when `data_gap` first turns IssuesFound."""
        finding = Finding(
            rule=DATA_GAP, severity=Severity.WARNING, step=step, rank=rank, message=message,
            hint="check the store's health (capacity, errors) and the hook's log; raise max_pending_bytes to ride "
            "out longer outages",
        )  # fmt: skip
        if len(self._gap_findings) < MAX_FINDINGS_PER_RULE:
            self._gap_findings.append(finding)
        log.warning("trainguard: %s", message)
        now = self.clock()
        status = RuleStatus(
            state=RuleState.ISSUES_FOUND, action=Action.NONE, severity=Severity.WARNING, step=step, rank=rank,
            message=message, time=now,
        )  # fmt: skip
        on_rank = self._rank_status.setdefault(rank, self._fresh_statuses())
        if DATA_GAP not in on_rank:
            on_rank[DATA_GAP] = status
        if DATA_GAP in self._status:
            return []
        self._status[DATA_GAP] = status
        return [
            Verdict(
                rule=DATA_GAP, action=Action.NONE, state=RuleState.ISSUES_FOUND, step=step, rank=rank,
                severity=Severity.WARNING, message=message, finding=finding, time=now,
            )
        ]  # fmt: skip

    def _all_ended(self) -> bool:
        if not self._tracks or not all(t.ended for t in self._tracks.values()):
            return False
        if self.followed is None and self._world_size is not None:
            return len(self._tracks) >= self._world_size
        return True

    def _save(self) -> None:
        if not self.checkpoint_enabled:
            return
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
                        statuses={name: _status_doc(s) for name, s in self._rank_status.get(r, {}).items()},
                    )
                    for r, t in self._tracks.items()
                },
                statuses={
                    name: _status_doc(s, stop_emitted=name in self._stop_emitted)
                    for name, s in self._status.items()
                },
                findings=[f.to_dict() for c in self._counters for f in c.kept_findings]
                + [f.to_dict() for f in self._gap_findings],
                stop_requested=self.stop_requested,
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


class _ChecksNothing(Exception):
    """A rule whose `tensors` match nothing, made an Error by `strict` (reported through `_rule_error`)."""


def _status_doc(s: RuleStatus, *, stop_emitted: bool = False) -> ckpt.StatusDoc:
    return ckpt.StatusDoc(
        state=s.state.value, step=s.step, rank=s.rank, message=s.message, time=s.time,
        severity=s.severity.value, stop_emitted=stop_emitted,
    )  # fmt: skip


def _finding_from_dict(d: dict[str, object]) -> Finding:
    return Finding(
        rule=str(d["rule"]),
        severity=Severity(str(d["severity"])),
        step=int(d["step"]),  # type: ignore[call-overload]
        message=str(d.get("message", "")),
        rank=int(d.get("rank", 0)),  # type: ignore[call-overload]
        tensor=None if d.get("tensor") is None else str(d["tensor"]),
        hint=str(d.get("hint", "")),
        value=None if d.get("value") is None else float(d["value"]),  # type: ignore[arg-type]
        threshold=None if d.get("threshold") is None else float(d["threshold"]),  # type: ignore[arg-type]
    )
