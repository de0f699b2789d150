"""`open_run(uri)`: a whole run as numpy arrays, whatever wrote it.

Detects the format at the root (ours: `run.json` or `rank-NNNNN/`; smdebug: `index/` and
`events/`; TensorBoard: `*tfevents*` files) and gives one interface over all of them: ranks,
steps, the tensor catalogue by collection, statistic series, scalars by mode, and `follow()`.
Series are built from segments loaded once and cached; following is left to `follow.py`.
A rank written by several attempts (restarted on the same URI) reads as its attempts one after
the other: series hold every attempt's steps in write order (steps start again where an attempt
restarted from an earlier step), each segment resolved with its own attempt's catalogue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from trainguard.store import errors, format
from trainguard.store.backend import Store, open_store
from trainguard.store.follow import Follower
from trainguard.store.source import RankSource, Source, load_catalogue, load_json_doc


class Series(NamedTuple):
    """Values of one statistic or scalar over steps; unpacks as `steps, values`."""

    steps: np.ndarray
    values: np.ndarray


@dataclass
class _Loaded:
    segments: list[format.Segment]
    catalogues: dict[str, dict[int, format.TensorInfo]]
    """Each writer attempt's newest catalogue, in attempt order."""

    def tensors(self) -> list[format.TensorInfo]:
        """Every tensor and scalar of every attempt; a name in several attempts as the newest knows it."""
        out: dict[tuple[str, str | None], format.TensorInfo] = {}
        for cat in self.catalogues.values():
            out.update({(t.name, t.mode): t for t in cat.values()})
        return list(out.values())

    def only(self, attempt: str) -> _Loaded:
        """One writer attempt's segments and catalogue, taken from what was read (not read again)."""
        return _Loaded(
            segments=[s for s in self.segments if s.attempt == attempt],
            catalogues={attempt: self.catalogues.get(attempt, {})},
        )


