"""Following ranks: which ranks an evaluator reads, and what it holds for each one.

`Ranks` finds the ranks to follow (the given ones, or every rank the run has: for our format it
lists the root until `world_size` ranks are there) and opens one `RankTrack` per rank: its
source (resuming after the checkpoint's last key, or skipping the steps evaluated before for a
foreign run), its view builder and its own instances of every rule, restored from the checkpoint.
A writer attempt started before `not_before` is an earlier pod's (a retried Job): the checkpoint
of such a trainer does not carry over. Rules are called and verdicts decided elsewhere
(`evaluator`, `verdicts`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from trainguard.api.enums import Mode
from trainguard.rules.base import Rule
from trainguard.rules.step_view import StepView
from trainguard.sidecar import checkpoint as ckpt
from trainguard.sidecar.config import CompiledRule
from trainguard.sidecar.running_auc import PredictionTracker, StreamSummary
from trainguard.sidecar.view_builder import ViewBuilder, save_interval_of
from trainguard.store import run_format
from trainguard.store.backends import Store
from trainguard.store.reader import Run
from trainguard.store.runs import list_ranks
from trainguard.store.source import RankSource, Source, load_json_doc

log = logging.getLogger(__name__)


@dataclass
class RankTrack:
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
    end: run_format.EndInfo | None = None
    """The rank's END.json as read when the rank ended (None before, or when it could not be read)."""
    end_seen: bool = False
    last_heartbeat: float = float("-inf")
    problems_seen: int = 0
    lost_seen: int = 0
    """Steps of the current writer attempt reported lost so far (the newest segment's `lost.total`)."""
    blind_since: int | None = None
    """The blind spell of the rank's hook reported last (its first step not counted), if any."""
    blind_spells: dict[int, int] = field(default_factory=dict)
    """Unchecked steps of each blind spell of the current writer attempt, by its first step, as its newest
    marker gave them; END.json's `unchecked_steps` replaces their sum (`unchecked`) when the rank ends."""
    unchecked: int = 0
    """Steps the rank's hook saw go by without counting them, as far as known."""
    end_damaged: bool = False
    """The rank's END.json could not be read (reported once as a data gap; the rank counts as ended)."""
    patterns_checked: bool = False
    """Whether the rules' `tensors` were checked against this rank's catalogue (at its first saved step)."""

    def restart(self, compiled: Sequence[CompiledRule]) -> None:
        """The rank was restarted on the same URI (a new writer attempt): views and rules start over."""
        self.builder = ViewBuilder(self.rank, save_interval=self.builder.save_interval)
        self.rules = [c.make() for c in compiled]
        self.predictions = PredictionTracker()
        self.last_stats_view = None
        self.last_step = None
        self.lost_seen = 0
        self.blind_since = None
        self.blind_spells = {}
        self.unchecked = 0