class Run:
    """A stored run opened for reading. Create it with `open_run`."""

    def __init__(
        self,
        uri: str,
        store: Store,
        *,
        kind: str,
        ranks: list[int],
        source_factory: Callable[[int], Source],
        info: format.RunInfo | None = None,
    ) -> None:
        self.uri = uri
        self.store = store
        self.format = kind
        self.ranks = ranks
        self.info = info
        self._source_factory = source_factory
        self._loaded: dict[int, _Loaded] = {}
        self.problems: list[str] = []
        self.attempt: str | None = None
        """The one writer attempt this run shows (`at_attempt`), or None for all of them."""
        self._whole: Run | None = None
        """For a view made by `at_attempt`: the run it reads its segments from."""

    def at_attempt(self, attempt: str) -> Run:
        """Return this run restricted to one writer attempt (see `attempts`): its segments and catalogue only.

        The view shares what this run read: segments are not read a second time."""
        view = Run(
            self.uri,
            self.store,
            kind=self.format,
            ranks=self.ranks,
            source_factory=self._source_factory,
            info=self.info,
        )
        view.attempt, view._whole, view.problems = attempt, self, self.problems
        return view

    def source(self, rank: int = 0) -> Source:
        """Return a fresh incremental reader of one rank (for the evaluator and `follow`)."""
        self._check_rank(rank)
        return self._source_factory(rank)

    def _check_rank(self, rank: int) -> None:
        if rank not in self.ranks:
            raise errors.NotFound(f"run {self.uri} has no rank {rank}; ranks present: {self.ranks}")

    def _load(self, rank: int) -> _Loaded:
        if rank not in self._loaded and self._whole is not None and self.attempt is not None:
            self._loaded[rank] = self._whole._load(rank).only(self.attempt)
        if rank not in self._loaded:
            src = self.source(rank)
            segs: list[format.Segment] = []
            # poll() hands over what it read before a failure and raises at that key on the next call, so
            # read until a call brings nothing new: the failure surfaces instead of a silently short run
            while new := src.poll():
                segs += new
            self.problems.extend(src.problems)
            newest = {s.attempt: s.catalogue_version for s in segs}  # versions only grow within an attempt
            current = getattr(src, "attempt", None) or ""  # the attempt whose catalogue the source holds
            catalogues = {
                a: dict(src.catalogue()) if a == current else load_catalogue(self.store, rank, a, version)
                for a, version in newest.items()
            } or {"": dict(src.catalogue())}
            self._loaded[rank] = _Loaded(segments=segs, catalogues=catalogues)
        return self._loaded[rank]

    def attempts(self, rank: int = 0) -> list[str]:
        """Return the writer attempts of a rank in write order (one unless it was restarted on this URI)."""
        return list(self._load(rank).catalogues)

    def segments(self, rank: int = 0) -> list[format.Segment]:
        return self._load(rank).segments

    def tensors(self, collection: str | None = None, *, rank: int = 0) -> list[format.TensorInfo]:
        """Return the catalogue (tensors and scalars), optionally only one collection."""
        return [t for t in self._load(rank).tensors() if collection is None or t.collection == collection]

    def collections(self, *, rank: int = 0) -> dict[str, list[str]]:
        """Return tensor names grouped by collection."""
        out: dict[str, list[str]] = {}
        for t in self.tensors(rank=rank):
            out.setdefault(t.collection, []).append(t.name)
        return out

    def steps(self, *, rank: int = 0) -> np.ndarray:
        """Return every step with tensor statistics, in order."""
        segs = self._load(rank).segments
        return np.concatenate([s.steps for s in segs]) if segs else np.zeros(0, np.int64)

    def last_step(self, *, rank: int = 0) -> int | None:
        segs = self._load(rank).segments
        return max((s.last_step for s in segs), default=None)

    def _ids(self, rank: int, match: Callable[[format.TensorInfo], bool]) -> dict[str, int]:
        """Return, for each attempt of `rank` whose catalogue has an entry that `match`es, its id there."""
        return {
            attempt: t.id
            for attempt, cat in self._load(rank).catalogues.items()
            for t in cat.values()
            if match(t)
        }

    def _find(self, name: str, rank: int, *, scalar: bool, mode: str | None = None) -> dict[str, int]:
        """Return the id of a tensor or scalar in each attempt that has it; raise NotFound if none does."""
        ids = self._ids(rank, lambda t: t.name == name and (t.mode == mode if scalar else not t.is_scalar))
        if ids:
            return ids
        names = sorted({t.name for t in self._load(rank).tensors() if t.is_scalar == scalar})
        what = f"scalar {name!r} (mode {mode})" if scalar else f"tensor {name!r}"
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        raise errors.NotFound(f"run {self.uri} rank {rank} has no {what}; available: {shown or 'none'}")

    def series(self, name: str, stat: str, *, rank: int = 0) -> Series:
        """Return one statistic column of one tensor over all saved steps (absent steps are skipped)."""
        if stat not in format.COLUMN:
            raise KeyError(f"unknown statistic {stat!r}; columns are: {', '.join(format.STAT_COLUMNS)}")
        ids = self._find(name, rank, scalar=False)
        col = format.COLUMN[stat]
        steps: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for seg in self._load(rank).segments:
            where = np.nonzero(seg.tensor_ids == ids.get(seg.attempt, -1))[0]
            if where.size:
                steps.append(seg.steps)
                values.append(seg.stats[:, where[0], col].astype(np.float64))
        if not steps:
            return Series(np.zeros(0, np.int64), np.zeros(0))
        return Series(np.concatenate(steps), np.concatenate(values))

    def scalars(self, name: str, *, mode: str = "train", rank: int = 0) -> Series:
        """Return a scalar's recorded values in one mode."""
        ids = self._find(name, rank, scalar=True, mode=mode)
        steps: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for seg in self._load(rank).segments:
            mask = seg.scalar_ids == ids.get(seg.attempt, -1)
            if mask.any():
                steps.append(seg.scalar_steps[mask])
                values.append(seg.scalar_values[mask])
        if not steps:
            return Series(np.zeros(0, np.int64), np.zeros(0))
        return Series(np.concatenate(steps), np.concatenate(values))

    def predictions(self, name: str = "pred/predictions", *, mode: str = "train", rank: int = 0) -> Series:
        """Return prediction bucket counts: steps int64[n] and counts float64[n, 3, B] (delta per record)."""
        loaded = self._load(rank)
        ids = self._ids(rank, lambda t: t.is_predictions and t.name == name and t.mode == mode)
        if not ids:
            found = sorted(f"{t.name} ({t.mode})" for t in loaded.tensors() if t.is_predictions)
            raise errors.NotFound(
                f"run {self.uri} rank {rank} has no predictions {name!r} in mode {mode}; found: {found or 'none'}"
            )
        steps, values = [], []
        for seg in loaded.segments:
            tid = ids.get(seg.attempt)
            arr = None if tid is None else seg.extra.get(f"pred.{tid}")
            if arr is not None:
                steps.append(seg.extra[f"pred.{tid}.steps"])
                values.append(arr.astype(np.float64))
        if not steps:
            return Series(np.zeros(0, np.int64), np.zeros((0, 3, 0)))
        return Series(np.concatenate(steps), np.concatenate(values))

    def scalar_names(self, *, mode: str | None = None, rank: int = 0) -> list[str]:
        return sorted(
            {t.name for t in self.tensors(rank=rank) if t.is_scalar and (mode is None or t.mode == mode)}
        )

    def ended(self, *, rank: int = 0) -> format.EndInfo | None:
        return self.source(rank).ended()

    def follow(
        self,
        *,
        rank: int = 0,
        poll_interval_seconds: float = 0.2,
        idle_timeout_seconds: float = 600.0,
    ) -> Follower:
        """Iterate over new segments of one rank as they land; see `follow.Follower`."""
        return Follower(
            self.source(rank),
            poll_interval_seconds=poll_interval_seconds,
            idle_timeout_seconds=idle_timeout_seconds,
        )


def list_ranks(store: Store) -> list[int]:
    """Return the ranks that have a `rank-NNNNN/` folder, listing only names that start `rank-`."""
    return sorted(
        r for r in map(format.parse_rank_prefix, store.list("rank-", delimiter="/")) if r is not None
    )


def _run_info(store: Store) -> format.RunInfo | None:
    """Return `run.json`, or None when there is none."""
    try:
        doc = load_json_doc(store, format.RUN_INFO_KEY, format.RunInfo)
    except errors.NotFound:
        return None
    assert isinstance(doc, format.RunInfo)
    return doc


PROBE_KEYS = 1000
"""Keys a format probe looks at per listing (one S3 request): a root that also holds many unrelated objects
is told apart from a run in a few requests, whatever it holds."""
PROBE_FOLDERS = 16
"""Folders below the root that the TensorBoard probe looks into (`logs/train/`, `logs/eval/`, a run's name)."""


def _has_event_files(store: Store) -> bool:
    """Whether TensorBoard event files lie at the root or one folder below it (among the first `PROBE_KEYS`)."""
    from trainguard.store import tensorboard

    top = store.list("", delimiter="/", limit=PROBE_KEYS)
    if any(tensorboard.is_event_file(k) for k in top if not k.endswith("/")):
        return True
    folders = [k for k in top if k.endswith("/")][:PROBE_FOLDERS]
    return any(any(map(tensorboard.is_event_file, store.list(f, limit=PROBE_KEYS))) for f in folders)


def open_run(uri: str, *, store: Store | None = None, wait: bool = False) -> Run:
    """Open a run at `uri` in our format, an smdebug output directory, or a TensorBoard log directory.

    With `wait=True` a root that holds nothing yet is opened as an empty TrainGuard run (rank 0),
    so a follower can start before the writer; otherwise an empty root raises `NotFound`. Only the
    names each format uses are listed (`rank-`, `index/`, ...), so a root that also holds many
    unrelated objects opens in a few requests.
    """
    store = store or open_store(uri)
    ranks = list_ranks(store)
    info = _run_info(store)
    if info is not None or ranks:
        return Run(
            uri,
            store,
            kind="trainguard",
            ranks=ranks or [0],
            info=info,
            source_factory=lambda r: RankSource(store, r),
        )
    if store.list("index/", delimiter="/", limit=1) and any(
        store.list(p, delimiter="/", limit=1) for p in ("events/", "collections/")
    ):
        from trainguard.store import smdebug

        return smdebug.open_smdebug(uri, store)
    if _has_event_files(store):
        from trainguard.store import tensorboard

        return tensorboard.open_tensorboard(uri, store)
    if wait:
        return Run(uri, store, kind="trainguard", ranks=[0], source_factory=lambda r: RankSource(store, r))
    raise errors.NotFound(
        f"no run at {uri}: expected run.json or rank-NNNNN/ (TrainGuard), index/ + events/ (smdebug) "
        f"or *tfevents* files at the top or one folder down (TensorBoard); check the URI"
    )