class Ranks:
    """The followed ranks' tracks, by rank, and the aggregates read from them (metrics, progress)."""

    def __init__(
        self,
        store: Store,
        run: Run,
        *,
        followed: tuple[int, ...] | None,
        compiled: Sequence[CompiledRule],
        not_before: str | None,
    ) -> None:
        self.store = store
        self.run = run
        self.followed = followed
        self.compiled = list(compiled)
        self.not_before = not_before
        self.tracks: dict[int, RankTrack] = {}
        self._world_size = run.info.world_size if run.info else None
        self._save_interval = save_interval_of(run.info)
        """The hook's save interval from run.json (the views between saved steps are marked by it); a run
        followed from its start may have none yet: read with `world_size` when run.json appears."""

    def wanted(self) -> list[int]:
        """The ranks to follow now: the given ones, or every rank the run has so far."""
        if self.followed is not None:
            return list(self.followed)
        if self.run.format == "trainguard":
            return self._trainguard_ranks()
        return list(self.run.ranks)

    def _trainguard_ranks(self) -> list[int]:
        if self._world_size is not None and len(self.tracks) >= self._world_size:
            return list(self.tracks)
        self._read_info()
        return list_ranks(self.store)  # only the `rank-` names: the root may hold much else

    def _read_info(self) -> None:
        """Read `world_size` and the save interval from run.json once it is there (a run followed from its start
        has none at first); the tracks opened before it get the save interval too."""
        if self._world_size is not None or not self.store.exists(run_format.RUN_INFO_KEY):
            return
        doc = load_json_doc(self.store, run_format.RUN_INFO_KEY, run_format.RunInfo)
        assert isinstance(doc, run_format.RunInfo)
        self._world_size = doc.world_size
        self._save_interval = save_interval_of(doc)
        for track in self.tracks.values():  # a rank that wrote before run.json did
            track.builder.save_interval = self._save_interval

    def follow(self, rank: int, saved: ckpt.RankPosition | None) -> bool:
        """Open `rank`'s track, resuming from its checkpoint position; return whether that checkpoint is of an
        earlier pod's trainer (then it is not used, and the rank's rules start over)."""
        source: Source
        skip: int | None = None
        earlier_pod = False
        if self.run.format == "trainguard":
            self._read_info()
            source = RankSource(
                self.store, rank, start_after=saved.last_key if saved else None, not_before=self.not_before
            )
            # a format-1 run's attempt "" is whichever is current, as for its segments and END; None: no
            # segment was read before the checkpoint
            if (
                saved is not None
                and self.not_before is not None
                and source.attempt != ""
                and (source.attempt or "") < self.not_before
            ):
                log.info(
                    "trainguard: rank %d: the checkpoint is of an earlier pod's trainer; its rules start over",
                    rank,
                )
                earlier_pod = True
                saved = None
        else:
            source = self.run.source(rank)
            skip = saved.last_step if saved else None
        track = RankTrack(
            rank=rank,
            source=source,
            builder=ViewBuilder(rank, save_interval=self._save_interval),
            rules=[c.make() for c in self.compiled],
        )
        track.skip_through = skip
        track.attempt = getattr(source, "attempt", None)
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
        self.tracks[rank] = track
        return earlier_pod

    def expected(self) -> tuple[int, ...]:
        """The ranks this evaluator follows or will: the given ones, else every rank of `world_size` (as far
        as known)."""
        if self.followed is not None:
            return self.followed
        if self._world_size is not None:
            return tuple(range(self._world_size))
        return tuple(sorted(self.tracks))

    def all_ended(self) -> bool:
        """Whether every followed rank ended (and, following every rank, all `world_size` of them are there)."""
        if not self.tracks or not all(t.ended for t in self.tracks.values()):
            return False
        if self.followed is None and self._world_size is not None:
            return len(self.tracks) >= self._world_size
        return True

    def in_order(self) -> list[RankTrack]:
        """The tracks, lowest rank first."""
        return [t for _, t in sorted(self.tracks.items())]

    @property
    def last_step(self) -> int | None:
        steps = [t.last_step for t in list(self.tracks.values()) if t.last_step is not None]
        return max(steps) if steps else None

    @property
    def read_bytes_total(self) -> int:
        return sum(int(getattr(t.source, "bytes_read", 0)) for t in list(self.tracks.values()))

    def last_views(self) -> list[StepView]:
        """The newest view with tensor statistics of each rank, lowest rank first."""
        return [t.last_stats_view for t in self.in_order() if t.last_stats_view is not None]

    def prediction_summary(self) -> dict[str, StreamSummary]:
        """AUC figures of the primary prediction stream by mode, from the lowest rank that has any."""
        for t in self.in_order():
            found = t.predictions.summary()
            if found:
                return found
        return {}

    def last_loss(self) -> dict[Mode, float]:
        """The newest loss values by mode, from the lowest followed rank that has them."""
        for t in self.in_order():
            if t.builder.last_loss:
                return dict(t.builder.last_loss)
        return {}
